import DetectionEngine
import Feeds
import Foundation
import Logging
import RecordCodecs
import RoadSaveModel
import Storage
import Wire

/// detection's own store, in two files of its data directory, so that writing a checkpoint (on a thread of its own,
/// `CheckpointWriter`) never holds up the commits that let events out:
/// - `detection.sqlite`: the last checkpoint of the fleet;
/// - `outbox.sqlite`: the inputs applied since (so that a restart can re-run them exactly), and the outbox of events
///   the notifier has not yet stored.
///
/// Schema (for an operator with the `sqlite3` shell):
/// - `detection.sqlite`:
///   - `meta(key, value)`: `outbox_feed` (the identity of the outbox feed the notifier reads), `shard` (`0/2` or `all`).
///   - `checkpoint(id = 1, input, taken_at, state)`: the fleet's shared state (JSON) as of input `input`.
///   - `devices(app, user, state, resident)`: each device's state (JSON) at the checkpoint (a rowid table, see
///     `devicesColumns`); only changed devices are rewritten. `resident` 0: the device was idle and left memory at
///     that checkpoint (`--device-memory-idle`); its row is read back by primary key when it sends again, and it is
///     not loaded at start.
///   - `positions(feed, position)`: per ingest journal, the position the checkpoint reflects.
/// - `outbox.sqlite`:
///   - `inputs(seq, kind, at, body)`: every input applied, in order (JSON): record ranges of a journal, platform
///     answers, control commands, clock ticks. Those up to a checkpoint's `input` are deleted once it is written.
///   - `outbox(position, event_id, name, app, user, event)`: events not yet stored by the notifier (`event` is the
///     MessagePack map of `EventBody`). Deleted when the notifier acknowledges them.
///   - `unapplied(id, noted_at, app, user, t, kind, reason, applied_up_to, record)`: records acknowledged by ingest
///     that detection could not apply (`late`: older than what was applied for the device; `farInFuture`), with the
///     record as JSON, so nothing acknowledged is dropped unseen (`SELECT reason, count(*) FROM unapplied GROUP BY
///     reason;`). The newest `unappliedKept` are kept.
///   - `journal_gaps(journal, position, endpoint, shard, deleted_through, found_at, acknowledged_at)`: records of a
///     journal that its retention deleted after `position` (through `deleted_through`) before detection read them
///     (`JournalGap`); `acknowledged_at` NULL until an operator acknowledges (`roadsave ctl acknowledgeJournalGaps`).
///     Kept afterwards, so that the same hole is not reported again (`SELECT * FROM journal_gaps;`).
///
/// A checkpoint and the inputs after it are written in transactions, so what is on disk is always a state plus the
/// exact inputs that lead from it to the last state whose events left the process (inputs a checkpoint already
/// holds may linger until they are deleted; a restart skips them).
final class DetectionStore: FeedSource {
    struct Checkpoint {
        var input: Int64
        var shared: [UInt8]
        /// Devices in memory at the checkpoint (evicted ones are read when they are needed).
        var devices: [(DeviceID, [UInt8])]
        var positions: [String: UInt64]
    }

    /// `outbox.sqlite`: inputs and the outbox (the reactor thread's).
    let database: SQLiteDatabase
    /// `detection.sqlite`, read on the reactor thread (checkpoint at start, devices out of memory).
    let state: SQLiteDatabase
    /// Writes checkpoints into `detection.sqlite`.
    let checkpoints: CheckpointWriter
    /// Compresses device rows (the checkpoint writer) and reads them back (the readers here).
    let rows = DeviceRowCodec()
    let feedID: String
    private(set) var head: UInt64 = 0
    /// The notifier's last acknowledgement (everything up to it is deleted).
    private(set) var acknowledgedPosition: UInt64 = 0

    /// The devices table: a rowid table, its key an index beside it. WITHOUT ROWID (as it was) keeps a row in the
    /// key's b-tree, where a row over ~1 KB spills into an overflow page: a device's ~2 KB of JSON took a 4 KB page
    /// of its own, written again each time the row changed or was marked out of memory, and checkpoints of tens of
    /// thousands of devices leaving memory held detection's thread for seconds (inserts ~2.4 times slower,
    /// measured with 2 KB rows).
    static let devicesColumns =
        "app TEXT NOT NULL, user TEXT NOT NULL, state BLOB NOT NULL, resident INTEGER NOT NULL DEFAULT 1, PRIMARY KEY (app, user)"

