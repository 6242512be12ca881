import Dispatch
import Foundation
import Logging
import RoadSaveModel
import Storage
import Testing
import Wire
import ZeroMQ

@testable import IngestService

/// ingest's bounds: devices per application (kept in the journal across restarts) and the largest gateway frame.
@Suite(.serialized) struct IngestLimitsTests {
    @Test func theJournalKeepsItsDevicesAcrossARestart() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        do {
            let journal = try Journal(
                directory: directory.path, shards: 4, maximumDevicesPerApplication: 2, log: Records.quiet)
            #expect(journal.admit(DeviceID(app: "app-1", user: "a")) != nil)
            #expect(journal.admit(DeviceID(app: "app-1", user: "b")) != nil)
            #expect(journal.admit(DeviceID(app: "app-1", user: "c")) == nil)
            try journal.append([
                .init(id: "1", records: Records.drive(user: "a", count: 2) + Records.drive(user: "b", count: 1))
            ])
            journal.close()
        }
        let journal = try Journal(
            directory: directory.path, shards: 4, maximumDevicesPerApplication: 2, log: Records.quiet)
        defer { journal.close() }
        #expect(journal.deviceCount(of: "app-1") == 2)
        #expect(journal.admit(DeviceID(app: "app-1", user: "c")) == nil, "the limit holds after a restart")
        #expect(journal.admit(DeviceID(app: "app-1", user: "b")) != nil)
        let database = try SQLiteDatabase(path: journal.path)
        defer { database.close() }
        #expect(try database.integer("SELECT count(*) FROM devices WHERE app = 'app-1' AND first_seen > 0") == 2)
    }

    @Test func recordsOfNewDevicesOverTheLimitAreRefusedInTheAckAndKnownOnesGoOnAfterARestart() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let endpoint = "ipc://\(directory.path)/gateways"
        var service = try RunningIngest(directory: directory, gatewayEndpoint: endpoint, maximumDevices: 2)
        let a = Records.drive(user: "a", count: 2)
        let b = Records.drive(user: "b", count: 1)
        let c = Records.drive(user: "c", count: 1)

        var acks = try GatewayClient.exchange(
            endpoint, [("first", RecordBatch.encodeBatch([a[0], b[0], c[0], a[1]], as: .msgpack))])
        let first = try #require(acks["first"])
        #expect(first.accepted == 3)
        #expect(first.rejected.map(\.index) == [2] && first.rejected.first?.field == "user")
        #expect(first.rejected.first?.reason.contains("--max-devices-per-app") == true)

        service.stop()
        service = try RunningIngest(directory: directory, gatewayEndpoint: endpoint, maximumDevices: 2)
        defer { service.stop() }
        let later = Records.drive(user: "b", count: 3, start: 1_772_440_000)
        acks = try GatewayClient.exchange(
            endpoint, [("second", RecordBatch.encodeBatch([later[1], c[0], later[2]], as: .msgpack))])
        let second = try #require(acks["second"])
        #expect(second.accepted == 2, "b is known from the journal")
        #expect(
            second.rejected.map(\.field) == ["user"] && second.rejected.map(\.index) == [1],
            "c is still new and refused")
    }

    @Test func aGatewaySendingAFrameOverTheLimitIsDisconnectedAndOthersAreServed() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let endpoint = "ipc://\(directory.path)/gateways"
        let service = try RunningIngest(directory: directory, gatewayEndpoint: endpoint, maximumMessageBytes: 64 << 10)
        defer { service.stop() }
        let context = try ZMQContext()
        defer { context.terminate() }
        let offender = try ZMQSocket(context, .dealer)
        defer { offender.close() }
        try offender.setReceiveTimeout(milliseconds: 1500)
        try offender.connect(endpoint)
        // A batch that would be valid but whose body is over 64 KiB.
        let big = RecordBatch.encodeBatch(Records.drive(user: "big", count: 2000), as: .msgpack)
        #expect(big.count > 64 << 10)
        #expect(try offender.send([Array("big".utf8), ContentType.msgpack.frame, big]))
        #expect(try offender.receive() == nil, "an oversized frame is not answered")

        let acks = try GatewayClient.exchange(
            endpoint, [("small", RecordBatch.encodeBatch(Records.drive(user: "s", count: 3), as: .msgpack))])
        #expect(acks["small"]?.accepted == 3, "another gateway is served")
        // The offender's DEALER reconnects by itself; a batch within the limit is acknowledged.
        var answered = false
        for attempt in 0..<5 where !answered {
            _ = try offender.send([
                Array("retry-\(attempt)".utf8), ContentType.msgpack.frame,
                RecordBatch.encodeBatch(Records.drive(user: "big", count: 3), as: .msgpack),
            ])
            if let reply = try offender.receive(), reply.count == 2 {
                answered = try Acknowledgement.decode(reply[1], contentType: .msgpack).accepted == 3
            }
        }
        #expect(answered)
    }
}

/// ingest on a thread of its own; `stop()` waits until it has closed its journal.
struct RunningIngest {
    let service: IngestService
    let finished = DispatchSemaphore(value: 0)

    init(
        directory: TemporaryDirectory, gatewayEndpoint: String, maximumDevices: Int = 100_000,
        maximumMessageBytes: Int64 = 64 << 20
    ) throws {
        var configuration = IngestConfiguration()
        configuration.gatewayEndpoint = gatewayEndpoint
        configuration.recordsEndpoint = "ipc://\(directory.path)/records"
        configuration.dataDirectory = directory.path + "/data"
        configuration.applications = ["app-1"]
        configuration.shards = 4
        configuration.maximumDevicesPerApplication = maximumDevices
        configuration.maximumMessageBytes = maximumMessageBytes
        configuration.logLevel = .error
        let service = try IngestService(configuration: configuration)
        self.service = service
        let finished = finished
        Thread {
            try? service.run()
            finished.signal()
        }.start()
    }

    func stop() {
        service.stop()
        finished.wait()
    }
}

/// A gateway that sends batches and waits for their acknowledgements (blocking; its socket lives in the call).
enum GatewayClient {
    static func exchange(
        _ endpoint: String, _ batches: [(id: String, body: [UInt8])],
        timeout: Int32 = 10_000
    ) throws -> [String: Acknowledgement] {
        let context = try ZMQContext()
        defer { context.terminate() }
        let socket = try ZMQSocket(context, .dealer)
        defer { socket.close() }
        try socket.setReceiveTimeout(milliseconds: timeout)
        try socket.setSendTimeout(milliseconds: timeout)
        try socket.connect(endpoint)
        for batch in batches {
            try socket.send([Array(batch.id.utf8), ContentType.msgpack.frame, batch.body])
        }
        var acks: [String: Acknowledgement] = [:]
        while acks.count < batches.count, let reply = try socket.receive() {
            guard reply.count == 2 else { continue }
            acks[String(decoding: reply[0], as: UTF8.self)] = try Acknowledgement.decode(
                reply[1], contentType: .msgpack)
        }
        return acks
    }
}
