import Feeds
import Foundation
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
///         index chunks_by_shard (shard, position)   what a detection shard reads
///         index chunks_by_time (received_at)         where retention by age starts
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
    public private(set) var head: UInt64
    public private(set) var statistics = JournalStatistics()
    /// Per shard, the highest position retention has deleted (0: nothing of it yet).
    public private(set) var deletedThrough: [UInt64] {
        // Whatever retention deletes, by age or by size, the tail must not serve any more.
        didSet { tail.forget(through: deletedThrough.max() ?? 0) }
    }

    private let database: SQLiteDatabase
    private let log: Log
    private let clock: () -> Double
    private var consumers: [String: JournalConsumer] = [:]
    private var unsavedConsumers: Set<String> = []
    private var isOpen = true
    private var devices: KnownDevices
    /// The newest chunks, served to the feed from memory (`JournalTail`).
    private var tail = JournalTail(maximumBytes: Journal.tailBytes)
    /// Bytes of feed items `tail` keeps: some 80,000 records, far more than detection has not read when it keeps up
    /// (about a hundred chunks under the benchmark's load); one further behind reads from the store.
    static let tailBytes = 8 << 20
    /// When idle devices were last looked for (Unix seconds).
    private var lastDeviceSweep: Double?
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

    /// The journal's clock (Unix seconds): a gateway batch's records all came at one time.
    public var now: Double { clock() }

    /// Whether `device` holds a slot.
    public func knows(_ device: DeviceID) -> Bool { devices.contains(device) }

    /// Why a record of a device `admit` refused was not accepted.
    public func refusal(forNewDeviceOf application: String) -> String { devices.refusal(for: application) }

    /// Devices known for `application` (stored, or admitted and about to be).
    public func deviceCount(of application: String) -> Int { devices.count(of: application) }

    public var maximumDevicesPerApplication: Int { devices.limit }

    // MARK: Appending

    /// The accepted records of one gateway batch.
    public struct Batch: Sendable {
        /// The gateway's batchID, for the operator (`batch` column).
        public var id: String?
        public var records: [SensorRecord]
        /// The records' MessagePack as the gateway sent them, when it did (nil: they are encoded here).
        public var encoded: GatewayBody?
        /// The gateway's stream and watermark, when the batch had a header.
        public var header: GatewayBatchHeader?
        /// Each record's device's slot number from `admit` (nil: found by device here).
        public var slots: [Int]?

        public init(
            id: String?, records: [SensorRecord], encoded: GatewayBody? = nil, header: GatewayBatchHeader? = nil,
            slots: [Int]? = nil
        ) {
            precondition(encoded.map { $0.ranges.count == records.count } ?? true, "a range per record")
            precondition(slots.map { $0.count == records.count } ?? true, "a slot per record")
            self.id = id
            self.records = records
            self.encoded = encoded
            self.header = header
            self.slots = slots
        }

        /// `chunks(shards:shard:)`, with an empty chunk for every shard the records left out when the batch has a
        /// header: a gateway's watermark concerns every shard.
        func chunksWithHeader(shards: Int, shard: (Int) -> Int) -> [(
            shard: Int, count: Int, body: [UInt8], indexes: [Int]?
        )] {
            let filled = chunks(shards: shards, shard: shard)
            guard header != nil, filled.count < shards else { return filled }
            var byShard: [Int: (shard: Int, count: Int, body: [UInt8], indexes: [Int]?)] = [:]
            for chunk in filled { byShard[chunk.shard] = chunk }
            return (0..<shards).map { byShard[$0] ?? ($0, 0, MessagePackFraming.arrayHeader(0), []) }
        }

        /// The chunk bodies of this batch, one per shard it has records of, in shard order: (shard, records, body,
        /// the indexes of its records in `records`, nil for all of them). `shard` gives the shard of the record at
        /// an index.
        func chunks(shards: Int, shard: (Int) -> Int) -> [(shard: Int, count: Int, body: [UInt8], indexes: [Int]?)] {
            guard !records.isEmpty else { return [] }
            let firstShard = shards > 1 ? shard(0) : 0
            let oneShard = shards == 1 || records.indices.dropFirst().allSatisfy { shard($0) == firstShard }
            if oneShard {
                let body: [UInt8]
                if let encoded {
                    body =
                        encoded.isWholeBody
                        ? encoded.body : MessagePackFraming.array(of: encoded.ranges, in: encoded.body)
                } else {
                    body = RecordBatch.encodeBatch(records, as: .msgpack)
                }
                return [(firstShard, records.count, body, nil)]
            }
            // Several shards: each gets the records of its devices, in batch order.
            var byShard = [[Int]](repeating: [], count: shards)
            var used: [Int] = []
            for index in records.indices {
                let shard = shard(index)
                if byShard[shard].isEmpty { used.append(shard) }
                byShard[shard].append(index)
            }
            return used.sorted().map { shard in
                let indexes = byShard[shard]
                let body: [UInt8]
                if let encoded {
                    var ranges: [Range<Int>] = []
                    ranges.reserveCapacity(indexes.count)
                    for index in indexes { ranges.append(encoded.ranges[index]) }
                    body = MessagePackFraming.array(of: ranges, in: encoded.body)
                } else {
                    body = RecordBatch.encodeBatch(indexes.map { records[$0] }, as: .msgpack)
                }
                return (shard, indexes.count, body, indexes)
            }
        }
    }

    /// Stores `batches` in one transaction (group commit: one fsync for all): each batch becomes one chunk per shard
    /// it has records of, and the devices admitted since the last append are written to `devices`. When this returns,
    /// the records are durable; when it throws, none of them is stored (and those devices are unknown again).
    /// Returns the positions of the new chunks (nil when there was nothing to store).
    @discardableResult
    public func append(_ batches: [Batch]) throws -> ClosedRange<UInt64>? {
        let receivedAt = clock()
        let insert = try database.statement(
            "INSERT INTO chunks (shard, records, received_at, batch, body, gateway, watermark) VALUES (?, ?, ?, ?, ?, ?, ?)"
        )
        var chunks = 0
        var records = 0
        // Where each batch's devices' records went: (batch, the chunk's position, its record indexes or nil for all),
        // and the chunk for the tail.
        var stored: [(batch: Int, position: UInt64, indexes: [Int]?)] = []
        var added: [JournalTail.Chunk] = []
        let saveDevice = try database.statement(
            """
            INSERT INTO devices (app, user, first_seen, last_seen) VALUES (?, ?, ?, ?)
            ON CONFLICT (app, user) DO UPDATE SET last_seen = max(coalesce(last_seen, 0), excluded.last_seen)
            """)
        do {
            try database.transaction {
                for (device, lastSeen) in devices.unsaved {
                    try saveDevice.run(device.app, device.user, receivedAt, lastSeen)
                }
                for (number, batch) in batches.enumerated() {
                    let watermark = batch.header.flatMap { header -> Double? in
                        if case .watermark(let time) = header.progress { time } else { nil }
                    }
                    for chunk in batch.chunksWithHeader(shards: shards, shard: shardFinder(batch)) {
                        try insert.run(
                            chunk.shard, chunk.count, receivedAt, batch.id, chunk.body, batch.header?.gateway,
                            watermark)
                        let position = UInt64(database.lastInsertRowID)
                        stored.append((number, position, chunk.indexes))
                        let item = batch.header.map {
                            JournalChunk(records: chunk.body, header: $0, shard: chunk.shard).item
                        }
                        added.append(
                            JournalTail.Chunk(
                                position: position, shard: chunk.shard, size: chunk.body.count,
                                item: item ?? chunk.body))
                        chunks += 1
                        records += chunk.count
                    }
                }
            }
        } catch {
            devices.rollBack()
            throw error
        }
        _ = devices.commit()
        for chunk in added { tail.add(chunk) }
        for (number, position, indexes) in stored {
            let batch = batches[number]
            if let slots = batch.slots {
                if let indexes {
                    for index in indexes { devices.noteStored(slot: slots[index], at: position) }
                } else {
                    for slot in slots { devices.noteStored(slot: slot, at: position) }
                }
            } else {
                var previous: DeviceID?
                // A run of one device's records (gateways often send several together) is noted once.
                for index in indexes ?? Array(batch.records.indices) where batch.records[index].device != previous {
                    previous = batch.records[index].device
                    devices.noteStored(batch.records[index].device, at: position)
                }
            }
        }
        guard chunks > 0 else { return nil }
        let last = UInt64(database.lastInsertRowID)
        head = last
        statistics.commits += 1
        statistics.appendedChunks += chunks
        statistics.appendedRecords += records
        return (last - UInt64(chunks) + 1)...last
    }

    /// The shard of each of `batch`'s records, by index: from their slots, else worked out from their devices.
    private func shardFinder(_ batch: Batch) -> (Int) -> Int {
        if shards == 1 { return { _ in 0 } }
        if let slots = batch.slots { return { self.devices.shard(ofSlot: slots[$0]) } }
        return { [shards] in DeviceShard.of(batch.records[$0].device, shards: shards) }
    }

    // MARK: FeedSource

    /// Ends a query early (a reply is full, enough chunks are chosen).
    private struct StopReading: Error {}

    /// The chunks after `request.after` (through `request.through`) of `request.shard` (every shard when nil), in
    /// position order: at most `maxItems`, and no more than `maxBytes` unless the first alone is larger. Each item is a
    /// `JournalChunk`: the chunk's body, a MessagePack array of records, with its gateway header when it has one. The batch's
    /// `to` is the last chunk's position; when the request gives `through` and everything up to it was read, `to` is
    /// `through` (or the head, if lower), so a consumer re-reading a range learns that it has it all.
    public func read(_ request: FeedRequest) throws -> FeedBatch {
        if let requested = request.shards, requested != shards {
            throw JournalError(
                """
                this journal has \(shards) shards; the request is for shard \(request.shard ?? 0) of \(requested) \
                (detection's --shard I/N must count the shards as ingest's --shards does)
                """)
        }
        let through = min(request.through ?? head, head)
        guard request.after < through else { return FeedBatch(items: [], to: request.after) }
        if let (items, last, full) = tail.read(
            shard: request.shard, after: request.after, through: through,
            maxItems: request.maxItems, maxBytes: request.maxBytes)
        {
            return Self.batch(items: items, last: last, full: full, request: request, through: through)
        }
        let statement: SQLiteStatement
        var parameters: [SQLiteBindable] = []
        if let shard = request.shard {
            statement = try database.statement(
                """
                SELECT position, length(body), body, gateway, watermark, shard FROM chunks
                WHERE shard = ? AND position > ? AND position <= ? ORDER BY position LIMIT ?
                """)
            parameters.append(shard)
        } else {
            statement = try database.statement(
                """
                SELECT position, length(body), body, gateway, watermark, shard FROM chunks
                WHERE position > ? AND position <= ? ORDER BY position LIMIT ?
                """)
        }
        parameters += [request.after, through, request.maxItems]
        var items: [[UInt8]] = []
        var bytes = 0
        var last: UInt64?
        var full = false
        do {
            try statement.query(parameters) { row in
                let size = Int(row.integer(1))
                if !items.isEmpty, bytes + size > request.maxBytes { throw StopReading() }
                if row.isNull(3) {
                    items.append(row.blob(2))
                } else {
                    let progress: GatewayBatchHeader.Progress = row.isNull(4) ? .end : .watermark(row.double(4))
                    items.append(
                        JournalChunk(
                            records: row.blob(2),
                            header: GatewayBatchHeader(gateway: row.text(3), progress: progress),
                            shard: Int(row.integer(5))
                        ).item)
                }
                bytes += size
                last = row.unsigned(0)
            }
        } catch is StopReading {
            full = true
        }
        if items.count >= request.maxItems { full = true }
        return Self.batch(items: items, last: last, full: full, request: request, through: through)
    }

    /// A reply of `items`, the last at `last`: it reaches `through` when the request gave one and was not cut short.
    private static func batch(items: [[UInt8]], last: UInt64?, full: Bool, request: FeedRequest, through: UInt64)
        -> FeedBatch
    {
        var to = last ?? request.after
        if request.through != nil, !full { to = max(to, through) }
        return FeedBatch(items: items, to: to)
    }

    /// Where each device's records end in the journal (`FeedRequest.watch`): the position of the last chunk stored
    /// with them since the journal was opened, else the head when the device was loaded or admitted; for a device
    /// not known, the head (nothing can be told of it).
    public func lastPositions(of devices: [DeviceID]) -> [UInt64] {
        devices.map { self.devices.lastPosition($0) ?? head }
    }

    /// Notes what the consumer has checkpointed; saved to the `consumers` table by the next `enforceRetention()` (a
    /// restart in between only makes retention keep more). A consumer counting shards differently is not noted: its
    /// reads fail, and it protects nothing.
    public func acknowledged(_ request: FeedRequest) {
        if let requested = request.shards, requested != shards { return }
        let consumer = JournalConsumer(
            name: request.consumer, shard: request.shard, shards: request.shards,
            acknowledged: min(request.acknowledged, head), seenAt: clock())
        consumers[request.consumer] = consumer
        unsavedConsumers.insert(request.consumer)
    }

    /// Consumers known, by name.
    public var knownConsumers: [String: JournalConsumer] { consumers }

    // MARK: Retention

    /// What one round of retention deleted.
    public struct RetentionOutcome: Sendable, Equatable {
        public var expiredChunks = 0
        public var trimmedChunks = 0
        public var droppedUnreadChunks = 0
        /// Records deleted unread, by shard.
        public var droppedUnreadRecords: [Int: Int] = [:]
    }

    /// Saves consumers' positions and applies the age and size rules (see `JournalRetention`). Cheap enough to run
    /// every few seconds: the age rule finds its boundary through an index and deletes by (shard, position); the size
    /// rule reads chunk sizes only when the journal is over its limit. A forced drop of unread records is logged as a
    /// warning and counted in `statistics`.
    @discardableResult
    public func enforceRetention() throws -> RetentionOutcome {
        var outcome = RetentionOutcome()
        let now = clock()
        let through = JournalRetention.acknowledgedThrough(consumers.values, shards: shards)
        var deleted = deletedThrough
        try database.transaction {
            try saveConsumers()
            // Chunks from position `young` on are within the retention age (positions follow arrival order; after a
            // step of the wall clock the boundary is approximate).
            let young =
                try database.statement(
                    "SELECT position FROM chunks WHERE received_at >= ? ORDER BY received_at LIMIT 1"
                ).integer(now - retentionAge)
                ?? Int64(bitPattern: head) + 1
            let highest = try database.statement("SELECT max(position) FROM chunks WHERE shard = ? AND position <= ?")
            let delete = try database.statement("DELETE FROM chunks WHERE shard = ? AND position <= ?")
            for shard in 0..<shards {
                guard let acknowledged = through[shard] else { continue }
                let limit = min(Int64(bitPattern: acknowledged), young - 1)
                guard limit > 0, let last = try highest.integer(shard, limit) else { continue }
                try delete.run(shard, limit)
                outcome.expiredChunks += database.changes
                deleted[shard] = max(deleted[shard], UInt64(last))
            }
            try saveDeletedThrough(deleted)
        }
        // Taken only once the deletion is committed: a rolled-back one deleted nothing.
        deletedThrough = deleted
        statistics.expiredChunks += outcome.expiredChunks
        try freeIdleDevices(now: now)
        if maximumBytes > 0 {
            // The size of a chunk is estimated, and pages free up in whole: a few rounds settle under the limit.
            for _ in 0..<4 {
                let used = try database.bytesInUse()
                guard used > maximumBytes, try trim(excess: used - maximumBytes, through: through, into: &outcome)
                else {
                    break
                }
            }
        }
        statistics.trimmedChunks += outcome.trimmedChunks
        statistics.droppedUnreadChunks += outcome.droppedUnreadChunks
        statistics.droppedUnreadRecords.merge(outcome.droppedUnreadRecords, uniquingKeysWith: +)
        if outcome.droppedUnreadChunks > 0 {
            let total = outcome.droppedUnreadRecords.values.reduce(0, +)
            let byShard = outcome.droppedUnreadRecords.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }
                .joined(separator: ",")
            log.warning(
                "journal over --journal-max-bytes: records dropped before detection read them",
                [
                    "records": String(total), "chunks": String(outcome.droppedUnreadChunks),
                    "recordsByShard": byShard, "limit": String(maximumBytes),
                ])
        }
        return outcome
    }

    /// Deletes chunks to free about `excess` bytes; false when there was nothing left to delete.
    private func trim(excess: Int64, through: [UInt64?], into outcome: inout RetentionOutcome) throws -> Bool {
        var cut = JournalRetention.SizeCut(excess: excess, acknowledgedThrough: through)
        let chunks = try database.statement(
            "SELECT position, shard, records, length(body) FROM chunks ORDER BY position")
        func scan(_ consider: (inout JournalRetention.SizeCut, JournalRetention.Chunk) -> Void) throws {
            guard !cut.isEnough else { return }
            do {
                try chunks.query { row in
                    let chunk = JournalRetention.Chunk(
                        position: row.integer(0), shard: Int(row.integer(1)),
                        records: Int(row.integer(2)),
                        bytes: row.integer(3) + JournalRetention.rowOverhead)
                    consider(&cut, chunk)
                    if cut.isEnough { throw StopReading() }
                }
            } catch is StopReading {}
        }
        try scan { $0.considerAcknowledged($1) }
        try scan { $0.considerAny($1) }
        guard !cut.positions.isEmpty else { return false }
        let delete = try database.statement("DELETE FROM chunks WHERE position = ?")
        var deleted = deletedThrough
        for (shard, position) in cut.highestByShard where deleted.indices.contains(shard) {
            deleted[shard] = max(deleted[shard], UInt64(position))
        }
        try database.transaction {
            for position in cut.positions { try delete.run(position) }
            try saveDeletedThrough(deleted)
        }
        deletedThrough = deleted
        outcome.trimmedChunks += cut.positions.count - cut.unreadChunks
        outcome.droppedUnreadChunks += cut.unreadChunks
        outcome.droppedUnreadRecords.merge(cut.unreadRecords, uniquingKeysWith: +)
        return true
    }

    /// Deletes the devices that sent nothing for --device-idle-age (at most once a `deviceSweepInterval`): their
    /// slots are free, in memory and in the store.
    private func freeIdleDevices(now: Double) throws {
        guard devices.idleAge != nil else { return }
        if let lastDeviceSweep, now >= lastDeviceSweep, now - lastDeviceSweep < Self.deviceSweepInterval { return }
        lastDeviceSweep = now
        let idle = devices.forgetIdle(now: now)
        guard !idle.isEmpty else { return }
        let delete = try database.statement("DELETE FROM devices WHERE app = ? AND user = ?")
        try database.transaction {
            for device in idle { try delete.run(device.app, device.user) }
        }
        statistics.freedDevices += idle.count
        log.info(
            "device slots freed (no records for --device-idle-age)",
            ["devices": String(idle.count), "idleAge": String(Int(devices.idleAge ?? 0))])
    }

    /// Writes the shards whose highest deleted position moved (inside the deleting transaction).
    private func saveDeletedThrough(_ deleted: [UInt64]) throws {
        let upsert = try database.statement(
            """
            INSERT INTO deleted_through (shard, position) VALUES (?, ?)
            ON CONFLICT (shard) DO UPDATE SET position = excluded.position
            """)
        for shard in deleted.indices where deleted[shard] != deletedThrough[shard] {
            try upsert.run(shard, deleted[shard])
        }
    }

    /// The highest position deleted of what `request` asks for (its shard, or any shard), when it is above
    /// `request.after`: the consumer asks for records some of which are gone.
    public func deletedThrough(for request: FeedRequest) -> UInt64? {
        let highest: UInt64
        if let shard = request.shard {
            guard deletedThrough.indices.contains(shard) else { return nil }
            highest = deletedThrough[shard]
        } else {
            highest = deletedThrough.max() ?? 0
        }
        return request.after < highest ? highest : nil
    }

    private func saveConsumers() throws {
        guard !unsavedConsumers.isEmpty else { return }
        let upsert = try database.statement(
            """
            INSERT INTO consumers (consumer, shard, shards, acknowledged, seen_at) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (consumer) DO UPDATE SET shard = excluded.shard, shards = excluded.shards,
                acknowledged = excluded.acknowledged, seen_at = excluded.seen_at
            """)
        for name in unsavedConsumers.sorted() {
            guard let consumer = consumers[name] else { continue }
            try upsert.run(consumer.name, consumer.shard, consumer.shards, consumer.acknowledged, consumer.seenAt)
        }
        unsavedConsumers.removeAll()
    }

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

    private struct Meta {
        var journalID: String
        var shards: Int
        var createdAt: Double
        var format: String
    }

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

    /// A journal made before `deleted_through` recorded nothing of what retention deleted, and its chunks do not say
    /// which shard a deleted position was of. Positions are never skipped (AUTOINCREMENT; a rolled-back insert takes
    /// its number back), so a position below the head that no chunk holds was deleted. For each shard with such a
    /// position below its oldest chunk (below the head, if it has none), the estimate is the position before that
    /// chunk, but no more than what its consumers had acknowledged: the age rule never deleted past that, and a
    /// shard that read everything is not told of a loss it did not have (the missing positions above may be other
    /// shards'). Records `--journal-max-bytes` dropped unread before the upgrade are therefore not counted for a
    /// shard that had a consumer (they were logged as a warning when dropped); a shard nobody read counts every
    /// missing position below its oldest chunk.
    private static func estimateDeletedThrough(_ database: SQLiteDatabase, shards: Int) throws {
        let head = try database.integer("SELECT seq FROM sqlite_sequence WHERE name = 'chunks'") ?? 0
        guard head > 0 else { return }
        var consumers: [JournalConsumer] = []
        try database.statement("SELECT consumer, shard, shards, acknowledged FROM consumers").query { row in
            consumers.append(
                JournalConsumer(
                    name: row.text(0), shard: row.isNull(1) ? nil : Int(row.integer(1)),
                    shards: row.isNull(2) ? nil : Int(row.integer(2)),
                    acknowledged: row.unsigned(3), seenAt: 0))
        }
        let acknowledged = JournalRetention.acknowledgedThrough(consumers, shards: shards)
        let oldest = try database.statement("SELECT min(position) FROM chunks WHERE shard = ?")
        let below = try database.statement("SELECT count(*) FROM chunks WHERE position < ?")
        let insert = try database.statement("INSERT INTO deleted_through (shard, position) VALUES (?, ?)")
        for shard in 0..<shards {
            let first = try oldest.integer(shard) ?? head + 1
            let kept = try below.integer(first) ?? 0
            guard kept < first - 1 else { continue }
            let estimate = min(first - 1, acknowledged[shard].map { Int64(bitPattern: $0) } ?? .max)
            if estimate > 0 { try insert.run(shard, estimate) }
        }
    }

    /// Creates the tables on first use and reads (or, the first time, writes) `meta`, in one transaction.
    private static func prepare(_ database: SQLiteDatabase, shards: Int, now: Double) throws -> Meta {
        try database.transaction {
            try database.execute(
                """
                CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                CREATE TABLE IF NOT EXISTS chunks (
                    position INTEGER PRIMARY KEY AUTOINCREMENT,
                    shard INTEGER NOT NULL,
                    records INTEGER NOT NULL,
                    received_at REAL NOT NULL,
                    batch TEXT,
                    body BLOB NOT NULL,
                    gateway TEXT,
                    watermark REAL
                );
                CREATE INDEX IF NOT EXISTS chunks_by_shard ON chunks (shard, position);
                CREATE INDEX IF NOT EXISTS chunks_by_time ON chunks (received_at);
                CREATE TABLE IF NOT EXISTS consumers (
                    consumer TEXT PRIMARY KEY,
                    shard INTEGER,
                    shards INTEGER,
                    acknowledged INTEGER NOT NULL,
                    seen_at REAL NOT NULL
                );
                CREATE TABLE IF NOT EXISTS devices (
                    app TEXT NOT NULL,
                    user TEXT NOT NULL,
                    first_seen REAL NOT NULL,
                    last_seen REAL,
                    PRIMARY KEY (app, user)
                ) WITHOUT ROWID;
                """)
            let knewDeletions =
                try database.integer(
                    "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'deleted_through'") == 1
            try database.execute(
                "CREATE TABLE IF NOT EXISTS deleted_through (shard INTEGER PRIMARY KEY, position INTEGER NOT NULL)")
            // A journal made before devices had last_seen: add the column (NULL reads as "seen at open").
            var deviceColumns: Set<String> = []
            try database.statement("PRAGMA table_info(devices)").query { row in deviceColumns.insert(row.text(1)) }
            if !deviceColumns.contains("last_seen") {
                try database.execute("ALTER TABLE devices ADD COLUMN last_seen REAL")
            }
            // A journal made before gateway headers: its chunks had none (NULL).
            var chunkColumns: Set<String> = []
            try database.statement("PRAGMA table_info(chunks)").query { row in chunkColumns.insert(row.text(1)) }
            if !chunkColumns.contains("gateway") {
                try database.execute(
                    "ALTER TABLE chunks ADD COLUMN gateway TEXT; ALTER TABLE chunks ADD COLUMN watermark REAL")
            }
            var values: [String: String] = [:]
            try database.statement("SELECT key, value FROM meta").query { row in values[row.text(0)] = row.text(1) }
            if values["journal_id"] == nil {
                values = [
                    "journal_id": UUID().uuidString.lowercased(), "shards": String(shards),
                    "created_at": String(now), "format": format,
                ]
                let insert = try database.statement("INSERT INTO meta (key, value) VALUES (?, ?)")
                for (key, value) in values.sorted(by: { $0.key < $1.key }) { try insert.run(key, value) }
            }
            guard let id = values["journal_id"], let storedShards = values["shards"].flatMap({ Int($0) }) else {
                throw JournalError("\(database.path): the meta table lacks journal_id or shards; this is not a journal")
            }
            if !knewDeletions { try estimateDeletedThrough(database, shards: storedShards) }
            return Meta(
                journalID: id, shards: storedShards, createdAt: values["created_at"].flatMap { Double($0) } ?? 0,
                format: values["format"] ?? format)
        }
    }
}
