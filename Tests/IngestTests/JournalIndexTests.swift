import Foundation
import RoadSaveModel
import Storage
import Testing

@testable import IngestService

/// How chunks are found. A shard's: through an index keyed by position, then shard, so that a commit's rows, whatever
/// their shards, go into the index's newest leaf (keyed by shard first, a commit wrote into one leaf a shard, each a
/// 64 KiB page: twice the journal's own bytes once it held a few million records). The first of an age: by halving
/// the positions, with no index on the time (a page a commit). Journals made with both old indexes are upgraded.
@Suite struct JournalIndexTests {
    static let shards = 16
    /// A user in each shard.
    static let users = (0..<shards).map { Records.user(inShard: $0, of: shards) }

    /// A gateway batch with one record in every shard.
    static func batch(_ number: Int) -> Journal.Batch {
        let start = 1_772_433_000 + Double(number)
        return Journal.Batch(
            id: "b\(number)", records: users.flatMap { Records.drive(user: $0, count: 1, start: start) })
    }

    /// Pages the next commit of one gateway batch writes to the journal's log (the log emptied first).
    static func pagesWritten(appending batch: Journal.Batch, to journal: Journal) throws -> Int {
        try journal.database.checkpointLog()
        try journal.append([batch])
        let bytes = try FileManager.default.attributesOfItem(atPath: journal.path + "-wal")[.size] as? Int ?? 0
        // The log: a 32-byte header, then each page with a 24-byte frame header.
        return (bytes - 32) / (Journal.pageSize + 24)
    }

    /// The index's entries are about a dozen bytes: enough batches that every shard's entries fill leaves of their own.
    @Test func aCommitWritesOneLeafOfTheIndexWhateverItsShards() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let journal = try Journal(directory: directory.path, shards: Self.shards, log: Records.quiet)
        defer { journal.close() }
        for group in 0..<60 {
            try journal.append((0..<100).map { Self.batch(group * 100 + $0) })
        }
        #expect(journal.head == 96_000)
        let pages = try Self.pagesWritten(appending: Self.batch(6_000), to: journal)
        // The table's newest leaf, the index's newest leaf, the AUTOINCREMENT counter's page (3 here), and now and
        // then a leaf that filled or a parent.
        #expect(pages <= 5, "one batch of 16 chunks wrote \(pages) pages of \(Journal.pageSize) bytes")