    init(directory: String, shard: String) throws {
        let statePath = DataDirectory.file("detection.sqlite", in: directory)
        let outboxPath = DataDirectory.file("outbox.sqlite", in: directory)
        let state = try SQLiteDatabase(path: statePath)
        let database = try SQLiteDatabase(path: outboxPath)
        self.state = state
        self.database = database
        try state.execute(
            """
            CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS checkpoint(id INTEGER PRIMARY KEY CHECK (id = 1), input INTEGER NOT NULL,
                taken_at REAL NOT NULL, state BLOB NOT NULL);
            CREATE TABLE IF NOT EXISTS devices(\(Self.devicesColumns));
            CREATE TABLE IF NOT EXISTS positions(feed TEXT PRIMARY KEY, position INTEGER NOT NULL);
            \(DeviceRowCodec.schema);
            """)
        try rows.load(from: state)
        try database.execute(
            """
            CREATE TABLE IF NOT EXISTS inputs(seq INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, at REAL NOT NULL,
                body TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS outbox(position INTEGER PRIMARY KEY AUTOINCREMENT, event_id TEXT NOT NULL UNIQUE,
                name TEXT NOT NULL, app TEXT NOT NULL, user TEXT NOT NULL, event BLOB NOT NULL);
            CREATE TABLE IF NOT EXISTS unapplied(id INTEGER PRIMARY KEY, noted_at REAL NOT NULL, app TEXT NOT NULL,
                user TEXT NOT NULL, t REAL NOT NULL, kind TEXT NOT NULL, reason TEXT NOT NULL, applied_up_to REAL,
                record TEXT NOT NULL);
            CREATE UNIQUE INDEX IF NOT EXISTS unapplied_by_record ON unapplied(app, user, t, record);
            CREATE TABLE IF NOT EXISTS journal_gaps(journal TEXT NOT NULL, position INTEGER NOT NULL,
                endpoint TEXT NOT NULL, shard TEXT NOT NULL, deleted_through INTEGER NOT NULL, found_at REAL NOT NULL,
                acknowledged_at REAL, PRIMARY KEY (journal, position));
            """)
        try Self.moveInputsAndOutbox(from: state, to: outboxPath)
        // A store written before eviction existed: every device in it was in memory.
        var hasResident = false
        try state.statement("PRAGMA table_info(devices)").query { row in
            if row.text(1) == "resident" { hasResident = true }
        }
        if !hasResident { try state.execute("ALTER TABLE devices ADD COLUMN resident INTEGER NOT NULL DEFAULT 1") }
        // A store whose devices table was WITHOUT ROWID: copied once into a rowid table (see `devicesColumns`).
        var withoutRowID = false
        try state.statement("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'devices'").query { row in
            withoutRowID = row.text(0).uppercased().contains("WITHOUT ROWID")
        }
        if withoutRowID {
            try state.transaction {
                try state.execute(
                    """
                    CREATE TABLE devices_rowid(\(Self.devicesColumns));
                    INSERT INTO devices_rowid(app, user, state, resident) SELECT app, user, state, resident FROM devices;
                    DROP TABLE devices;
                    ALTER TABLE devices_rowid RENAME TO devices;
                    """)
            }
        }
        func meta(_ key: String) throws -> String? {
            var value: String?
            try state.statement("SELECT value FROM meta WHERE key = ?").query(key) { value = $0.text(0) }
            return value
        }
        let setMeta = try state.statement("INSERT INTO meta(key, value) VALUES (?, ?)")
        if let stored = try meta("shard") {
            guard stored == shard else {
                throw StorageError(
                    code: -1,
                    message:
                        "\(directory) holds the state of detection shard \(stored), not \(shard): give each shard its own --data-dir"
                )
            }
        } else {
            try setMeta.run("shard", shard)
        }
        if let stored = try meta("outbox_feed") {
            feedID = stored
        } else {
            feedID = "detection-" + UUID().uuidString.lowercased()
            try setMeta.run("outbox_feed", feedID)
        }
        head = UInt64(try database.integer("SELECT seq FROM sqlite_sequence WHERE name = 'outbox'") ?? 0)
        checkpoints = try CheckpointWriter(path: statePath, rows: rows)
    }

    /// A store of one file (before checkpoints were written off the reactor thread): its inputs and outbox move to
    /// `outbox.sqlite`, with their sequence numbers (positions the notifier knows, inputs a checkpoint names). Each
    /// file's part is a transaction; a move cut short is done again at the next start (rows already moved are kept).
    private static func moveInputsAndOutbox(from state: SQLiteDatabase, to outboxPath: String) throws {
        var oldTables: [String] = []
        try state.statement("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('inputs', 'outbox')")
            .query { oldTables.append($0.text(0)) }
        guard !oldTables.isEmpty else { return }
        try state.statement("ATTACH DATABASE ? AS moved").run(outboxPath)
        defer { try? state.execute("DETACH DATABASE moved") }
        try state.transaction {
            for table in oldTables.sorted() {
                try state.execute(
                    """
                    INSERT OR IGNORE INTO moved.\(table) SELECT * FROM main.\(table);
                    DELETE FROM moved.sqlite_sequence WHERE name = '\(table)';
                    INSERT INTO moved.sqlite_sequence(name, seq) SELECT name, seq FROM main.sqlite_sequence WHERE name = '\(table)';
                    """)
            }
        }
        try state.transaction {
            for table in oldTables { try state.execute("DROP TABLE main.\(table)") }
        }
    }

