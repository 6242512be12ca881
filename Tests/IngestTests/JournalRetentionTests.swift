import Testing

@testable import IngestService

/// Retention's decisions, without a store.
@Suite struct JournalRetentionTests {
    @Test func aShardIsAcknowledgedThroughTheSlowestConsumerReadingIt() {
        let consumers = [
            JournalConsumer(name: "a", shard: 0, shards: 3, acknowledged: 40, seenAt: 0),
            JournalConsumer(name: "b", shard: 0, shards: 3, acknowledged: 25, seenAt: 0),
            JournalConsumer(name: "c", shard: 1, shards: 3, acknowledged: 90, seenAt: 0),
        ]
        #expect(JournalRetention.acknowledgedThrough(consumers, shards: 3) == [25, 90, nil])
        let everything = JournalConsumer(name: "all", shard: nil, shards: nil, acknowledged: 30, seenAt: 0)
        #expect(JournalRetention.acknowledgedThrough(consumers + [everything], shards: 3) == [25, 30, 30])
        #expect(JournalRetention.acknowledgedThrough([], shards: 2) == [nil, nil])
    }

    @Test func theSizeCutTakesAcknowledgedChunksFirstThenTheOldest() {
        // Shard 0 acknowledged through 3, shard 1 never read.
        let chunks = (1...6).map {
            JournalRetention.Chunk(position: Int64($0), shard: $0 % 2, records: 10 * $0, bytes: 100)
        }
        var cut = JournalRetention.SizeCut(excess: 150, acknowledgedThrough: [3, nil])
        for chunk in chunks { cut.considerAcknowledged(chunk) }
        for chunk in chunks { cut.considerAny(chunk) }
        // Position 2 (shard 0, acknowledged) first, then the oldest: 1 (shard 1, unread).
        #expect(cut.positions == [2, 1])
        #expect(cut.unreadChunks == 1 && cut.unreadRecords == [1: 10])
        #expect(cut.isEnough)
        #expect(cut.highestByShard == [0: 2, 1: 1], "what the journal then says each shard is deleted through")

        // Enough acknowledged: nothing unread goes.
        var small = JournalRetention.SizeCut(excess: 80, acknowledgedThrough: [6, nil])
        for chunk in chunks { small.considerAcknowledged(chunk) }
        for chunk in chunks { small.considerAny(chunk) }
        #expect(small.positions == [2] && small.unreadChunks == 0)

        // More than there is: everything goes, and the unread records are counted by shard.
        var all = JournalRetention.SizeCut(excess: 10_000, acknowledgedThrough: [nil, nil])
        for chunk in chunks { all.considerAcknowledged(chunk) }
        for chunk in chunks { all.considerAny(chunk) }
        #expect(all.positions == [1, 2, 3, 4, 5, 6] && !all.isEnough)
        #expect(all.unreadRecords == [0: 20 + 40 + 60, 1: 10 + 30 + 50])
        #expect(all.highestByShard == [0: 6, 1: 5])
    }
}
