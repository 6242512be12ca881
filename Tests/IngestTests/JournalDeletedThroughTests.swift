import Feeds
import Foundation
import Storage
import Testing
import Wire

@testable import IngestService

/// What retention deleted, per shard (`Journal.deletedThrough`): kept with the deletion, read back when the journal
/// is opened, estimated for a journal made before it was kept, and told to a reader asking from before it.
@Suite struct JournalDeletedThroughTests {
    static let shards = 4
    let userA = Records.user(inShard: 0, of: Self.shards)
    let userB = Records.user(inShard: 2, of: Self.shards)
    let userC = Records.user(inShard: 3, of: Self.shards)

    func open(
        _ directory: TemporaryDirectory, retentionAge: Double = 600, maximumBytes: Int64 = 0,
        clock: TestClock
    ) throws -> Journal {
        try Journal(
            directory: directory.path, shards: Self.shards, retentionAge: retentionAge, maximumBytes: maximumBytes,
            log: Records.quiet, clock: { clock.now })
    }

    /// Three rounds of one batch with records of shards 0, 2 and 3: positions 1–3, 4–6 (old), 7–9 (young).
    func fill(_ journal: Journal, clock: TestClock) throws {
        for round in 0..<3 {
            if round == 2 { clock.now += 1000 }
            try journal.append([
                Journal.Batch(
                    id: "r\(round)",
                    records: Records.drive(user: userA, count: 2)
                        + Records.drive(user: userB, count: 2) + Records.drive(user: userC, count: 2))
            ])
        }
        clock.now += 10
    }

    func request(after: UInt64, shard: Int?) -> FeedRequest {
        Requests.request(after: after, consumer: "detection", shard: shard, shards: shard == nil ? nil : Self.shards)
    }

    @Test func theAgeRuleKeepsTheHighestDeletedPositionOfEachShardAndTellsReadersFromBefore() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let clock = TestClock(1_000_000)
        var journal = try open(directory, clock: clock)
        try fill(journal, clock: clock)
        #expect(journal.deletedThrough == [0, 0, 0, 0])
        #expect(journal.deletedThrough(for: request(after: 0, shard: 0)) == nil, "nothing deleted, nothing said")

        // Shard 0's consumer has everything: its old chunks 1 and 4 go (7 is young); the other shards keep theirs.
        journal.acknowledged(
            Requests.request(
                after: 9, acknowledged: 9, consumer: "detection shard 0/4", shard: 0,
                shards: Self.shards))
        #expect(try journal.enforceRetention().expiredChunks == 2)
        #expect(journal.deletedThrough == [4, 0, 0, 0])
        #expect(journal.deletedThrough(for: request(after: 0, shard: 0)) == 4)
        #expect(journal.deletedThrough(for: request(after: 3, shard: 0)) == 4)
        #expect(journal.deletedThrough(for: request(after: 4, shard: 0)) == nil, "from 4 on nothing asked for is gone")
        #expect(journal.deletedThrough(for: request(after: 0, shard: 2)) == nil, "shard 2 lost nothing")
        #expect(journal.deletedThrough(for: request(after: 0, shard: nil)) == 4, "a reader of every shard hears of any")
        #expect(journal.deletedThrough(for: request(after: 5, shard: nil)) == nil)
        #expect(try journal.read(request(after: 0, shard: 0)).to == journal.head, "what remains is read to the head")

        // A round that deletes nothing moves nothing; the position is in the store and read back.
        try journal.enforceRetention()
        #expect(journal.deletedThrough == [4, 0, 0, 0])
        journal.close()
        journal = try open(directory, clock: clock)
        #expect(journal.deletedThrough == [4, 0, 0, 0])
        let database = try SQLiteDatabase(path: journal.path)
        #expect(try database.integer("SELECT position FROM deleted_through WHERE shard = 0") == 4)

