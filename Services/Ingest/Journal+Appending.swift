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
        // Every chunk of the group first, then their rows inserted `rowsPerInsert` at a time: SQLite's work per
        // statement (its cursors on the table and both indexes, the AUTOINCREMENT counter read and written back)
        // is then done once for a gateway batch's 16 shards instead of once a chunk.
        var rows: [(batch: Int, chunk: Batch.Chunk)] = []
        // A batch with a header has a chunk for every shard: the array made once for that, not grown row by row.
        rows.reserveCapacity(batches.count * shards)
        for (number, batch) in batches.enumerated() {
            let recordShards = self.recordShards(batch)
            for chunk in batch.chunksWithHeader(shards: shards, shard: { recordShards.isEmpty ? 0 : recordShards[$0] })
            {
                rows.append((number, chunk))
            }
        }
        func watermark(_ batch: Batch) -> Double? {
            batch.header.flatMap { header -> Double? in
                if case .watermark(let time) = header.progress { time } else { nil }
            }
        }
        var records = 0
        // Where each batch's devices' records went: (batch, its record indexes or nil for all, and the chunk for the
        // tail, which has its position).
        var stored: [(batch: Int, indexes: ArraySlice<Int>?, chunk: JournalTail.Chunk)] = []
        stored.reserveCapacity(rows.count)
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
                var start = 0
                var parameters: [SQLiteValue] = []
                // Each chunk's feed item, written once: its header, then its records, which are also the row's body
                // (bound where they are in the item). A statement's items go into one array, of which the rows and
                // the tail take slices: one allocation a statement rather than one a chunk (16 a gateway batch).
                var items: [(start: Int, body: Int, end: Int)] = []
                items.reserveCapacity(min(Self.rowsPerInsert, rows.count))
                while start < rows.count {
                    let count = min(Self.rowsPerInsert, rows.count - start)
                    let insert = try database.statement(Self.insertSQL[count])
                    items.removeAll(keepingCapacity: true)
                    var capacity = 0
                    for (number, chunk) in rows[start..<start + count] {
                        let batch = batches[number]
                        capacity += batch.bodySize(of: chunk) + (batch.header.map { $0.gateway.utf8.count + 48 } ?? 0)
                    }
                    var written: [UInt8] = []
                    written.reserveCapacity(capacity)
                    for (number, chunk) in rows[start..<start + count] {
                        let batch = batches[number]
                        let itemStart = written.count
                        if let header = batch.header {
                            JournalChunk.appendItemHeader(header, shard: chunk.shard, to: &written)
                        }
                        let body = written.count
                        batch.appendBody(of: chunk, to: &written)
                        items.append((itemStart, body, written.count))
                    }
                    parameters.removeAll(keepingCapacity: true)
                    parameters.reserveCapacity(7 * count)
                    for ((number, chunk), item) in zip(rows[start..<start + count], items) {
                        let batch = batches[number]
                        parameters.append(chunk.shard.sqliteValue)
                        parameters.append(chunk.count.sqliteValue)
                        parameters.append(receivedAt.sqliteValue)
                        parameters.append(batch.idUTF8.map { .textSlice($0) } ?? .null)
                        parameters.append(.blobSlice(written[item.body..<item.end]))
                        parameters.append(batch.header?.gateway.sqliteValue ?? .null)
                        parameters.append(watermark(batch).sqliteValue)
                    }
                    try insert.run(values: parameters)
                    // A statement's rows take consecutive positions, in the order of its VALUES.
                    var position = UInt64(database.lastInsertRowID) - UInt64(count)
                    for ((number, chunk), item) in zip(rows[start..<start + count], items) {
                        position += 1
                        stored.append(
                            (
                                number, chunk.indexes,
                                JournalTail.Chunk(
                                    position: position, shard: chunk.shard, size: item.end - item.body,
                                    item: written[item.start..<item.end])
                            ))
                        records += chunk.count
                    }
                    start += count
                }
            }
        } catch {
            devices.rollBack()
            throw error
        }
        let chunks = rows.count
        _ = devices.commit()
        for (_, _, chunk) in stored { tail.add(chunk) }
        for (number, indexes, chunk) in stored {
            let position = chunk.position
            let batch = batches[number]
            if let slots = batch.slots {
                devices.noteStored(slots: slots, indexes: indexes, at: position)
            } else {
                var previous: DeviceID?
                // A run of one device's records (gateways often send several together) is noted once.
                for index in indexes ?? ArraySlice(batch.records.indices) where batch.records[index].device != previous
                {
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

    /// Most chunk rows one INSERT statement stores (a gateway batch's chunks with the default 16 shards).
    static let rowsPerInsert = 16

    /// The INSERT of `n` chunk rows, for `n` from 1 to `rowsPerInsert` (index 0 unused). OR FAIL: a statement of
    /// several rows that fails keeps what it had inserted (the transaction is rolled back whole then: `append`
    /// stores all of a group or none of it), so SQLite keeps no statement journal for it, which it would write to a
    /// temporary file (opened and removed each commit) or, in memory, copy the 64 KiB pages into in 1 KiB pieces.
    static let insertSQL: [String] = (0...rowsPerInsert).map { count in
        "INSERT OR FAIL INTO chunks (shard, records, received_at, batch, body, gateway, watermark) VALUES "
            + Array(repeating: "(?, ?, ?, ?, ?, ?, ?)", count: max(count, 1)).joined(separator: ", ")
    }

    /// The shard of each of `batch`'s records, by index: from their slots, else worked out from their devices. Made
    /// once a batch: its chunks ask for a record's shard two or three times, and a lookup through `devices` from a
    /// closure would check the journal's exclusive access each time. Empty with one shard: every record is in shard 0.
    private func recordShards(_ batch: Batch) -> [Int] {
        if shards == 1 { return [] }
        if let slots = batch.slots { return devices.shards(ofSlots: slots) }
        return batch.records.map { DeviceShard.of($0.device, shards: shards) }
    }
}