    // MARK: Checkpoints

    func loadCheckpoint() throws -> Checkpoint? {
        var checkpoint: Checkpoint?
        try state.statement("SELECT input, state FROM checkpoint WHERE id = 1").query { row in
            checkpoint = Checkpoint(input: row.integer(0), shared: row.blob(1), devices: [], positions: [:])
        }
        guard var found = checkpoint else { return nil }
        try state.statement("SELECT app, user, state FROM devices WHERE resident = 1").query { row in
            let device = DeviceID(app: row.text(0), user: row.text(1))
            found.devices.append((device, try rows.json(row.blob(2), of: device)))
        }
        try state.statement("SELECT feed, position FROM positions").query { row in
            found.positions[row.text(0)] = row.unsigned(1)
        }
        return found
    }

    /// A device leaving memory whose row holds its current state: only marked out of memory. `encode` gives its
    /// state for the case the row is missing (it should not be; a missing row would lose the device).
    struct MarkedEviction: Sendable {
        var device: DeviceID
        var encode: @Sendable () throws -> [UInt8]
    }

    /// Deletes the inputs a written checkpoint holds.
    func forgetInputs(through input: Int64) throws {
        try database.statement("DELETE FROM inputs WHERE seq <= ?").run(input)
    }

    /// Closes both files (the checkpoint writer's connection after what it is writing).
    func close() {
        checkpoints.close()
        state.close()
        database.close()
    }

    // MARK: Devices out of memory

    /// Every device that left memory (for the index that spares a lookup for devices never seen).
    func forEachEvictedDevice(_ body: (DeviceID) -> Void) throws {
        try state.statement("SELECT app, user FROM devices WHERE resident = 0").query { row in
            body(DeviceID(app: row.text(0), user: row.text(1)))
        }
    }

    /// The state of a device that left memory (a primary-key lookup), nil if it did not.
    func evictedState(of device: DeviceID) throws -> [UInt8]? {
        var found: [UInt8]?
        try state.statement("SELECT state FROM devices WHERE app = ? AND user = ? AND resident = 0")
            .query(device.app, device.user) { found = try rows.json($0.blob(0), of: device) }
        return found
    }

    /// The devices of an application that left memory, with their states (a command for every device of it).
    func evictedStates(app: String) throws -> [(DeviceID, [UInt8])] {
        var states: [(DeviceID, [UInt8])] = []
        try state.statement("SELECT user, state FROM devices WHERE app = ? AND resident = 0 ORDER BY user")
            .query(app) { row in
                let device = DeviceID(app: app, user: row.text(0))
                states.append((device, try rows.json(row.blob(1), of: device)))
            }
        return states
    }

    // MARK: Inputs and events

    /// The most `unapplied` rows kept (the newest).
    static let unappliedKept: Int64 = 100_000

    /// Stores inputs, the events they gave and the records they could not apply, in one transaction (one fsync):
    /// after this, the events may leave. Returns the sequence number of the last input. Events already in the
    /// outbox and records already in `unapplied` (a re-run) are not added again.
    @discardableResult
    func commit(
        inputs: [DetectionInput], events: [RoadSaveEvent], unapplied: [UnappliedRecord] = [],
        at time: Double
    ) throws -> Int64? {
        guard !inputs.isEmpty || !events.isEmpty || !unapplied.isEmpty else { return nil }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        var last: Int64?
        try database.transaction {
            let input = try database.statement("INSERT INTO inputs(kind, at, body) VALUES (?, ?, ?)")
            for entry in inputs {
                try input.run(entry.kind, time, String(decoding: try encoder.encode(entry), as: UTF8.self))
                last = database.lastInsertRowID
            }
            let event = try database.statement(
                "INSERT OR IGNORE INTO outbox(event_id, name, app, user, event) VALUES (?, ?, ?, ?, ?)")
            for item in events {
                try event.run(item.eventID, item.name, item.device.app, item.device.user, EventBody.encode(item))
                if database.changes > 0 { head = UInt64(database.lastInsertRowID) }
            }
            guard !unapplied.isEmpty else { return }
            let insert = try database.statement(
                "INSERT OR IGNORE INTO unapplied(noted_at, app, user, t, kind, reason, applied_up_to, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
            )
            for item in unapplied {
                let record = item.record
                try insert.run(
                    time, record.device.app, record.device.user, record.t, record.kind.rawValue, item.code,
                    item.appliedUpTo, record.json())
            }
        }
        return last
    }