        // Later, shard 0's young chunk is old too.
        clock.now += 1000
        try journal.enforceRetention()
        #expect(journal.deletedThrough == [7, 0, 0, 0])
    }

    @Test func theSizeRuleKeepsTheHighestPositionItDroppedOfEachShard() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let clock = TestClock(1_000_000)
        // 20 chunks of 100 records of shard 0, nobody reading.
        let unlimited = try open(directory, clock: clock)
        for round in 0..<20 {
            try unlimited.append([
                Journal.Batch(
                    id: "r\(round)",
                    records: Records.drive(
                        user: userA, count: 100,
                        start: Double(round) * 1000))
            ])
        }
        let full = try unlimited.summary().bytes
        let chunk = Int64(try unlimited.read(Requests.request(after: 0, maxItems: 1)).items[0].count)
        unlimited.close()

        let journal = try open(directory, maximumBytes: full - 10 * chunk, clock: clock)
        let outcome = try journal.enforceRetention()
        #expect(outcome.droppedUnreadChunks > 0)
        let oldest = try #require(try journal.summary().oldest)
        #expect(
            journal.deletedThrough == [oldest - 1, 0, 0, 0], "the oldest went, up to the one before the oldest left")
        #expect(journal.deletedThrough(for: request(after: 0, shard: 0)) == oldest - 1)
    }

    /// A journal from before `deleted_through`: positions missing below a shard's oldest chunk count as deleted
    /// of it (the store cannot tell whose they were), no further than what the shard's consumers had acknowledged.
    @Test func aJournalFromBeforeHasItsDeletionsEstimatedWhenOpened() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let clock = TestClock(1_000_000)
        var journal = try open(directory, clock: clock)
        try fill(journal, clock: clock)
        journal.close()
        // As an older ingest left it: no table, positions 1 (shard 0), 2 (shard 2) and 4 (shard 0) deleted.
        var database = try SQLiteDatabase(path: journal.path)
        try database.execute("DROP TABLE deleted_through; DELETE FROM chunks WHERE position IN (1, 2, 4)")
        database.close()

        journal = try open(directory, clock: clock)
        // Shard 0's oldest is 7, shard 2's 5, shard 3's 3; shard 1 has none (below the head, 9, some are missing).
        // Nobody read any of them: only the size rule can have deleted, and any missing position may be theirs.
        #expect(journal.deletedThrough == [6, 9, 4, 2])
        journal.close()
        // Estimated once: what is stored from then on is what retention deletes.
        database = try SQLiteDatabase(path: journal.path)
        #expect(try database.integer("SELECT count(*) FROM deleted_through") == 4)

        // The same, with shard 0's detection at 5 and a reader of every shard at 3: the age rule deleted no further.
        try database.execute(
            """
            DROP TABLE deleted_through;
            INSERT INTO consumers (consumer, shard, shards, acknowledged, seen_at) VALUES ('detection shard 0/4', 0, 4, 5, 0);
            """)
        database.close()
        journal = try open(directory, clock: clock)
        #expect(journal.deletedThrough == [5, 9, 4, 2], "shard 0 at most what its consumer had acknowledged")
        #expect(journal.deletedThrough(for: request(after: 5, shard: 0)) == nil, "its detection, at 5, lost nothing")
        journal.close()
        database = try SQLiteDatabase(path: journal.path)
        try database.execute(
            """
            DROP TABLE deleted_through;
            INSERT INTO consumers (consumer, shard, shards, acknowledged, seen_at) VALUES ('detection', NULL, NULL, 3, 0);
            """)
        database.close()
        #expect(try open(directory, clock: clock).deletedThrough == [3, 3, 3, 2])

        // One from before with nothing deleted: nothing to say.
        let other = try TemporaryDirectory()
        defer { other.remove() }
        let complete = try open(other, clock: clock)
        try fill(complete, clock: clock)
        complete.close()
        database = try SQLiteDatabase(path: complete.path)
        try database.execute("DROP TABLE deleted_through")
        database.close()
        #expect(try open(other, clock: clock).deletedThrough == [0, 0, 0, 0])
    }
}
