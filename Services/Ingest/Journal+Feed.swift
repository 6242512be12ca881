import Feeds
import RoadSaveModel
import Storage
import Wire

/// The journal as a `FeedSource`: which chunks a request gets (from the tail in memory, else the store), where the
/// reply ends, where each device's records end, and what consumers have acknowledged.
extension Journal {
    /// Ends a query early (a reply is full, enough chunks are chosen).
    struct StopReading: Error {}

    /// The chunks after `request.after` (through `request.through`) of `request.shard` (every shard when nil), in
    /// position order: at most `maxItems`, and no more than `maxBytes` unless the first alone is larger. Each item is a
    /// `JournalChunk`: the chunk's body, a MessagePack array of records, with its gateway header when it has one. The batch's
    /// `to` is the last chunk's position; when everything up to `through` (or the head, if lower or not given) was
    /// read, `to` is that position, so a consumer re-reading a range learns that it has it all, and a shard's consumer
    /// that it has read its shard to the head.
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
                SELECT position, length(body), body, gateway, watermark, shard FROM chunks INDEXED BY \(Self.shardIndex)
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
        var items: [ArraySlice<UInt8>] = []
        var bytes = 0
        var last: UInt64?
        var full = false
        do {
            try statement.query(parameters) { row in
                let size = Int(row.integer(1))
                if !items.isEmpty, bytes + size > request.maxBytes { throw StopReading() }
                if row.isNull(3) {
                    items.append(row.blob(2)[...])
                } else {
                    let progress: GatewayBatchHeader.Progress = row.isNull(4) ? .end : .watermark(row.double(4))
                    items.append(
                        JournalChunk(
                            records: row.blob(2),
                            header: GatewayBatchHeader(gateway: row.text(3), progress: progress),
                            shard: Int(row.integer(5))
                        ).item[...])
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

    /// A reply of `items`, the last at `last`. Not cut short, it reaches `through` (the head for a live request):
    /// a shard's consumer has then read every chunk of its shard up to there, and the other shards' chunks after its
    /// last are not its to wait for (its lag, `roadsave_detection_lag_positions`, is 0, not the positions of the
    /// other shards' chunks stored since).
    private static func batch(
        items: [ArraySlice<UInt8>], last: UInt64?, full: Bool, request: FeedRequest, through: UInt64
    )
        -> FeedBatch
    {
        var to = last ?? request.after
        if !full { to = max(to, through) }
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
}
