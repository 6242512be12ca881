import Feeds
import Foundation
import Logging
import RecordCodecs
import RoadSaveModel
import Storage
import Wire

#if canImport(Glibc)
    import Glibc
#endif

/// sensor-ingest's journal: every accepted record, stored durably before its batch is acknowledged, in
/// `<data-dir>/journal.sqlite` (SQLite, WAL, `synchronous=FULL`: a commit is fsync'd). Detection pulls records from
/// it by position through a `FeedServer` (this is its `FeedSource`), each detection shard at its own pace.
///
/// Schema (readable with the `sqlite3` shell, e.g. `sqlite3 roadsave-data/ingest/journal.sqlite`):
///
///     -- Fixed when the journal is created.
///     meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)
///         journal_id   random; the feed's ID (a new journal is a new feed, whose positions start again)
///         shards       the --shards the journal was created with (positions are per shard: it cannot change)
///         created_at   Unix seconds
///         format       1
///     -- One row per (gateway batch, shard): the accepted records of that batch whose device hashes to the shard
///     -- (DeviceShard.of(_:shards:)), in batch order, as one MessagePack array (PROTOCOL §2 maps): the records'
///     -- bytes as the gateway sent them when it sent MessagePack (not encoded again), else encoded by ingest.
///     -- `position` is the feed position; AUTOINCREMENT, so a position is never reused after deletions.
///     chunks(position INTEGER PRIMARY KEY AUTOINCREMENT, shard INTEGER NOT NULL, records INTEGER NOT NULL,
///            received_at REAL NOT NULL, batch TEXT, body BLOB NOT NULL)
///         index chunks_by_position_shard (position, shard)   what a detection shard reads
///     -- What each consumer (detection shard) has checkpointed: retention never deletes past it by age.
///     consumers(consumer TEXT PRIMARY KEY, shard INTEGER, shards INTEGER, acknowledged INTEGER NOT NULL,
///               seen_at REAL NOT NULL)
///     -- Every device ingest has accepted records of (written in the transaction of its first records), so the
///     -- --max-devices-per-app limit holds across restarts. `last_seen` is saved at most every
///     -- KnownDevices.saveInterval; a device without records for --device-idle-age is deleted: its slot is free.
///     devices(app TEXT NOT NULL, user TEXT NOT NULL, first_seen REAL NOT NULL, last_seen REAL,
///             PRIMARY KEY (app, user))
///     -- Per shard, the highest position retention (by age or size) has deleted: a consumer asking for records
///     -- after a lower position is told (`FeedReplyHeader.deletedThrough`), since some of what it asks for is gone.
///     -- Written in the transaction of the deletion. A journal made before this table has its deletions estimated
///     -- once when opened, from the positions missing and what consumers had acknowledged (`estimateDeletedThrough`).
///     deleted_through(shard INTEGER PRIMARY KEY, position INTEGER NOT NULL)
///
/// Handy queries: `SELECT shard, count(*), sum(records) FROM chunks GROUP BY shard;`,
/// `SELECT consumer, acknowledged, datetime(seen_at, 'unixepoch') FROM consumers;`,
/// `SELECT app, count(*), datetime(min(last_seen), 'unixepoch') FROM devices GROUP BY app;`. A consumer that is gone for good
/// (detection resharded) keeps protecting its shards from the age rule until its row is deleted
/// (`DELETE FROM consumers WHERE consumer = '…';`, with ingest stopped or not).
///
/// Owned by one thread (ingest's reactor thread): open, use and close it there. Another process may read the file.
public final class Journal: FeedSource {
    public static let fileName = "journal.sqlite"
    static let format = "1"

    public let path: String
    public let feedID: String
    public let shards: Int
    /// Unix seconds.
    public let createdAt: Double
    /// Seconds a chunk is kept at least (and then until its consumers have acknowledged it).
    public let retentionAge: Double
    /// Largest size of the journal in bytes, 0 for no limit.
    public let maximumBytes: Int64
    /// The newest position (0 before the first chunk). Positions are never reused, so it never goes back.
    public internal(set) var head: UInt64
    public internal(set) var statistics = JournalStatistics()
    /// Per shard, the highest position retention has deleted (0: nothing of it yet).
    public internal(set) var deletedThrough: [UInt64] {
        // Whatever retention deletes, by age or by size, the tail must not serve any more.
        didSet { tail.forget(through: deletedThrough.max() ?? 0) }
    }

