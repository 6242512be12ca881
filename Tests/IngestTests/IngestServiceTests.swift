import Feeds
import Foundation
import Logging
import RoadSaveModel
import Storage
import SystemKit
import Testing
import Wire
import ZeroMQ

@testable import IngestService

/// sensor-ingest in this process, on ipc endpoints of a temporary directory, with the test's own sockets on a reactor
/// of their own: a DEALER as a gateway, a `FeedClient` as a detection shard, and a second SQLite connection that looks
/// into the journal the moment an acknowledgement arrives.
@Suite(.serialized) struct IngestServiceTests {
    /// What the test side saw, written on its reactor thread, read by the test.
    final class Observed: @unchecked Sendable {
        struct Ack {
            var acknowledgement: Acknowledgement
            var at: Double
            /// Records of this batch in the journal when the acknowledgement arrived.
            var recordsStored: Int
        }

        struct Reply {
            var header: FeedReplyHeader
            var items: [[UInt8]]
            var at: Double
        }

        private let lock = NSLock()
        private var acks: [String: Ack] = [:]
        private var replies: [Reply] = []

        func add(_ ack: Ack, batch: String) { lock.withLock { acks[batch] = ack } }
        func add(_ reply: Reply) { lock.withLock { replies.append(reply) } }
        func ack(_ batch: String) -> Ack? { lock.withLock { acks[batch] } }
        var feedReplies: [Reply] { lock.withLock { replies } }
    }

    /// The test's sockets and its look into the journal; lives on the test reactor's thread.
    final class TestSide {
        let gateway: ZMQSocket
        var feed: FeedClient?
        var journalReader: SQLiteDatabase?

        init(gateway: ZMQSocket) {
            self.gateway = gateway
        }
    }

    let directory: TemporaryDirectory
    let service: IngestService
    let reactor: Reactor
    let observed = Observed()
    static let shards = 16

    init() throws {
        directory = try TemporaryDirectory()
        var configuration = IngestConfiguration()
        configuration.gatewayEndpoint = "ipc://\(directory.path)/gateways"
        configuration.recordsEndpoint = "ipc://\(directory.path)/records"
        configuration.dataDirectory = directory.path + "/data"
        configuration.applications = ["app-1"]
        configuration.shards = Self.shards
        configuration.logLevel = .error
        service = try IngestService(configuration: configuration)
        let service = service
        Thread { try? service.run() }.start()

        let observed = observed
        let (gatewayEndpoint, recordsEndpoint) = (configuration.gatewayEndpoint, configuration.recordsEndpoint)
        let journalPath = DataDirectory.file(Journal.fileName, in: configuration.dataDirectory)
        reactor = Reactor(name: "ingest-test", context: try ZMQContext())
        reactor.start { loop in
            let gateway = try loop.socket(.dealer)
            try gateway.connect(gatewayEndpoint)
            let side = TestSide(gateway: gateway)
            loop.setValue(side)
            loop.onReadable(gateway) { socket in
                while let frames = try? socket.receive(dontWait: true) {
                    guard frames.count == 2,
                        let acknowledgement = try? Acknowledgement.decode(frames[1], contentType: .msgpack)
                    else { continue }
                    let batch = String(decoding: frames[0], as: UTF8.self)
                    // Look into the journal now, before anything else happens.
                    if side.journalReader == nil { side.journalReader = try? SQLiteDatabase(path: journalPath) }
                    let stored =
                        (try? side.journalReader?.statement(
                            "SELECT coalesce(sum(records), 0) FROM chunks WHERE batch = ?"
                        ).integer(batch)) ?? nil
                    observed.add(
                        Observed.Ack(
                            acknowledgement: acknowledgement, at: MonotonicClock.now(),
                            recordsStored: Int(stored ?? -1)), batch: batch)
                }
            }
            side.feed = try FeedClient(loop: loop, endpoint: recordsEndpoint, log: Records.quiet) { header, items in
                observed.add(Observed.Reply(header: header, items: items.map { Array($0) }, at: MonotonicClock.now()))
            }
        }
    }

    func finish() {
        service.stop()
        reactor.stop()
        _ = reactor.wait()
        directory.remove()
    }

