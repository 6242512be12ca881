import DetectionEngine
import Feeds
import Foundation
import RoadSaveModel
import Storage
import Testing
import Wire

@testable import DetectionService

/// detection's store on its own: shard identity, outbox positions and acknowledgements, checkpoints and the inputs
/// kept after them, across reopening.
@Suite struct DetectionStoreTests {
    let directory: String
    static let events = Streams.replay(Streams.fleet())

    init() throws {
        directory =
            FileManager.default.temporaryDirectory.appendingPathComponent("rs-store-\(UUID().uuidString.prefix(8))")
            .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    func open(shard: String = "all") throws -> DetectionStore {
        try DetectionStore(directory: directory, shard: shard)
    }

    static func request(
        after: UInt64, through: UInt64? = nil, maxItems: Int = 100, acknowledged: UInt64 = 0,
        feed: String
    ) -> FeedRequest {
        FeedRequest(
            id: 1, feed: feed, after: after, through: through, maxItems: maxItems, acknowledged: acknowledged,
            consumer: "test", waitMilliseconds: 0)
    }

    /// Journal gaps are kept across reopening: found, grown (unacknowledged again), acknowledged (kept, so the same
    /// hole is known).
    @Test func journalGapsAreKeptWithTheirAcknowledgement() throws {
        defer { remove() }
        var store = try open(shard: "0/2")
        #expect(try store.journalGaps().isEmpty, "a new store has none (and an older one gets the table when opened)")
        let first = JournalGap(
            journal: "j-1", endpoint: "tcp://ingest-a:5551", shard: "0/2", position: 0, deletedThrough: 40)
        let second = JournalGap(
            journal: "j-2", endpoint: "tcp://ingest-b:5551", shard: "0/2", position: 7, deletedThrough: 9)
        try store.saveJournalGap(first, at: 1000)
        try store.saveJournalGap(second, at: 1001)
        try store.acknowledgeJournalGaps([first], at: 1002)
        store.close()

        store = try open(shard: "0/2")
        var acknowledgedFirst = first
        acknowledgedFirst.acknowledged = true
        #expect(try store.journalGaps() == [acknowledgedFirst, second])
        // The first hole grew: its new end, and it needs acknowledging again.
        var grown = first
        grown.deletedThrough = 55
        try store.saveJournalGap(grown, at: 1003)
        #expect(try store.journalGaps() == [grown, second])
        store.close()
    }

    func outboxPositions(_ store: DetectionStore) throws -> [UInt64] {
        var positions: [UInt64] = []
        try store.database.statement("SELECT position FROM outbox ORDER BY position").query {
            positions.append($0.unsigned(0))
        }
        return positions
    }

    func eventIDs(_ items: [ArraySlice<UInt8>]) throws -> [String] {
        try items.map { try EventBody.decode(Array($0)).eventID }
    }

    @Test func aDataDirectoryHoldsTheStateOfOneShard() throws {
        defer { remove() }
        let feed = try open(shard: "0/2").feedID
        #expect(feed.hasPrefix("detection-"))
        for other in ["1/2", "all", "0/4"] {
            do {
                _ = try open(shard: other)
                Issue.record("shard \(other) opened the store of shard 0/2")
            } catch let error as StorageError {
                #expect(error.message.contains("detection shard 0/2, not \(other)"), "\(error.message)")
                #expect(error.message.contains("--data-dir"))
            }
        }
        let again = try open(shard: "0/2")
        #expect(again.feedID == feed, "the outbox feed changed identity on reopening")
    }

    @Test func outboxPositionsAreNeverReused() throws {
        defer { remove() }
        let events = Self.events
        var store = try open()
        let feed = store.feedID
        #expect(store.head == 0)
        try store.commit(inputs: [], events: Array(events[0..<3]), at: 1)
        #expect(store.head == 3)
        var batch = try store.read(Self.request(after: 0, feed: feed))
        #expect(try batch.to == 3 && (eventIDs(batch.items)) == events[0..<3].map(\.eventID))
        store.acknowledged(Self.request(after: 3, acknowledged: 3, feed: feed))
        #expect(try store.outboxCount() == 0)

        // Reopened: the next event goes after the deleted ones.
        store = try open()
        #expect(store.head == 3)
        try store.commit(inputs: [], events: Array(events[3..<5]), at: 2)
        batch = try store.read(Self.request(after: 3, feed: feed))
        #expect(try batch.to == 5 && (eventIDs(batch.items)) == events[3..<5].map(\.eventID))
        #expect(try outboxPositions(store) == [4, 5])

        // An event still waiting is not added twice; one already acknowledged comes again at a new position.
        try store.commit(inputs: [], events: [events[4]], at: 3)
        #expect(try store.head == 5 && (outboxPositions(store)) == [4, 5])
        try store.commit(inputs: [], events: [events[0]], at: 4)
        // (SQLite's AUTOINCREMENT may spend a number on the ignored insert: positions can have gaps, never repeats.)
        let positions = try outboxPositions(store)
        #expect(
            positions.count == 3 && positions[0...1] == [4, 5] && positions[2] > 5 && store.head == positions[2],
            "\(positions), head \(store.head)")
        #expect(try eventIDs(store.read(Self.request(after: 5, feed: feed)).items) == [events[0].eventID])
        #expect(try open().head >= store.head)
    }

