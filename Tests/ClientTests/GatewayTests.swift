import Foundation
import RoadSaveClient
import RoadSaveTestKit
import SystemKit
import Testing

/// `RoadSaveGateway` against sensor-ingest as a process (`roadsave-ingest`) over real ZeroMQ: an ingest SIGKILLed and
/// started again mid-send, a journal that cannot store a batch (its write lock held by another process), the window
/// that bounds what the gateway holds, a key the ingest does not list, and records it refuses, each typed.
@Suite("RoadSaveGateway", .serialized)
struct GatewayTests {
    /// A simulated fleet's records (`roadsave simulate`), read with the library's own reader.
    static func records(devices: Int, minutes: Int, app: String = "app-1") async throws -> [SensorRecord] {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(
            "roadsave-client-\(UUID().uuidString.prefix(8)).ndjson")
        defer { try? FileManager.default.removeItem(at: file) }
        let simulate = try Child(
            name: "simulate", executable: Executables.roadsave,
            arguments: [
                "simulate", "--devices", String(devices), "--duration", String(minutes), "--seed", "45",
                "--app", app, "--output", file.path, "--no-progress",
            ])
        defer { simulate.kill() }
        guard await simulate.waitForExit(timeout: 60) == 0 else { throw TestFailure(simulate.tail()) }
        return try String(contentsOf: file, encoding: .utf8).split(separator: "\n").map { try SensorRecord(json: $0) }
    }

    /// Receipts gathered while a send goes on, for a test to look at.
    final class Receipts: Sendable {
        private let state = Locked<[RoadSaveGateway.Receipt]>([])
        func add(_ receipts: [RoadSaveGateway.Receipt]) { state.withLock { $0 += receipts } }
        var all: [RoadSaveGateway.Receipt] { state.withLock { $0 } }
        var records: Int { all.map(\.records).reduce(0, +) }
    }

    /// Every record of `count` in exactly one receipt, all accepted.
    static func expectEachAcknowledgedOnce(_ receipts: [RoadSaveGateway.Receipt], count: Int, _ context: String) {
        let numbers = receipts.flatMap(\.numbers)
        #expect(numbers.sorted() == Array(1...count), "\(numbers.count) numbers for \(count) records\n\(context)")
        #expect(receipts.map(\.accepted).reduce(0, +) == count, "\(context)")
        #expect(receipts.allSatisfy { $0.rejections.isEmpty }, "\(receipts.flatMap(\.rejections))")
    }

    /// The records the journal holds per batchID (`sqlite3`, as an operator would look).
    static func journalled(_ ingest: Ingest) async throws -> [String: Int] {
        let query = try Child(
            name: "sqlite3", executable: Executables.env,
            arguments: ["sqlite3", ingest.journal, "SELECT batch, sum(records) FROM chunks GROUP BY batch"])
        defer { query.kill() }
        _ = await query.waitForExit(timeout: 20)
        var counts: [String: Int] = [:]
        for line in query.lines {
            let fields = line.split(separator: "|")
            if fields.count == 2, let count = Int(fields[1]) { counts[String(fields[0])] = count }
        }
        return counts
    }

