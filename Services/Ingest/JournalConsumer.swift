/// What one consumer of the journal (a detection shard) has said is safe on its side: everything up to
/// `acknowledged` is in its checkpoint. Kept in the journal's `consumers` table, so that retention after a restart
/// of ingest still protects what the consumer has not checkpointed yet.
public struct JournalConsumer: Sendable, Equatable {
    /// The consumer's name from its requests (`detection shard 0/2`).
    public var name: String
    /// The shard it reads, or nil when it reads every shard.
    public var shard: Int?
    public var shards: Int?
    /// Positions up to here are checkpointed by the consumer.
    public var acknowledged: UInt64
    /// When it last asked (Unix seconds), for the operator.
    public var seenAt: Double

    public init(name: String, shard: Int?, shards: Int?, acknowledged: UInt64, seenAt: Double) {
        self.name = name
        self.shard = shard
        self.shards = shards
        self.acknowledged = acknowledged
        self.seenAt = seenAt
    }

    /// Whether this consumer reads `shard`'s records.
    public func covers(shard: Int) -> Bool {
        self.shard == nil || self.shard == shard
    }
}