    @Test func acknowledgedRowsAreDeletedTheOthersKept() throws {
        defer { remove() }
        let events = Array(Self.events[0..<5])
        let store = try open()
        let feed = store.feedID
        try store.commit(inputs: [], events: events, at: 1)

        // Reading is not acknowledging.
        _ = try store.read(Self.request(after: 0, feed: feed))
        #expect(try outboxPositions(store) == [1, 2, 3, 4, 5])

        store.acknowledged(Self.request(after: 5, acknowledged: 2, feed: feed))
        #expect(try outboxPositions(store) == [3, 4, 5])
        #expect(store.acknowledgedPosition == 2)
        // An older acknowledgement (a late request) changes nothing.
        store.acknowledged(Self.request(after: 1, acknowledged: 1, feed: feed))
        #expect(try outboxPositions(store) == [3, 4, 5] && store.acknowledgedPosition == 2)

        // What is left reads as before, within the request's limits.
        let all = try store.read(Self.request(after: 0, feed: feed))
        #expect(try all.to == 5 && (eventIDs(all.items)) == events[2..<5].map(\.eventID))
        let two = try store.read(Self.request(after: 2, maxItems: 2, feed: feed))
        #expect(two.to == 4 && two.items.count == 2)
        let through = try store.read(Self.request(after: 2, through: 3, feed: feed))
        #expect(try through.to == 3 && (eventIDs(through.items)) == [events[2].eventID])
        let none = try store.read(Self.request(after: 5, feed: feed))
        #expect(none.items.isEmpty && none.to == 5)

        store.acknowledged(Self.request(after: 5, acknowledged: 5, feed: feed))
        #expect(try store.outboxCount() == 0)
    }

    @Test func checkpointsRoundTripAndRewriteOnlyChangedDevices() throws {
        defer { remove() }
        let (a, b) = (DeviceID(app: "app-1", user: "a"), DeviceID(app: "app-2", user: "b"))
        var store = try open()
        #expect(try store.loadCheckpoint() == nil)
        try store.writeCheckpoint(
            input: 0, shared: Array("shared-1".utf8), changedDevices: [(a, Array("a-1".utf8)), (b, Array("b-1".utf8))],
            positions: ["journal-x": 7, "journal-y": 9], at: 100)
        store = try open()
        var checkpoint = try #require(try store.loadCheckpoint())
        #expect(checkpoint.input == 0 && checkpoint.shared == Array("shared-1".utf8))
        #expect(checkpoint.positions == ["journal-x": 7, "journal-y": 9])
        #expect(
            Dictionary(uniqueKeysWithValues: checkpoint.devices.map { ($0.0, $0.1) })
                == [a: Array("a-1".utf8), b: Array("b-1".utf8)])