        // The index as journals had it: each shard's entries in a region of their own.
        let other = try SQLiteDatabase(path: journal.path)
        try other.execute("CREATE INDEX chunks_by_shard ON chunks (shard, position)")
        other.close()
        let scattered = try Self.pagesWritten(appending: Self.batch(6_001), to: journal)
        #expect(scattered >= pages + Self.shards - 1, "the old index: \(scattered) pages against \(pages)")
    }

    @Test func aJournalWithTheShardFirstIndexIsUpgradedAndReadsTheSame() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/" + Journal.fileName
        do {
            let journal = try Journal(directory: directory.path, shards: Self.shards, log: Records.quiet)
            try journal.append((0..<20).map { Self.batch($0) })
            journal.close()
        }
        // As an earlier ingest left it.
        let old = try SQLiteDatabase(path: path)
        try old.execute(
            """
            DROP INDEX \(Journal.shardIndex); CREATE INDEX chunks_by_shard ON chunks (shard, position);
            CREATE INDEX chunks_by_time ON chunks (received_at)
            """)
        // Opened, the journal's schema is upgraded once (and says so, for the log).
        #expect(try Journal.prepare(old, shards: Self.shards, now: 0).replacedIndexes == Journal.formerIndexes)
        #expect(try Journal.prepare(old, shards: Self.shards, now: 0).replacedIndexes == [])
        old.close()

        // Reopened: nothing in memory, so a shard's reads come from the store, through the new index.
        let journal = try Journal(directory: directory.path, shards: Self.shards, log: Records.quiet)
        defer { journal.close() }
        var indexes: [String] = []
        try journal.database.statement("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'chunks'")
            .query { indexes.append($0.text(0)) }
        #expect(indexes == ["chunks_by_position_shard"])
        for shard in [0, 7, 15] {
            let read = try journal.read(
                Requests.request(after: 3 * UInt64(Self.shards), maxItems: 5, shard: shard, shards: Self.shards))
            // Batches 3 to 7: the shard's record of each, in order; the reply stops at its fifth chunk.
            #expect(try Records.decode(read.items).map(\.device.user) == Array(repeating: Self.users[shard], count: 5))
            #expect(try Records.decode(read.items).map(\.t) == (3..<8).map { 1_772_433_000 + Double($0) })
            #expect(read.to == UInt64(7 * Self.shards + shard + 1))
        }
    }

    @Test func retentionDeletesAShardsChunksThroughTheIndex() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let clock = TestClock(1_000_000)
        let journal = try Journal(
            directory: directory.path, shards: Self.shards, retentionAge: 10, log: Records.quiet,
            clock: { clock.now })
        defer { journal.close() }
        try journal.append((0..<4).map { Self.batch($0) })
        // Shard 5's reader has checkpointed its first two chunks; nobody else has read anything.
        journal.acknowledged(
            Requests.request(
                after: 2 * UInt64(Self.shards), acknowledged: UInt64(Self.shards + 6), consumer: "shard-5",
                shard: 5, shards: Self.shards))
        clock.now += 100
        let outcome = try journal.enforceRetention()
        #expect(outcome.expiredChunks == 2)
        var left: [Int64] = []
        try journal.database.statement("SELECT position FROM chunks WHERE shard = 5 ORDER BY position").query {
            left.append($0.integer(0))
        }
        #expect(left == [2 * Int64(Self.shards) + 6, 3 * Int64(Self.shards) + 6])
        #expect(try journal.summary().chunks == 4 * Self.shards - 2)
    }

    @Test func theFirstChunkOfAnAgeIsFoundAcrossDeletedPositions() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let clock = TestClock(1_000_000)
        let journal = try Journal(directory: directory.path, shards: 1, log: Records.quiet, clock: { clock.now })
        defer { journal.close() }
        #expect(try journal.firstPosition(receivedAtOrAfter: 0) == nil, "an empty journal")
        // Chunk n (position n) received at 1,000,000 + n; some deleted, the oldest and the newest among them.
        for number in 1...120 {
            clock.now = 1_000_000 + Double(number)
            try journal.append([Journal.Batch(id: "b\(number)", records: Records.drive(user: "u", count: 1))])
        }
        try journal.database.execute(
            "DELETE FROM chunks WHERE position IN (1, 2, 17, 18, 19, 20, 21, 60, 61, 64, 100, 119, 120)")
        let oracle = try journal.database.statement("SELECT min(position) FROM chunks WHERE received_at >= ?")
        for time in stride(from: 999_990.0, through: 1_000_130.0, by: 0.5) {
            #expect(try journal.firstPosition(receivedAtOrAfter: time) == oracle.integer(time), "at \(time)")
        }
    }

    /// Retention's work in a round of new chunks, when one shard's reader has held `held` batches' chunks back.
    static func retentionSteps(holding held: Int) throws -> Int {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let clock = TestClock(1_000_000)
        let journal = try Journal(
            directory: directory.path, shards: shards, retentionAge: 10, log: Records.quiet, clock: { clock.now })
        defer { journal.close() }
        for group in stride(from: 0, to: held, by: 100) {
            try journal.append((group..<min(held, group + 100)).map { batch($0) })
        }
        // Shard 0's reader has read nothing; every other shard is read to the head, and its old chunks go.
        func acknowledgeAllButShardZero() {
            for shard in 1..<shards {
                journal.acknowledged(
                    Requests.request(
                        after: journal.head, acknowledged: journal.head, consumer: "shard \(shard)", shard: shard,
                        shards: shards))
            }
        }
        acknowledgeAllButShardZero()
        clock.now += 100
        #expect(try journal.enforceRetention().expiredChunks == held * (shards - 1))
        // A round's worth of new chunks, old in their turn.
        try journal.append((held..<held + 10).map { batch($0) })
        acknowledgeAllButShardZero()
        clock.now += 100
        let before = journal.database.virtualMachineSteps
        #expect(try journal.enforceRetention().expiredChunks == 10 * (shards - 1))
        let steps = journal.database.virtualMachineSteps - before
        #expect(try journal.summary().chunks == held + 10, "shard 0's chunks, all held")
        return steps
    }

    /// Each shard's deletion starts where the shard was deleted through: a slow reader's chunks, kept, are not walked
    /// again by the other shards every round (with 15 shards and thousands of held chunks, every 5 seconds).
    @Test func retentionWorkDoesNotGrowWithTheChunksASlowReaderHolds() throws {
        let few = try Self.retentionSteps(holding: 100)
        let many = try Self.retentionSteps(holding: 1_000)
        #expect(Double(many) < 1.2 * Double(few), "steps holding 100 batches: \(few); holding 1,000: \(many)")
    }
}
