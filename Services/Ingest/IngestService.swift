import Foundation
import RoadSaveModel
import ServiceKit
import Wire
import ZeroMQ

/// sensor-ingest: takes batches of records from gateways (ROUTER), validates every record against CONTRACT §2,
/// acknowledges each batch (accepted count, and index, field and reason of every rejected record) and publishes the
/// valid records to detection, each in an envelope with this producer's sequence number. Good records of a batch with
/// bad ones still go through; records of an unknown application are refused.
public final class IngestService: @unchecked Sendable {
    // @unchecked: everything mutable below is touched only on the reactor thread.
    public let configuration: IngestConfiguration
    private let log: Log
    private let context: ZMQContext
    private let reactor: Reactor
    private let producer: String
    private var sequence = SequenceCounter()
    private var publisher: ZMQSocket?
    private var lastPublished = 0.0
    private var statistics = Statistics()

    struct Statistics {
        var batches = 0
        var accepted = 0
        var rejected = 0
        var unreadableBatches = 0
    }

    public init(configuration: IngestConfiguration, producer: String = "ingest-\(getpid())") throws {
        self.configuration = configuration
        self.producer = producer
        log = Log(category: "ingest", minimumLevel: configuration.logLevel)
        context = try ZMQContext()
        reactor = Reactor(name: "ingest", context: context)
    }

    /// Binds the sockets and serves until `stop()`; throws if a socket cannot be set up.
    public func run() throws {
        reactor.start { [self] loop in
            let gateways = try loop.socket(.router)
            try gateways.setReceiveHighWaterMark(100_000)
            try gateways.setSendTimeout(milliseconds: 1000)
            try gateways.bind(configuration.gatewayEndpoint)
            let publisher = try loop.socket(.pub)
            // PUB drops past its high-water mark; sequence numbers let detection see it. Durable replay comes later.
            try publisher.setSendHighWaterMark(1_000_000)
            try publisher.setLinger(milliseconds: 2000)
            try publisher.bind(configuration.publishEndpoint)
            self.publisher = publisher
            loop.onReadable(gateways) { [self] socket in serveBatches(socket) }
            loop.every(configuration.heartbeatInterval / 2) { [self] in heartbeatIfIdle(loop.now) }
            loop.onStop { [self] in
                log.info("stopping", ["batches": String(statistics.batches), "accepted": String(statistics.accepted),
                                      "rejected": String(statistics.rejected)])
            }
            log.info("listening", ["gateways": gateways.lastEndpoint, "records": publisher.lastEndpoint,
                                   "applications": String(configuration.applications.count)])
        }
        if let error = reactor.wait() { throw error }
    }

    /// Graceful stop: the loop stops taking batches, finishes the one in hand and closes the sockets.
    public func stop() {
        reactor.stop()
    }

    // MARK: On the reactor thread

    private func serveBatches(_ socket: ZMQSocket) {
        // Drain what is there now; the reactor calls again when more arrives.
        for _ in 0..<1000 {
            let message: [[UInt8]]
            do {
                guard let received = try socket.receive(dontWait: true) else { return }
                message = received
            } catch {
                log.error("gateway socket failed", ["error": "\(error)"])
                return
            }
            let reply = handle(message)
            do {
                if try !socket.send(reply, dontWait: true) {
                    log.warning("gateway gone before its acknowledgement", ["batch": describeBatchID(reply)])
                }
            } catch {
                log.warning("acknowledgement not sent", ["error": "\(error)"])
            }
        }
    }

    /// One gateway message → the reply frames. A ROUTER message is [identity, (empty delimiter,) batchID,
    /// contentType, body]; the reply keeps the identity and delimiter.
    func handle(_ message: [[UInt8]]) -> [[UInt8]] {
        statistics.batches += 1
        guard let identity = message.first else { return [] }
        var rest = Array(message.dropFirst())
        var prefix = [identity]
        if rest.count == 4, rest[0].isEmpty {
            prefix.append([])
            rest.removeFirst()
        }
        guard rest.count == 3 else {
            statistics.unreadableBatches += 1
            let batchID = rest.first ?? []
            return prefix + [batchID, unreadable("expected the frames [batchID, contentType, body], got \(rest.count) frames", as: .json)]
        }
        let batchID = rest[0]
        let contentTypeText = String(decoding: rest[1].prefix(100), as: UTF8.self)
        guard let contentType = ContentType(frame: rest[1]) else {
            statistics.unreadableBatches += 1
            return prefix + [batchID, unreadable("unsupported content type \"\(contentTypeText)\"; use application/msgpack or application/json", as: .json)]
        }
        let decoded: DecodedBatch
        do {
            decoded = try RecordBatch.decodeBatch(rest[2], contentType: contentType)
        } catch {
            statistics.unreadableBatches += 1
            return prefix + [batchID, unreadable("\(error)", as: contentType)]
        }
        guard decoded.records.count <= configuration.maximumBatch else {
            statistics.unreadableBatches += 1
            return prefix + [batchID, unreadable("\(decoded.records.count) records; at most \(configuration.maximumBatch) a batch", as: contentType)]
        }
        var acknowledgement = Acknowledgement(accepted: 0, rejected: [])
        // Validation is the same for both content types (RecordDecoding), so the rejections read the same.
        for (index, result) in decoded.records {
            switch result {
            case let .failure(error):
                acknowledgement.rejected.append(Rejection(index: index, field: error.field, reason: error.reason))
            case let .success(record):
                guard configuration.applications.contains(record.device.app) else {
                    acknowledgement.rejected.append(Rejection(index: index, field: "app", reason: "unknown application"))
                    continue
                }
                publish(record)
                acknowledgement.accepted += 1
            }
        }
        statistics.accepted += acknowledgement.accepted
        statistics.rejected += acknowledgement.rejected.count
        if !acknowledgement.rejected.isEmpty {
            log.info("batch with rejected records", ["batch": String(decoding: batchID.prefix(64), as: UTF8.self),
                                                     "accepted": String(acknowledgement.accepted),
                                                     "rejected": String(acknowledgement.rejected.count),
                                                     "first": acknowledgement.rejected.first.map { "\($0.index) \($0.field): \($0.reason)" } ?? ""])
        }
        return prefix + [batchID, acknowledgement.encode(as: contentType)]
    }

    private func unreadable(_ reason: String, as contentType: ContentType) -> [UInt8] {
        log.warning("unreadable batch", ["reason": reason])
        return Acknowledgement(accepted: 0, rejected: [Rejection(index: -1, field: "(batch)", reason: reason)])
            .encode(as: contentType)
    }

    private func publish(_ record: SensorRecord) {
        guard let publisher else { return }
        let envelope = Envelope.record(record, shards: configuration.shards, producer: producer, sequence: sequence.next(),
                                       sentAt: Date().timeIntervalSince1970)
        do {
            try publisher.send(envelope.frames())
            lastPublished = MonotonicClock.now()
        } catch {
            log.error("record not published", ["error": "\(error)"])
        }
    }

    private func heartbeatIfIdle(_ now: Double) {
        guard let publisher, now - lastPublished >= configuration.heartbeatInterval else { return }
        // A heartbeat carries the last sequence number sent, so a subscriber can tell what it missed.
        let envelope = Envelope.heartbeat(producer: producer, sequence: sequence.last,
                                          sentAt: Date().timeIntervalSince1970)
        _ = try? publisher.send(envelope.frames(), dontWait: true)
        lastPublished = now
    }

    private func describeBatchID(_ reply: [[UInt8]]) -> String {
        reply.count >= 2 ? String(decoding: reply[reply.count - 2].prefix(64), as: UTF8.self) : "?"
    }
}
