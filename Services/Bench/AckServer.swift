import Foundation
import Wire
import ZeroMQ

/// `roadsave-bench ack-server ENDPOINT [--curve-secret-key FILE]`: the baseline of the services benchmark. A bare
/// ROUTER that receives gateway batches, unpacks and validates them with the same code as sensor-ingest (msgpack-c),
/// and acknowledges each at once: no journal, no detection, no notifier. The services' figure divided by this one is
/// what durability and the pipeline cost, measured with the same client in the same run. With
/// `--curve-secret-key` (a key file of `roadsave keygen`, e.g. `roadsave up --keys`'s ingest.key) the socket is a
/// CurveZMQ server, as sensor-ingest is with keys, so the bare path pays for the encryption too (every client key
/// is accepted: the handshake, once per connection, is not what is measured).
enum AckServer {
    static func run(endpoint: String) throws -> Never {
        let context = try ZMQContext()
        let socket = try ZMQSocket(context, .router)
        try socket.setReceiveHighWaterMark(1000)
        let arguments = CommandLine.arguments
        if let flag = arguments.firstIndex(of: "--curve-secret-key"), flag + 1 < arguments.endIndex {
            guard let secret = try CurveKeyPair.readSecret(arguments[flag + 1]).secretKey else {
                throw CurveKeyError("\(arguments[flag + 1]) holds no secret key")
            }
            try socket.setCurveServer(secretKey: Array(secret.utf8))
        }
        try socket.bind(endpoint)
        FileHandle.standardOutput.write(Data("ack-server \(socket.lastEndpoint)\n".utf8))
        while true {
            guard let frames = try socket.receive() else { continue }
            let message = GatewayFrames(message: frames)
            guard message.isWellFormed else { continue }
            var acknowledgement = Acknowledgement(accepted: 0, rejected: [])
            if let contentType = ContentType(frame: message.contentType),
                let batch = try? RecordBatch.decodeBatch(message.body, contentType: contentType)
            {
                acknowledgement = batch.acknowledgement
                // The gateway's watermark, read as ingest reads it (it stores it with the records).
                if let header = message.header,
                    (try? GatewayBatchHeader.decode(header, contentType: contentType)) == nil
                {
                    acknowledgement = Acknowledgement(accepted: 0, rejected: [])
                }
            }
            _ = try socket.send(Array(message.replyPrefix) + [message.batchID, acknowledgement.encode(as: .msgpack)])
        }
    }
}