    /// Keeps the newest `unappliedKept` rows of `unapplied` (with each checkpoint).
    func trimUnapplied() throws {
        try database.statement("DELETE FROM unapplied WHERE id <= (SELECT max(id) FROM unapplied) - ?").run(
            Self.unappliedKept)
    }

    /// Rows in `unapplied` (the stop line and tests; not for a hot path).
    func unappliedCount() throws -> Int {
        Int(try database.integer("SELECT count(*) FROM unapplied") ?? 0)
    }

    /// The inputs after `seq`, in order.
    func inputs(after seq: Int64) throws -> [(seq: Int64, input: DetectionInput)] {
        let decoder = JSONDecoder()
        var result: [(Int64, DetectionInput)] = []
        try database.statement("SELECT seq, body FROM inputs WHERE seq > ? ORDER BY seq").query(seq) { row in
            result.append((row.integer(0), try decoder.decode(DetectionInput.self, from: Data(row.text(1).utf8))))
        }
        return result
    }

    /// The last input stored (0 when none ever was).
    func lastInput() throws -> Int64 {
        try database.integer("SELECT seq FROM sqlite_sequence WHERE name = 'inputs'") ?? 0
    }

    /// Events waiting for the notifier.
    func outboxCount() throws -> Int {
        Int(try database.integer("SELECT count(*) FROM outbox") ?? 0)
    }

    // MARK: Journal gaps

    /// Every gap kept, in the order found.
    func journalGaps() throws -> [JournalGap] {
        var gaps: [JournalGap] = []
        try database.statement(
            """
            SELECT journal, endpoint, shard, position, deleted_through, acknowledged_at IS NOT NULL FROM journal_gaps
            ORDER BY found_at, journal, position
            """
        ).query { row in
            gaps.append(
                JournalGap(
                    journal: row.text(0), endpoint: row.text(1), shard: row.text(2),
                    position: row.unsigned(3), deletedThrough: row.unsigned(4),
                    acknowledged: row.integer(5) != 0))
        }
        return gaps
    }

    /// Stores a gap found (or one that grew: its new end, not acknowledged).
    func saveJournalGap(_ gap: JournalGap, at time: Double) throws {
        try database.statement(
            """
            INSERT INTO journal_gaps(journal, position, endpoint, shard, deleted_through, found_at, acknowledged_at)
            VALUES (?, ?, ?, ?, ?, ?, NULL)
            ON CONFLICT (journal, position) DO UPDATE SET deleted_through = excluded.deleted_through,
                acknowledged_at = NULL
            """
        ).run(gap.journal, gap.position, gap.endpoint, gap.shard, gap.deletedThrough, time)
    }

    /// Marks gaps acknowledged (one transaction).
    func acknowledgeJournalGaps(_ gaps: [JournalGap], at time: Double) throws {
        let update = try database.statement(
            "UPDATE journal_gaps SET acknowledged_at = ? WHERE journal = ? AND position = ?")
        try database.transaction {
            for gap in gaps { try update.run(time, gap.journal, gap.position) }
        }
    }

    // MARK: The outbox as a feed for the notifier

    func read(_ request: FeedRequest) throws -> FeedBatch {
        var items: [ArraySlice<UInt8>] = []
        var to = request.after
        var bytes = 0
        let through = request.through.map { Int64(bitPattern: $0) } ?? Int64.max
        try database.statement(
            "SELECT position, event FROM outbox WHERE position > ? AND position <= ? ORDER BY position LIMIT ?"
        )
        .query(request.after, through, request.maxItems) { row in
            guard items.isEmpty || bytes < request.maxBytes else { return }
            let event = row.blob(1)
            bytes += event.count
            items.append(event[...])
            to = row.unsigned(0)
        }
        return FeedBatch(items: items, to: to)
    }

    func acknowledged(_ request: FeedRequest) {
        guard request.acknowledged > acknowledgedPosition else { return }
        do {
            try database.statement("DELETE FROM outbox WHERE position <= ?").run(request.acknowledged)
            acknowledgedPosition = request.acknowledged
        } catch {
            // Kept rows are only sent again (the notifier drops what it has); the next acknowledgement retries.
            Log(category: "detection").warning("outbox not trimmed", ["error": "\(error)"])
        }
    }
}