        // Only a changed: b's state stays as it was.
        try store.writeCheckpoint(
            input: 0, shared: Array("shared-2".utf8), changedDevices: [(a, Array("a-2".utf8))],
            positions: ["journal-x": 12, "journal-y": 9], at: 101)
        store = try open()
        checkpoint = try #require(try store.loadCheckpoint())
        #expect(
            checkpoint.shared == Array("shared-2".utf8) && checkpoint.positions == ["journal-x": 12, "journal-y": 9])
        #expect(
            Dictionary(uniqueKeysWithValues: checkpoint.devices.map { ($0.0, $0.1) })
                == [a: Array("a-2".utf8), b: Array("b-1".utf8)])
    }

    /// A device leaving memory whose row is current is only marked out of memory; one with no row (which should
    /// not happen) is written from its state rather than lost.
    @Test func aMarkedEvictionFlipsTheRowOrWritesAMissingOne() throws {
        defer { remove() }
        let (a, b) = (DeviceID(app: "app-1", user: "a"), DeviceID(app: "app-1", user: "b"))
        let store = try open()
        try store.writeCheckpoint(input: 0, shared: [], changedDevices: [(a, Array("a-1".utf8))], positions: [:], at: 1)
        try store.writeCheckpoint(
            input: 0, shared: [], changedDevices: [],
            markedEvicted: [
                .init(device: a) {
                    Issue.record("a's row is current: nothing to encode")
                    return []
                },
                .init(device: b) { Array("b-1".utf8) },
            ], positions: [:], at: 2)
        #expect(try store.evictedState(of: a) == Array("a-1".utf8))
        #expect(try store.evictedState(of: b) == Array("b-1".utf8))
        #expect(try #require(try store.loadCheckpoint()).devices.isEmpty, "neither is loaded at start")
    }

    @Test func onlyTheInputsAfterTheCheckpointAreKept() throws {
        defer { remove() }
        let device = DeviceID(app: "app-1", user: "a")
        let inputs: [DetectionInput] = [
            .records(feed: "journal-x", after: 0, to: 4, now: 10),
            .settings(app: "app-1", fetch: .fetched(Streams.settings), now: 10.5),
            .verdict(device: device, crashID: "crash-1", outcome: .verdict(.high)),
            .tick(now: 11),
        ]
        var store = try open()
        #expect(try store.lastInput() == 0)
        let last = try store.commit(inputs: inputs, events: [], at: 11)
        #expect(try last == 4 && (store.lastInput()) == 4)
        #expect(try store.inputs(after: 0).map(\.seq) == [1, 2, 3, 4])
        #expect(try store.inputs(after: 0).map(\.input) == inputs, "an input changed on its way through the store")

        try store.writeCheckpoint(input: 2, shared: [], changedDevices: [], positions: ["journal-x": 4], at: 12)
        #expect(try store.inputs(after: 0).map(\.seq) == [3, 4], "inputs the checkpoint reflects are still kept")
        #expect(try store.database.integer("SELECT count(*) FROM inputs") == 2)

        // Sequence numbers go on after deleted inputs, also after reopening.
        let control = DetectionInput.control(
            request: #"{"command":"stopMonitoring","app":"app-1","user":"a"}"#,
            fetch: nil, now: 13)
        #expect(try store.commit(inputs: [control], events: [], at: 13) == 5)
        try store.writeCheckpoint(input: 5, shared: [], changedDevices: [], positions: ["journal-x": 4], at: 14)
        store = try open()
        #expect(try store.lastInput() == 5 && (store.inputs(after: 0)).isEmpty)
        #expect(try store.commit(inputs: [.tick(now: 15)], events: [], at: 15) == 6)
        #expect(try store.inputs(after: 5).map(\.input) == [.tick(now: 15)])
    }

    @Test func aStoreOfOneFileHasItsInputsAndOutboxMovedWithTheirNumbers() throws {
        defer { remove() }
        // The layout before checkpoints were written off the reactor thread: everything in detection.sqlite; the
        // outbox emptied (acknowledged) after position 7, inputs 3 and 4 kept after a checkpoint at 2.
        do {
            let old = try SQLiteDatabase(path: DataDirectory.file("detection.sqlite", in: directory))
            defer { old.close() }
            try old.execute(
                """
                CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
                CREATE TABLE checkpoint(id INTEGER PRIMARY KEY CHECK (id = 1), input INTEGER NOT NULL,
                    taken_at REAL NOT NULL, state BLOB NOT NULL);
                CREATE TABLE inputs(seq INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, at REAL NOT NULL,
                    body TEXT NOT NULL);
                CREATE TABLE outbox(position INTEGER PRIMARY KEY AUTOINCREMENT, event_id TEXT NOT NULL UNIQUE,
                    name TEXT NOT NULL, app TEXT NOT NULL, user TEXT NOT NULL, event BLOB NOT NULL);
                INSERT INTO meta VALUES ('shard', 'all'), ('outbox_feed', 'detection-old');
                INSERT INTO checkpoint VALUES (1, 2, 0, x'7b7d');
                INSERT INTO inputs VALUES (1, 'tick', 1, '{"tick":{"now":1}}'), (2, 'tick', 2, '{"tick":{"now":2}}'),
                    (3, 'tick', 3, '{"tick":{"now":3}}'), (4, 'tick', 4, '{"tick":{"now":4}}');
                INSERT INTO outbox VALUES (7, 'e7', 'tripDidStart', 'app-1', 'a', x'80');
                DELETE FROM outbox;
                DELETE FROM inputs WHERE seq <= 2;
                """)
        }
        for again in 0..<2 { // and again: the move is done once, numbers go on
            let store = try open()
            #expect(store.feedID == "detection-old" && store.head == 7 + UInt64(again), "the outbox's positions go on")
            #expect(try store.inputs(after: 2).map(\.input) == [.tick(now: 3), .tick(now: 4)])
            #expect(try store.lastInput() == 4 + Int64(again))
            #expect(try store.loadCheckpoint()?.input == 2)
            var tables: [String] = []
            try store.state.statement(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('inputs', 'outbox')"
            )
            .query { tables.append($0.text(0)) }
            #expect(tables.isEmpty, "the old tables are gone from detection.sqlite")
            let input = try store.commit(inputs: [.tick(now: 5)], events: [Self.events[again]], at: 5)
            #expect(input == 5 + Int64(again))
            #expect(try outboxPositions(store) == [8 + UInt64(again)])
            try store.database.execute("DELETE FROM inputs WHERE seq > 4; DELETE FROM outbox")
            store.close()
        }
    }
}
