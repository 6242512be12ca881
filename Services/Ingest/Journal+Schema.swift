import Foundation
import Storage

/// The journal's schema: the tables made on first use, the columns added to a journal made by an earlier version,
/// and the `meta` a journal is identified by.
extension Journal {
    struct Meta {
        var journalID: String
        var shards: Int
        var createdAt: Double
        var format: String
        /// Indexes of an earlier version replaced when the journal was opened (logged: on a large journal, building
        /// the new one takes seconds).
        var replacedIndexes: [String] = []
    }

    /// Indexes journals had before, dropped on open (see `prepare`).
    static let formerIndexes = ["chunks_by_shard", "chunks_by_time"]

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
        let oldest = try database.statement(
            "SELECT position FROM chunks INDEXED BY \(shardIndex) WHERE shard = ? ORDER BY position LIMIT 1")
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

    /// The index a shard's chunks are found by: (position, shard), so that a commit's rows, whatever their shards,
    /// go into its newest leaf. Named in the queries that read or delete a shard's chunks (`INDEXED BY`): SQLite,
    /// without statistics, could otherwise walk the table's rows, bodies and all, for a position range.
    static let shardIndex = "chunks_by_position_shard"

    /// Creates the tables on first use and reads (or, the first time, writes) `meta`, in one transaction.
    static func prepare(_ database: SQLiteDatabase, shards: Int, now: Double) throws -> Meta {
        try database.transaction {
            var replacedIndexes: [String] = []
            try database.statement("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'chunks'")
                .query { row in
                    let name = row.text(0)
                    if formerIndexes.contains(name) { replacedIndexes.append(name) }
                }
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
                CREATE INDEX IF NOT EXISTS \(shardIndex) ON chunks (position, shard);
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
            // Journals made before had the shard index the other way round, (shard, position): a commit wrote into
            // one of its leaves a shard, 16 pages of 64 KiB, twice the journal's own bytes once it held a few million
            // records. Keyed by position first, every commit appends to one leaf; a shard's reader skips the other
            // shards' entries in the index, never their rows. They also had an index on the time a chunk came,
            // a page a commit, which retention no longer needs (`firstPosition(receivedAtOrAfter:)`).
            for name in replacedIndexes { try database.execute("DROP INDEX \(name)") }
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
                format: values["format"] ?? format, replacedIndexes: replacedIndexes.sorted())
        }
    }
}