    @Test func everyRecordAcknowledgedOnceThroughAnIngestKilledAndRestarted() async throws {
        let records = try await Self.records(devices: 4, minutes: 12)
        let ingest = Ingest()
        defer { ingest.stop() }
        try await ingest.start()
        let gateway = try RoadSaveGateway(
            RoadSaveGateway.Configuration(
                endpoints: [ingest.endpoint], batchSize: 50, window: 4, timeout: 2, attempts: 30))
        defer { gateway.close() }
        let receipts = Receipts()
        let sending = Task { () async throws in
            var index = 0
            while index < records.count {
                let part = Array(records[index..<min(records.count, index + 100)])
                receipts.add(try await gateway.send(part))
                index += part.count
            }
            receipts.add(try await gateway.finish())
        }
        try #require(
            await eventually(timeout: 60) { receipts.records >= records.count / 4 }, "\(ingest.logs())")
        try #require(ingest.current).kill()
        try await ingest.start()
        let sent = await sending.result
        #expect(throws: Never.self) { try sent.get() }
        Self.expectEachAcknowledgedOnce(receipts.all, count: records.count, ingest.logs())
        // None lost: the journal holds every acknowledged batch whole (one whose acknowledgement died with the first
        // ingest is there twice: detection drops the repeats by seq).
        let journal = try await Self.journalled(ingest)
        for receipt in receipts.all {
            let held = journal[receipt.batchID] ?? 0
            #expect(held >= receipt.records && held % receipt.records == 0, "\(receipt.batchID): \(held)")
        }
    }

    /// The journal's write lock held by another process past ingest's busy timeout: the batch is refused with `store`
    /// and sent again after the pause, using up no attempt, and stored once the lock is let go.
    @Test func aBatchTheJournalCouldNotStoreIsSentAgain() async throws {
        let records = try await Self.records(devices: 1, minutes: 3)
        let ingest = Ingest()
        defer { ingest.stop() }
        try await ingest.start()
        let release = ingest.data.appendingPathComponent("release").path
        let holder = try Child.python(
            code: """
                import os, sqlite3, sys, time
                connection = sqlite3.connect(sys.argv[1], isolation_level=None)
                connection.execute("BEGIN IMMEDIATE")
                print("locked", flush=True)
                while not os.path.exists(sys.argv[2]):
                    time.sleep(0.05)
                connection.execute("ROLLBACK")
                """, [ingest.journal, release])
        defer { holder.kill() }
        try #require(await eventually(timeout: 20) { holder.lines.contains("locked") }, "\(holder.tail())")
        let refusals = Locked(0)
        let gateway = try RoadSaveGateway(
            RoadSaveGateway.Configuration(endpoints: [ingest.endpoint], batchSize: 1000, timeout: 60, attempts: 1),
            interruption: nil,
            notices: { notice in
                if case .storeRefused = notice { refusals.withLock { $0 += 1 } }
            })
        defer { gateway.close() }
        let sending = Task { () async throws -> [RoadSaveGateway.Receipt] in
            let first = try await gateway.send(records)
            return first + (try await gateway.finish())
        }
        try #require(await eventually(timeout: 60) { refusals.withLock { $0 } >= 1 }, "\(ingest.logs())")
        _ = FileManager.default.createFile(atPath: release, contents: nil)
        let receipts = try await sending.value
        Self.expectEachAcknowledgedOnce(receipts, count: records.count, ingest.logs())
        #expect(receipts.allSatisfy { $0.attempts == 1 }, "a store refusal uses up no attempt")
    }

    /// With a window of 2 and nothing listening, two batches go out and the call returns; the third call suspends
    /// (the window is full) until an ingest comes up and acknowledges.
    @Test func sendSuspendsWhileTheWindowIsFull() async throws {
        let records = try await Self.records(devices: 1, minutes: 2)
        let ingest = Ingest()
        defer { ingest.stop() }
        let unanswered = Locked(0)
        let gateway = try RoadSaveGateway(
            RoadSaveGateway.Configuration(
                endpoints: [ingest.endpoint], batchSize: 1, window: 2, timeout: 0.5, attempts: 100),
            interruption: nil,
            notices: { notice in
                if case .noAcknowledgement = notice { unanswered.withLock { $0 += 1 } }
            })
        defer { gateway.close() }
        #expect(try await gateway.send(Array(records[0..<2])).isEmpty, "returns with the window full, unanswered")
        let done = Locked(false)
        let third = Task { () async throws -> [RoadSaveGateway.Receipt] in
            defer { done.withLock { $0 = true } }
            return try await gateway.send([records[2]])
        }
        // Two batches gone unanswered and sent again: the engine is at work, and the third call still waits.
        try #require(await eventually(timeout: 30) { unanswered.withLock { $0 } >= 2 })
        #expect(!done.withLock { $0 }, "the call did not wait for room in the window")
        try await ingest.start()
        let receipts = try await third.value + (try await gateway.finish())
        Self.expectEachAcknowledgedOnce(receipts, count: 3, ingest.logs())
    }

    /// An ingest with keys: a gateway key it does not list is refused (typed, at once: not a batch out of
    /// attempts); the listed key limited to app-1 gets its app-2 records back as not allowed, and records of an
    /// application the ingest does not know as unknown, each with its record and number; a broken record as invalid.
    @Test func aRefusedKeyAndRefusedRecordsAreTyped() async throws {
        let folder = try await KeyFolder(
            prefix: "roadsave-client-gateway", servers: ["ingest"],
            clients: [
                ("gw-1", ["--role", "gateway", "--apps", "app-1,app-3"]), ("stranger", ["--role", "gateway"]),
            ], listing: ["gw-1"])
        defer { folder.remove() }
        let ingest = Ingest(
            applications: "app-1,app-2",
            extra: ["--curve-secret-key", folder.serverSecret, "--allow", folder.allowList])
        defer { ingest.stop() }
        try await ingest.start()
        func gateway(_ key: String) throws -> RoadSaveGateway {
            try RoadSaveGateway(
                RoadSaveGateway.Configuration(
                    endpoints: [ingest.endpoint],
                    keys: RoadSaveKeys(
                        secretKeyFile: folder.path("\(key).key"), serverPublicKeyFile: folder.serverPublic),
                    timeout: 30, attempts: 5))
        }
        func record(_ app: String, seq: UInt64, latitude: Double = -33.9) -> SensorRecord {
            SensorRecord(
                device: DeviceID(app: app, user: "u-1"), seq: seq, t: 1_772_433_000 + Double(seq),
                payload: .location(LocationFix(latitude: latitude, longitude: 18.4, speed: 1, horizontalAccuracy: 5)))
        }
        let batch = [
            record("app-1", seq: 1), record("app-2", seq: 2), record("app-3", seq: 3),
            record("app-1", seq: 4, latitude: 95),
        ]

        let stranger = try gateway("stranger")
        defer { stranger.close() }
        do {
            _ = try await stranger.send(batch) + (try await stranger.finish())
            Issue.record("an unlisted key was acknowledged")
        } catch {
            guard case .keyRefused(let endpoint, _) = error else {
                Issue.record("\(error)")
                return
            }
            #expect(endpoint == ingest.endpoint)
        }

        let listed = try gateway("gw-1")
        defer { listed.close() }
        let receipts = try await listed.send(batch) + (try await listed.finish())
        #expect(receipts.map(\.accepted).reduce(0, +) == 1, "\(receipts)")
        let rejections = receipts.flatMap(\.rejections)
        #expect(
            rejections.map(\.kind) == [.applicationNotAllowed, .unknownApplication, .invalidRecord], "\(rejections)")
        #expect(rejections.map(\.number) == [2, 3, 4])
        #expect(rejections.map(\.record) == [batch[1], batch[2], batch[3]])
        #expect(rejections.map(\.field) == ["app", "app", "lat"])
    }
}
