import Foundation
import RoadSaveModel
import Wire
import ZeroMQ

/// `roadsave-bench ack-server ENDPOINT`: the baseline of the services benchmark. A bare ROUTER that receives gateway
/// batches, unpacks and validates them with the same code as sensor-ingest (msgpack-c), and acknowledges each at once:
/// no journal, no detection, no notifier. The services' figure divided by this one is what durability and the
/// pipeline cost, measured with the same client in the same run.
enum AckServer {
    static func run(endpoint: String) throws -> Never {
        let context = try ZMQContext()
        let socket = try ZMQSocket(context, .router)
        try socket.setReceiveHighWaterMark(1000)
        try socket.bind(endpoint)
        FileHandle.standardOutput.write(Data("ack-server \(socket.lastEndpoint)\n".utf8))
        while true {
            guard let frames = try socket.receive(), frames.count == 4 else { continue }
            var acknowledgement = Acknowledgement(accepted: 0, rejected: [])
            if let contentType = ContentType(frame: frames[2]),
               let batch = try? RecordBatch.decodeBatch(frames[3], contentType: contentType) {
                acknowledgement = batch.acknowledgement
            }
            _ = try socket.send([frames[0], frames[1], acknowledgement.encode(as: .msgpack)])
        }
    }
}