    let database: SQLiteDatabase
    let log: Log
    let clock: () -> Double
    var consumers: [String: JournalConsumer] = [:]
    var unsavedConsumers: Set<String> = []
    private var isOpen = true
    var devices: KnownDevices
    /// The newest chunks, served to the feed from memory (`JournalTail`).
    var tail = JournalTail(maximumBytes: Journal.tailBytes)
    /// Bytes of feed items `tail` keeps: some 80,000 records, far more than detection has not read when it keeps up
    /// (about a hundred chunks under the benchmark's load); one further behind reads from the store.
    static let tailBytes = 8 << 20
    /// When idle devices were last looked for (Unix seconds).
    var lastDeviceSweep: Double?
    /// Seconds between looks for idle devices (each look visits every known device).
    static let deviceSweepInterval = 60.0
    /// The page size of a new journal: a chunk of a gateway batch is tens of KiB, and SQLite writes (to the log, then
    /// to the file) and reads a page per system call, so large pages cut those calls; a journal made with 4 KiB pages
    /// keeps them.
    static let pageSize = 65_536

    /// Opens (creating if needed) the journal of `directory`. Throws a `JournalError` when the journal was created with
    /// another shard count, a `StorageError` when SQLite cannot open it. One process per data directory is the
    /// service command's business (`DataDirectoryLock`), not the journal's.
    /// `clock` gives Unix seconds (tests set it).
    /// `deviceIdleAge`: seconds without records after which a device's slot is freed (0: never).
    public init(
        directory: String, shards: Int, retentionAge: Double = 86_400, maximumBytes: Int64 = 0,
        maximumDevicesPerApplication: Int = 100_000, deviceIdleAge: Double = 0,
        positionScanRecords: Int = Journal.positionScanRecords, log: Log,
        clock: @escaping () -> Double = { Date().timeIntervalSince1970 }
    ) throws {
        precondition(shards > 0, "a journal needs at least one shard")
        self.shards = shards
        self.retentionAge = retentionAge
        self.maximumBytes = maximumBytes
        self.log = log
        self.clock = clock
        let path = DataDirectory.file(Self.fileName, in: directory)
        self.path = path
        let database = try SQLiteDatabase(path: path, synchronous: .full, pageSize: Self.pageSize)
        let meta = try Self.prepare(database, shards: shards, now: clock())
        guard meta.format == Self.format else {
            throw JournalError("\(path) has format \(meta.format); this ingest reads format \(Self.format)")
        }
        guard meta.shards == shards else {
            throw JournalError(
                """
                \(path) was created with --shards \(meta.shards), and this ingest has --shards \(shards). Positions are \
                per shard, so a journal's shard count cannot change: run with --shards \(meta.shards), or give a new \
                --data-dir (detection then reads the new journal from its start)
                """)
        }
        if !meta.replacedIndexes.isEmpty {
            log.info(
                "journal upgraded: its chunks are found by (position, shard), and by halving positions for an age",
                ["path": path, "replacedIndexes": meta.replacedIndexes.joined(separator: ",")])
        }
        var consumers: [String: JournalConsumer] = [:]
        try database.statement("SELECT consumer, shard, shards, acknowledged, seen_at FROM consumers").query { row in
            let consumer = JournalConsumer(
                name: row.text(0), shard: row.isNull(1) ? nil : Int(row.integer(1)),
                shards: row.isNull(2) ? nil : Int(row.integer(2)),
                acknowledged: row.unsigned(3), seenAt: row.double(4))
            consumers[consumer.name] = consumer
        }
        let head = UInt64(try database.integer("SELECT seq FROM sqlite_sequence WHERE name = 'chunks'") ?? 0)
        var deletedThrough = [UInt64](repeating: 0, count: shards)
        try database.statement("SELECT shard, position FROM deleted_through").query { row in
            let shard = Int(row.integer(0))
            if deletedThrough.indices.contains(shard) { deletedThrough[shard] = row.unsigned(1) }
        }
        self.deletedThrough = deletedThrough
        let unread = try Self.unreadChunks(
            database, acknowledged: consumers.values.map(\.acknowledged).min() ?? 0,
            records: positionScanRecords)
        var devices = KnownDevices(limit: maximumDevicesPerApplication, idleAge: deviceIdleAge, shards: shards)
        // A device saved before last_seen existed counts as seen now: its idle time starts with this version.
        try database.statement("SELECT app, user, coalesce(last_seen, ?) FROM devices").query([clock()]) { row in
            devices.load(DeviceID(app: row.text(0), user: row.text(1)), lastSeen: row.double(2), head: unread)
        }
        try Self.findLastPositions(database, after: unread, in: &devices)
        self.devices = devices
        self.head = head
        feedID = meta.journalID
        createdAt = meta.createdAt
        self.consumers = consumers
        self.database = database
    }

    deinit {
        close()
    }

    /// Saves what consumers acknowledged, folds the write-ahead log into the file and closes. Safe to call twice.
    public func close() {
        guard isOpen else { return }
        isOpen = false
        do {
            try database.transaction { try saveConsumers() }
            try database.checkpointLog()
        } catch {
            log.warning("journal not closed cleanly (it will recover when opened)", ["error": "\(error)"])
        }
        database.close()
    }

