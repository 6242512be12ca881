import RoadSaveModel
import Storage
import Wire

/// Appending: how a group of gateway batches becomes durable chunks in one transaction, what the devices and the tail
/// learn of them, and where the head moves.
extension Journal {
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
}
