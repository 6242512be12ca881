/// What the journal has done since it was opened, for the logs and /metrics.
public struct JournalStatistics: Sendable, Equatable {
    /// Transactions committed by `append` (one per group of batches).
    public var commits = 0
    public var appendedChunks = 0
    public var appendedRecords = 0
    /// Chunks deleted by the age rule (every consumer had acknowledged them).
    public var expiredChunks = 0
    /// Chunks deleted by the size limit that consumers had acknowledged.
    public var trimmedChunks = 0
    /// Chunks and records deleted by the size limit before a consumer of their shard had acknowledged them, by shard:
    /// data lost to the operator's limit.
    public var droppedUnreadChunks = 0
    public var droppedUnreadRecords: [Int: Int] = [:]
    /// Device slots freed because the device sent nothing for --device-idle-age.
    public var freedDevices = 0

    public init() {}

    public var droppedUnreadRecordsTotal: Int { droppedUnreadRecords.values.reduce(0, +) }
}

/// The journal's size and positions, for the logs at start and stop.
public struct JournalSummary: Sendable, Equatable {
    public var chunks: Int
    public var records: Int
    /// The oldest position kept (nil when the journal is empty).
    public var oldest: UInt64?
    public var head: UInt64
    /// Bytes of the database in use (free pages left by deletions are reused, so the file does not shrink).
    public var bytes: Int64
}