    // MARK: Devices

    /// Whether records of `device` may be accepted: its slot number if it is known, or if its application has fewer
    /// than `maximumDevicesPerApplication` devices (it is then known, tentatively until the next `append` stores it
    /// with its records; if that fails it is forgotten again); nil if not. `now`: when its records came (Unix
    /// seconds; nil reads the journal's clock). The number goes with the record to `append` (`Batch.slots`).
    @discardableResult
    public func admit(_ device: DeviceID, at now: Double? = nil) -> Int? {
        devices.admit(device, now: now ?? clock(), head: head)
    }

    /// `admit` for the device of each of `records`, in order: a gateway batch's, asked at once. The slot numbers of
    /// the records admitted, and the indexes of those refused.
    public func admit(devicesOf records: [SensorRecord], at now: Double? = nil) -> (slots: [Int], refused: [Int]) {
        devices.admit(devicesOf: records, now: now ?? clock(), head: head)
    }

    /// The journal's clock (Unix seconds): a gateway batch's records all came at one time.
    public var now: Double { clock() }

    /// Whether `device` holds a slot.
    public func knows(_ device: DeviceID) -> Bool { devices.contains(device) }

    /// Why a record of a device `admit` refused was not accepted.
    public func refusal(forNewDeviceOf application: String) -> String { devices.refusal(for: application) }

    /// Devices known for `application` (stored, or admitted and about to be).
    public func deviceCount(of application: String) -> Int { devices.count(of: application) }

    public var maximumDevicesPerApplication: Int { devices.limit }

    // MARK: Inspection

    /// Size and positions, for the logs at start and stop (counts every chunk: not for a hot path).
    /// The oldest chunk kept (its position, and when it was stored, in seconds since 1970) and the bytes in use: what
    /// /metrics shows of the journal, cheap enough for every post (the first row by key; `summary` counts them all).
    public func oldestChunkAndBytes() throws -> (oldest: (position: UInt64, receivedAt: Double)?, bytes: Int64) {
        var oldest: (position: UInt64, receivedAt: Double)?
        try database.statement("SELECT position, received_at FROM chunks ORDER BY position LIMIT 1").query { row in
            oldest = (row.unsigned(0), row.double(1))
        }
        return (oldest, try database.bytesInUse())
    }

    public func summary() throws -> JournalSummary {
        var summary = JournalSummary(chunks: 0, records: 0, oldest: nil, head: head, bytes: try database.bytesInUse())
        try database.statement("SELECT count(*), coalesce(sum(records), 0), min(position) FROM chunks").query { row in
            summary.chunks = Int(row.integer(0))
            summary.records = Int(row.integer(1))
            summary.oldest = row.isNull(2) ? nil : row.unsigned(2)
        }
        return summary
    }

    // MARK: Opening

    /// Most records read at opening to find where known devices' records end (`findLastPositions`): about a
    /// second's work.
    public static let positionScanRecords = 2_000_000

    /// Where the chunks consumers may still have to read begin (positions after the one returned): after the
    /// oldest position a consumer acknowledged, and no more than the newest `records` records.
    private static func unreadChunks(_ database: SQLiteDatabase, acknowledged: UInt64, records limit: Int) throws
        -> UInt64
    {
        var start = acknowledged
        var records = 0
        do {
            try database.statement("SELECT position, records FROM chunks WHERE position > ? ORDER BY position DESC")
                .query([acknowledged]) { row in
                    records += Int(row.integer(1))
                    guard records <= limit else {
                        start = row.unsigned(0)
                        throw StopReading()
                    }
                }
        } catch is StopReading {}
        return start
    }

    /// Positions are not stored (`KnownDevices.Slot.lastPosition`): at opening, the chunks after `start` are read
    /// again for their devices, so a detection far behind learns where each device's records end as exactly as
    /// before the restart. Devices not in them end no later than `start`.
    private static func findLastPositions(
        _ database: SQLiteDatabase, after start: UInt64,
        in devices: inout KnownDevices
    ) throws {
        let identifiers = IdentifierCache()
        try database.statement("SELECT position, body FROM chunks WHERE position > ? ORDER BY position")
            .query([start]) { row in
                let position = row.unsigned(0)
                guard
                    let batch = try? RecordBatch.decodeBatch(
                        row.blob(1), contentType: .msgpack,
                        identifiers: identifiers)
                else { return }
                var previous: DeviceID?
                for case (_, .success(let record)) in batch.records where record.device != previous {
                    previous = record.device
                    devices.noteStored(record.device, at: position)
                }
            }
    }
}
