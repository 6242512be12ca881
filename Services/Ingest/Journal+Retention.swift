import Logging
import RoadSaveModel
import Storage
import Wire

/// Retention: which chunks are deleted (by age once acknowledged, by size when over --journal-max-bytes), which idle
/// devices lose their slot, and what a consumer is told of deleted positions.
extension Journal {
    /// What one round of retention deleted.
    public struct RetentionOutcome: Sendable, Equatable {
        public var expiredChunks = 0
        public var trimmedChunks = 0
        public var droppedUnreadChunks = 0
        /// Records deleted unread, by shard.
        public var droppedUnreadRecords: [Int: Int] = [:]
    }

    /// Saves consumers' positions and applies the age and size rules (see `JournalRetention`). Cheap enough to run
    /// every few seconds: the age rule finds its boundary by halving the positions and deletes through an index; the
    /// size rule reads chunk sizes only when the journal is over its limit. A forced drop of unread records is logged
    /// as a warning and counted in `statistics`.
    @discardableResult
    public func enforceRetention() throws -> RetentionOutcome {
        var outcome = RetentionOutcome()
        let now = clock()
        let through = JournalRetention.acknowledgedThrough(consumers.values, shards: shards)
        var deleted = deletedThrough
        try database.transaction {
            try saveConsumers()
            // Chunks from position `young` on are within the retention age.
            let young = try firstPosition(receivedAtOrAfter: now - retentionAge) ?? Int64(bitPattern: head) + 1
            // A shard's chunks are deleted oldest first, so none is left at or below what it was deleted through:
            // each shard's range starts there, and the index walks only what came since (not, every round, the old
            // chunks another shard's slow reader still holds).
            let highest = try database.statement(
                """
                SELECT max(position) FROM chunks INDEXED BY \(Self.shardIndex)
                WHERE position > ? AND position <= ? AND shard = ?
                """)
            let delete = try database.statement(
                "DELETE FROM chunks INDEXED BY \(Self.shardIndex) WHERE position > ? AND position <= ? AND shard = ?")
            for shard in 0..<shards {
                guard let acknowledged = through[shard] else { continue }
                let after = Int64(bitPattern: deleted[shard])
                let limit = min(Int64(bitPattern: acknowledged), young - 1)
                guard limit > after, let last = try highest.integer(after, limit, shard) else { continue }
                try delete.run(after, limit, shard)
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

    /// The position of the first chunk received at `time` or later; nil when every chunk is older. Found by halving
    /// the positions (about 25 lookups by key in a journal of millions of chunks), not through an index on the time:
    /// chunks are stored in the order they come, so their times rise with their positions, and such an index cost
    /// every commit a page of 64 KiB. After a step back of the wall clock the boundary is approximate.
    func firstPosition(receivedAtOrAfter time: Double) throws -> Int64? {
        let next = try database.statement(
            "SELECT position, received_at FROM chunks WHERE position >= ? ORDER BY position LIMIT 1")
        func chunk(from position: Int64) throws -> (position: Int64, receivedAt: Double)? {
            var found: (position: Int64, receivedAt: Double)?
            try next.query(position) { found = ($0.integer(0), $0.double(1)) }
            return found
        }
        // The first chunk from `low` on is older than `time`; from `high` on, none is (there is none past the head).
        guard let oldest = try chunk(from: 0) else { return nil }
        if oldest.receivedAt >= time { return oldest.position }
        var low = oldest.position + 1
        var high = Int64(bitPattern: head) + 1
        while low < high {
            let middle = low + (high - low) / 2
            if let found = try chunk(from: middle), found.receivedAt < time {
                low = found.position + 1
            } else {
                high = middle
            }
        }
        return try chunk(from: low).map(\.position)
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

    func saveConsumers() throws {
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
}
