/// Retention's decisions, apart from the store, so they can be tested without one.
///
/// Two rules. By age: a chunk older than `--retention-age` goes once every consumer that reads its shard has
/// acknowledged past it; a shard nobody has ever consumed keeps everything. By size (`--journal-max-bytes`): when the
/// journal is larger than allowed, acknowledged chunks go first, oldest first; if that is not enough, the oldest go
/// even if nobody has read them — the operator's limit wins, and the loss is reported.
enum JournalRetention {
    /// For each shard, the position through which every consumer reading it has acknowledged; nil for a shard that
    /// no consumer reads (nothing of it is acknowledged).
    static func acknowledgedThrough(_ consumers: some Sequence<JournalConsumer>, shards: Int) -> [UInt64?] {
        var through = [UInt64?](repeating: nil, count: shards)
        for consumer in consumers {
            for shard in 0..<shards where consumer.covers(shard: shard) {
                through[shard] = min(through[shard] ?? .max, consumer.acknowledged)
            }
        }
        return through
    }

    /// A chunk as retention sees it (no body).
    struct Chunk: Equatable {
        var position: Int64
        var shard: Int
        var records: Int
        /// The body's length plus the row's overhead.
        var bytes: Int64
    }

    /// Bytes a row costs beside its body (row header, the shard index entry), for the size estimate.
    static let rowOverhead: Int64 = 64

    /// The chunks to delete so that `excess` bytes are freed, chosen over two passes in position order.
    struct SizeCut {
        let excess: Int64
        let acknowledgedThrough: [UInt64?]
        private(set) var freed: Int64 = 0
        private(set) var positions: [Int64] = []
        private var taken: Set<Int64> = []
        /// Records deleted before any consumer of their shard had acknowledged them, by shard.
        private(set) var unreadRecords: [Int: Int] = [:]
        private(set) var unreadChunks = 0
        /// The highest position taken, by shard (what the journal then says is deleted through).
        private(set) var highestByShard: [Int: Int64] = [:]

        init(excess: Int64, acknowledgedThrough: [UInt64?]) {
            self.excess = excess
            self.acknowledgedThrough = acknowledgedThrough
        }

        var isEnough: Bool { freed >= excess }

        func isAcknowledged(_ chunk: Chunk) -> Bool {
            guard chunk.shard >= 0, chunk.shard < acknowledgedThrough.count,
                let through = acknowledgedThrough[chunk.shard]
            else { return false }
            return UInt64(chunk.position) <= through
        }

        /// First pass: takes `chunk` if it is acknowledged and more room is needed.
        mutating func considerAcknowledged(_ chunk: Chunk) {
            guard !isEnough, isAcknowledged(chunk) else { return }
            take(chunk)
        }

        /// Second pass: takes `chunk` (oldest first) whatever its state, while more room is needed.
        mutating func considerAny(_ chunk: Chunk) {
            guard !isEnough, !taken.contains(chunk.position) else { return }
            if !isAcknowledged(chunk) {
                unreadRecords[chunk.shard, default: 0] += chunk.records
                unreadChunks += 1
            }
            take(chunk)
        }

        private mutating func take(_ chunk: Chunk) {
            taken.insert(chunk.position)
            positions.append(chunk.position)
            freed += chunk.bytes
            highestByShard[chunk.shard] = max(highestByShard[chunk.shard] ?? 0, chunk.position)
        }
    }
}