    func send(_ batch: String, _ records: [SensorRecord]) async throws {
        let body = RecordBatch.encodeBatch(records, as: .msgpack)
        try await send(batch, body: body)
    }

    func send(_ batch: String, body: [UInt8]) async throws {
        try await reactor.run { loop in
            _ = try loop.value(TestSide.self)!.gateway.send([Array(batch.utf8), ContentType.msgpack.frame, body])
        }
    }

    func fetch(_ request: FeedRequest) async throws {
        try await reactor.run { loop in loop.value(TestSide.self)!.feed!.fetch(request) }
    }

    func ack(_ batch: String, timeout: Double = 10) async throws -> Observed.Ack {
        let deadline = MonotonicClock.now() + timeout
        while MonotonicClock.now() < deadline {
            if let ack = observed.ack(batch) { return ack }
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        throw JournalError("no acknowledgement of \(batch) within \(timeout) s")
    }

    func reply(after count: Int, timeout: Double = 10) async throws -> Observed.Reply {
        let deadline = MonotonicClock.now() + timeout
        while MonotonicClock.now() < deadline {
            let replies = observed.feedReplies
            if replies.count > count { return replies[count] }
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        throw JournalError("no feed reply #\(count + 1) within \(timeout) s")
    }

    @Test func acknowledgesStoredRecordsAndServesThemByShardToAHeldRequest() async throws {
        defer { finish() }
        let shard = 5
        let mine = Records.user(inShard: shard, of: Self.shards)
        let other = Records.user(inShard: 9, of: Self.shards)

        // First contact: the feed's ID, no items.
        try await fetch(Requests.request(after: 0, consumer: "detection shard 5/16", shard: shard, shards: Self.shards))
        let first = try await reply(after: 0)
        #expect(first.items.isEmpty && first.header.error == nil && first.header.head == 0)
        let feed = first.header.feed

        // A request that finds nothing is held (60 s, the longest a request may ask), and answered as soon as a batch
        // of its shard is committed: well before the hold ends, however busy the machine.
        var held = FeedRequest(
            id: 0, feed: feed, after: 0, maxItems: 100, acknowledged: 0, consumer: "detection shard 5/16",
            shard: shard, shards: Self.shards, waitMilliseconds: 60_000)
        try await fetch(held)
        try await Task.sleep(nanoseconds: 300_000_000)
        #expect(observed.feedReplies.count == 1, "nothing to say yet: the request is held")

        let ours = Records.drive(user: mine, count: 3)
        let theirs = Records.drive(user: other, count: 2)
        let sentAt = MonotonicClock.now()
        try await send("batch-1", [ours[0], theirs[0], ours[1], theirs[1], ours[2]])
        let stored = try await ack("batch-1")
        #expect(stored.acknowledgement == Acknowledgement(accepted: 5))
        #expect(stored.recordsStored == 5, "the acknowledgement came before its records were in the journal")

        let answer = try await reply(after: 1, timeout: 30)
        #expect(answer.header.error == nil)
        #expect(answer.at - sentAt < 30, "the held request waited \(answer.at - sentAt) s for a committed batch")
        #expect(try Records.decode(answer.items) == ours, "only shard \(shard)'s records, in order")
        #expect(
            answer.header.to == 2 && answer.header.head == 2,
            "shard 5's chunk comes before shard 9's, and the reply reaches the head: shard 9's chunk is not this reader's"
        )

        // Every shard, from the start.
        try await fetch(Requests.request(after: 0, consumer: "everything", feed: feed))
        let all = try await reply(after: 2)
        #expect(Set(try Records.decode(all.items).map(\.device.user)) == [mine, other])

        // The next request of the shard, after a batch with bad records: only the accepted ones are stored.
        held.after = answer.header.to
        held.acknowledged = answer.header.to
        try await fetch(held)
        var bad = Records.drive(user: mine, count: 2, start: 1_772_434_000)
        bad[1].device = DeviceID(app: "unknown-app", user: mine)
        try await send("batch-2", bad)
        let partial = try await ack("batch-2")
        #expect(partial.acknowledgement.accepted == 1 && partial.acknowledgement.rejected.map(\.index) == [1])
        #expect(partial.recordsStored == 1)
        let next = try await reply(after: 3)
        #expect(try Records.decode(next.items) == [bad[0]])

        // A body that cannot be read is answered at once, and nothing is stored.
        try await send("garbage", body: [0xc1, 0xc1])
        let refused = try await ack("garbage")
        #expect(refused.acknowledgement.accepted == 0 && refused.acknowledgement.rejected.first?.index == -1)
        #expect(refused.recordsStored == 0)
    }

    @Test func refusesAFeedRequestCountingShardsDifferently() async throws {
        defer { finish() }
        try await fetch(Requests.request(after: 0, consumer: "x"))
        let feed = try await reply(after: 0).header.feed
        try await fetch(Requests.request(after: 0, consumer: "x", shard: 1, shards: 8, feed: feed))
        let refused = try await reply(after: 1)
        #expect(refused.items.isEmpty)
        #expect(refused.header.error?.contains("this journal has 16 shards") == true, "\(refused.header)")
    }

    /// The journal cannot store (here: another connection holds its write lock past the busy timeout): the batch is
    /// refused whole, never acknowledged as accepted; once the store works again, the same batch is accepted.
    @Test func refusesABatchTheJournalCannotStore() async throws {
        defer { finish() }
        let records = Records.drive(user: "someone", count: 4)
        try await send("warm-up", records)
        #expect(try await ack("warm-up").acknowledgement.accepted == 4)

        let path = DataDirectory.file(Journal.fileName, in: directory.path + "/data")
        try await reactor.run { loop in
            let blocker = try SQLiteDatabase(path: path, busyTimeoutMilliseconds: 100)
            try blocker.execute("BEGIN IMMEDIATE")
            loop.setValue(blocker)
        }
        try await send("blocked", records)
        let refused = try await ack("blocked", timeout: 20)
        #expect(refused.acknowledgement.accepted == 0)
        let rejection = try #require(refused.acknowledgement.rejected.first)
        #expect(refused.acknowledgement.rejected.count == 1 && rejection.index == -1 && rejection.field == "store")
        #expect(rejection.reason.contains("the journal could not store the batch"), "\(rejection.reason)")
        #expect(refused.acknowledgement.resendAfterMs == 1000, "a store failure asks for the batch again")

        try await reactor.run { loop in
            let blocker = loop.value(SQLiteDatabase.self)!
            try blocker.execute("ROLLBACK")
            blocker.close()
            loop.removeValue(SQLiteDatabase.self)
        }
        try await send("unblocked", records)
        let accepted = try await ack("unblocked")
        #expect(accepted.acknowledgement == Acknowledgement(accepted: 4))
        #expect(accepted.recordsStored == 4)
    }

    /// Batches that wait together are stored in one transaction (one fsync): their chunks share a `received_at`.
    @Test func groupsBatchesThatWaitTogetherIntoOneCommit() async throws {
        defer { finish() }
        try await send("warm-up", Records.drive(user: "someone", count: 1))
        _ = try await ack("warm-up")
        let bodies = (0..<100).map {
            RecordBatch.encodeBatch(Records.drive(user: "user-\($0)", count: 5), as: .msgpack)
        }
        try await reactor.run { loop in
            let gateway = loop.value(TestSide.self)!.gateway
            for (index, body) in bodies.enumerated() {
                _ = try gateway.send([Array("group-\(index)".utf8), ContentType.msgpack.frame, body])
            }
        }
        for index in 0..<100 {
            let stored = try await ack("group-\(index)")
            #expect(stored.acknowledgement.accepted == 5 && stored.recordsStored == 5)
        }
        let path = DataDirectory.file(Journal.fileName, in: directory.path + "/data")
        let commits = try await reactor.run { _ in
            try SQLiteDatabase(path: path).integer(
                "SELECT count(DISTINCT received_at) FROM chunks WHERE batch LIKE 'group-%'")
        }
        #expect((commits ?? 100) < 50, "100 batches sent at once took \(commits ?? -1) commits")
    }
}
