import Feeds
import Foundation
import Storage
import Testing
import Wire

@testable import IngestService

/// The journal against a real SQLite file in a temporary directory.
@Suite struct JournalTests {
    static let shards = 4

    func open(
        _ directory: TemporaryDirectory, shards: Int = JournalTests.shards, retentionAge: Double = 86_400,
        maximumBytes: Int64 = 0, clock: TestClock = TestClock(1_000_000)
    ) throws -> Journal {
        try Journal(
            directory: directory.path, shards: shards, retentionAge: retentionAge, maximumBytes: maximumBytes,
            log: Records.quiet, clock: { clock.now })
    }

    /// Two users in different shards.
    let userA = Records.user(inShard: 0, of: JournalTests.shards)
    let userB = Records.user(inShard: 2, of: JournalTests.shards)

    @Test func appendsOneChunkPerBatchAndShardAndReadsByShardOrAll() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let journal = try open(directory)
        #expect(journal.head == 0)
        let a = Records.drive(user: userA, count: 3)
        let b = Records.drive(user: userB, count: 2)
        // One batch mixing both devices, then one of A alone, in one group commit.
        let positions = try journal.append([
            Journal.Batch(id: "b1", records: [a[0], b[0], a[1], b[1]]),
            Journal.Batch(id: "b2", records: [a[2]]),
            Journal.Batch(id: "empty", records: []),
        ])
        #expect(positions == 1...3)
        #expect(journal.head == 3)
        #expect(journal.statistics.commits == 1 && journal.statistics.appendedRecords == 5)

        let all = try journal.read(Requests.request(after: 0))
        #expect(all.items.count == 3)
        #expect(all.to == 3)
        // Chunks in position order; within a batch, shard 0's chunk first; records in batch order.
        #expect(try Records.decode(all.items) == [a[0], a[1], b[0], b[1], a[2]])

        let shardA = try journal.read(Requests.request(after: 0, shard: 0, shards: Self.shards))
        #expect(try Records.decode(shardA.items) == a)
        #expect(shardA.to == 3)
        let shardB = try journal.read(Requests.request(after: 0, shard: 2, shards: Self.shards))
        #expect(try Records.decode(shardB.items) == b)
        // Read to the head (3): shard 0's chunk at 3 is not shard 2's to wait for, so its reader is at the head.
        #expect(shardB.to == 3)
        // Nothing after the last chunk of the shard: no items, and the reader is at the head (its lag is 0).
        let nothing = try journal.read(Requests.request(after: 2, shard: 2, shards: Self.shards))
        #expect(nothing.items.isEmpty && nothing.to == 3)
        let emptyShard = try journal.read(Requests.request(after: 0, shard: 1, shards: Self.shards))
        #expect(emptyShard.items.isEmpty && emptyShard.to == 3)
        // Cut short (one item at most), the reply ends at its last chunk: the rest is still to come.
        var one = Requests.request(after: 0)
        one.maxItems = 1
        let cut = try journal.read(one)
        #expect(cut.items.count == 1 && cut.to == 1)

        // The operator's view: readable columns.
        let database = try SQLiteDatabase(path: journal.path)
        var rows: [String] = []
        try database.statement("SELECT position, shard, records, batch FROM chunks ORDER BY position").query { row in
            rows.append("\(row.integer(0)) \(row.integer(1)) \(row.integer(2)) \(row.text(3))")
        }
        #expect(rows == ["1 0 2 b1", "2 2 2 b1", "3 0 1 b2"])
    }

    /// A gateway's batchID is stored as it came when it is ASCII (bound where its frame has it), cut to 200 bytes
    /// and at a NUL, and as `batchText` repairs it otherwise.
    @Test func aGatewaysBatchIDIsStoredAsItsText() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let journal = try open(directory)
        let ids: [[UInt8]] = [
            Array("gw-26141-f10fdf30-1".utf8), Array(repeating: UInt8(ascii: "x"), count: 250),
            Array("é-lot".utf8), [0x62, 0xFF, 0x31], [0x61, 0x00, 0x62],
        ]
        for id in ids {
            try journal.append([
                Journal.Batch(gatewayBatchID: id[...], records: Records.drive(user: userA, count: 1))
            ])
        }
        let database = try SQLiteDatabase(path: journal.path)
        var stored: [String] = []
        var bytes: [String] = []
        try database.statement("SELECT batch, hex(batch) FROM chunks ORDER BY position").query { row in
            stored.append(row.text(0))
            bytes.append(row.text(1))
        }
        #expect(stored == ["gw-26141-f10fdf30-1", String(repeating: "x", count: 200), "é-lot", "b\u{FFFD}1", "a"])
        // Text up to a NUL, as every text the journal binds (hex shows what reading a C string would hide).
        #expect(bytes.last == "61")
    }

    @Test func readsUpToThroughAndWithinTheLimits() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let journal = try open(directory)
        for index in 0..<5 {
            try journal.append([
                Journal.Batch(
                    id: "b\(index)",
                    records: Records.drive(
                        user: userA, count: 10,
                        start: Double(index) * 100))
            ])
        }
        #expect(journal.head == 5)

        let through = try journal.read(Requests.request(after: 1, through: 3))
        #expect(through.items.count == 2 && through.to == 3)
        // A range of another shard holds nothing, but it was read whole: `to` says so.
        let otherShard = try journal.read(Requests.request(after: 1, through: 3, shard: 2, shards: Self.shards))
        #expect(otherShard.items.isEmpty && otherShard.to == 3)
        // A `through` past the head ends at the head.
        #expect(try journal.read(Requests.request(after: 4, through: 99)).to == 5)

        let oneItem = try journal.read(Requests.request(after: 0, maxItems: 2))
        #expect(oneItem.items.count == 2 && oneItem.to == 2)
        // A cut reply does not claim the whole range.
        let cutThrough = try journal.read(Requests.request(after: 0, through: 5, maxItems: 2))
        #expect(cutThrough.to == 2)
        // At least one item, however small maxBytes is.
        let tiny = try journal.read(Requests.request(after: 0, maxBytes: 1))
        #expect(tiny.items.count == 1 && tiny.to == 1)
        let size = tiny.items[0].count
        let two = try journal.read(Requests.request(after: 0, maxBytes: 2 * size + size / 2))
        #expect(two.items.count == 2 && two.to == 2)
    }

    @Test func refusesARequestCountingShardsDifferently() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let journal = try open(directory)
        try journal.append([Journal.Batch(id: "b", records: Records.drive(user: userA, count: 2))])
        #expect(throws: JournalError.self) { try journal.read(Requests.request(after: 0, shard: 1, shards: 8)) }
        do {
            _ = try journal.read(Requests.request(after: 0, shard: 1, shards: 8))
        } catch {
            #expect("\(error)".contains("this journal has 4 shards; the request is for shard 1 of 8"), "\(error)")
        }
        // Such a consumer protects nothing.
        journal.acknowledged(Requests.request(after: 0, acknowledged: 0, consumer: "wrong", shard: 1, shards: 8))
        #expect(journal.knownConsumers["wrong"] == nil)
    }

    @Test func keepsPositionsAndIDAcrossReopeningAndNeverReusesAPosition() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let clock = TestClock(1_000_000)
        var journal = try open(directory, retentionAge: 10, clock: clock)
        let id = journal.feedID
        #expect(!id.isEmpty)
        try journal.append([
            Journal.Batch(id: "1", records: Records.drive(user: userA, count: 1)),
            Journal.Batch(id: "2", records: Records.drive(user: userA, count: 1)),
            Journal.Batch(id: "3", records: Records.drive(user: userA, count: 1)),
        ])
        #expect(journal.head == 3)
        // Everything is old and acknowledged: retention deletes all of it.
        journal.acknowledged(Requests.request(after: 3, acknowledged: 3, consumer: "all"))
        clock.now += 100
        let outcome = try journal.enforceRetention()
        #expect(outcome.expiredChunks == 3)
        #expect(try journal.summary().chunks == 0)
        #expect(journal.head == 3)
        journal.close()

        journal = try open(directory, retentionAge: 10, clock: clock)
        #expect(journal.feedID == id)
        #expect(journal.head == 3)
        #expect(try journal.append([Journal.Batch(id: "4", records: Records.drive(user: userA, count: 1))]) == 4...4)
        journal.close()

        // Another directory, another feed.
        let other = try TemporaryDirectory()
        defer { other.remove() }
        let second = try self.open(other)
        #expect(second.feedID != id)
    }

    @Test func refusesAnotherShardCount() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let journal = try open(directory, shards: 16)
        journal.close()
        do {
            _ = try open(directory, shards: 8)
            Issue.record("opened a 16-shard journal with 8 shards")
        } catch {
            #expect("\(error)".contains("was created with --shards 16, and this ingest has --shards 8"), "\(error)")
            #expect("\(error)".contains("new --data-dir"), "\(error)")
        }
        // Still usable with its own count.
        _ = try open(directory, shards: 16)
    }

    /// Old chunks go only once every consumer of their shard has acknowledged them; a shard nobody consumes keeps
    /// everything; young chunks stay whatever is acknowledged.
    @Test func retentionByAgeRespectsConsumers() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let clock = TestClock(1_000_000)
        let journal = try open(directory, retentionAge: 600, clock: clock)
        let userC = Records.user(inShard: 3, of: Self.shards)
        func appendRound(_ round: Int) throws {
            try journal.append([
                Journal.Batch(
                    id: "r\(round)",
                    records: Records.drive(user: userA, count: 2)
                        + Records.drive(user: userB, count: 2) + Records.drive(user: userC, count: 2))
            ])
        }
        // Positions 1–3 and 4–6 (shards 0, 2, 3 each) are old; 7–9 are young.
        try appendRound(0)
        try appendRound(1)
        clock.now += 1000
        try appendRound(2)
        clock.now += 10

        // Shard 0: two consumers, the slower one at position 1. Shard 2: one at 9. Shard 3: nobody.
        journal.acknowledged(
            Requests.request(after: 9, acknowledged: 9, consumer: "fast 0", shard: 0, shards: Self.shards))
        journal.acknowledged(
            Requests.request(after: 1, acknowledged: 1, consumer: "slow 0", shard: 0, shards: Self.shards))
        journal.acknowledged(
            Requests.request(after: 9, acknowledged: 9, consumer: "shard 2", shard: 2, shards: Self.shards))
        var outcome = try journal.enforceRetention()
        #expect(outcome.expiredChunks == 3) // position 1 (shard 0), 2 and 5 (shard 2); 8 is young
        #expect(try positions(journal) == [3, 4, 6, 7, 8, 9])

        // The slow consumer catches up: shard 0's old chunk 4 goes; young 7 stays.
        journal.acknowledged(
            Requests.request(after: 9, acknowledged: 9, consumer: "slow 0", shard: 0, shards: Self.shards))
        outcome = try journal.enforceRetention()
        #expect(outcome.expiredChunks == 1)
        #expect(try positions(journal) == [3, 6, 7, 8, 9])

        // A consumer of every shard protects every shard, shard 3 included, until it acknowledges.
        journal.acknowledged(Requests.request(after: 0, acknowledged: 3, consumer: "reads all"))
        journal.acknowledged(
            Requests.request(after: 9, acknowledged: 9, consumer: "shard 3", shard: 3, shards: Self.shards))
        outcome = try journal.enforceRetention()
        #expect(outcome.expiredChunks == 1) // shard 3's position 3; 6 is past what "reads all" acknowledged
        #expect(try positions(journal) == [6, 7, 8, 9])

        // Later, everything is old and acknowledged.
        journal.acknowledged(Requests.request(after: 9, acknowledged: 9, consumer: "reads all"))
        clock.now += 1000
        outcome = try journal.enforceRetention()
        #expect(try positions(journal) == [])
        #expect(journal.statistics.expiredChunks == 9)
        #expect(journal.statistics.droppedUnreadChunks == 0)
    }

    @Test func consumersArePersistedAndProtectAfterReopening() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let clock = TestClock(1_000_000)
        var journal = try open(directory, retentionAge: 60, clock: clock)
        for round in 0..<3 {
            try journal.append([Journal.Batch(id: "r\(round)", records: Records.drive(user: userA, count: 2))])
        }
        journal.acknowledged(
            Requests.request(
                after: 1, acknowledged: 1, consumer: "detection shard 0/4", shard: 0,
                shards: Self.shards))
        try journal.enforceRetention()
        journal.close()

        journal = try open(directory, retentionAge: 60, clock: clock)
        let kept = try #require(journal.knownConsumers["detection shard 0/4"])
        #expect(kept.acknowledged == 1 && kept.shard == 0 && kept.shards == Self.shards && kept.seenAt == 1_000_000)
        clock.now += 1000
        try journal.enforceRetention()
        // Only what the consumer had acknowledged before the restart is gone.
        #expect(try positions(journal) == [2, 3])
        // The operator sees it in the consumers table.
        let database = try SQLiteDatabase(path: journal.path)
        #expect(try database.integer("SELECT acknowledged FROM consumers WHERE consumer = 'detection shard 0/4'") == 1)
    }

    /// Over the size limit: acknowledged chunks go first, oldest first; then unread ones, reported.
    @Test func maximumBytesDropsAcknowledgedFirstThenReportsUnreadDrops() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // 20 chunks of 100 records (about 10 KB each) of shard 0.
        let unlimited = try open(directory)
        for round in 0..<20 {
            try unlimited.append([
                Journal.Batch(
                    id: "r\(round)",
                    records: Records.drive(
                        user: userA, count: 100,
                        start: Double(round) * 1000))
            ])
        }
        let full = try unlimited.bytesInUse()
        let chunk = Int64(try unlimited.read(Requests.request(after: 0, maxItems: 1)).items[0].count)
        unlimited.close()

        // Room for about 15 of them, and 10 are acknowledged: only acknowledged ones go, the oldest.
        var limit = full - 5 * chunk
        var journal = try open(directory, maximumBytes: limit)
        journal.acknowledged(
            Requests.request(after: 10, acknowledged: 10, consumer: "shard 0", shard: 0, shards: Self.shards))
        var outcome = try journal.enforceRetention()
        #expect(outcome.droppedUnreadChunks == 0 && outcome.droppedUnreadRecords.isEmpty)
        #expect(outcome.trimmedChunks >= 5 && outcome.trimmedChunks <= 10, "\(outcome)")
        #expect(try positions(journal) == Array(Int64(outcome.trimmedChunks + 1)...20))
        #expect(try journal.bytesInUse() <= limit)
        #expect(journal.statistics.droppedUnreadChunks == 0)
        let firstTrimmed = outcome.trimmedChunks
        journal.close()

        // Room for about 5: the acknowledged ones are not enough, so unread ones go too, oldest first, and it is said.
        limit = full - 15 * chunk
        journal = try open(directory, maximumBytes: limit)
        outcome = try journal.enforceRetention()
        let left = try positions(journal)
        #expect(outcome.droppedUnreadChunks > 0)
        #expect(outcome.droppedUnreadRecords == [0: outcome.droppedUnreadChunks * 100])
        #expect(journal.statistics.droppedUnreadRecordsTotal == outcome.droppedUnreadChunks * 100)
        #expect(left == Array(Int64(20 - left.count + 1)...20), "the newest are kept: \(left)")
        #expect(try journal.bytesInUse() <= limit)
        // The consumer (saved, read again on opening) had acknowledged 1–10: those left went as acknowledged, and
        // only chunks past 10 count as unread.
        #expect(outcome.trimmedChunks == 10 - firstTrimmed, "\(outcome)")
        #expect(outcome.droppedUnreadChunks == 10 - left.count, "\(outcome)")
    }

    private func positions(_ journal: Journal) throws -> [Int64] {
        var positions: [Int64] = []
        let database = try SQLiteDatabase(path: journal.path)
        try database.statement("SELECT position FROM chunks ORDER BY position").query {
            positions.append($0.integer(0))
        }
        return positions
    }
}

extension Journal {
    /// For the tests: the database's bytes in use, through a second connection.
    func bytesInUse() throws -> Int64 {
        try summary().bytes
    }
}

/// Gateway headers (the optional fourth frame): read and refused by the batch, kept by the journal in every shard.
@Suite struct GatewayHeaderStorageTests {
    static let header = GatewayBatchHeader(gateway: "gw-9", progress: .watermark(1_772_433_100))

    static func message(_ frames: [[UInt8]]) -> [[UInt8]] { [Array("identity".utf8)] + frames }

    @Test(arguments: ContentType.allCases)
    func aFourthFrameIsTheHeaderAndAnEmptyBodyWithOneIsStored(_ contentType: ContentType) {
        let records = Records.drive(user: "u", count: 2)
        let frames: [[UInt8]] = [
            Array("b1".utf8), contentType.frame, RecordBatch.encodeBatch(records, as: contentType),
            Self.header.encode(as: contentType),
        ]
        let batch = GatewayBatch(message: Self.message(frames), applications: ["app-1"], maximumBatch: 100)
        #expect(batch.header == Self.header && batch.records.count == 2 && batch.unreadable == nil)
        // A REQ client's delimiter before the four frames.
        let delimited = GatewayBatch(message: Self.message([[]] + frames), applications: ["app-1"], maximumBatch: 100)
        #expect(delimited.header == Self.header && delimited.replyPrefix.count == 2)
        // Three frames: no header, as before; an empty fourth frame: none either.
        #expect(
            GatewayBatch(message: Self.message(Array(frames.prefix(3))), applications: ["app-1"], maximumBatch: 100)
                .header == nil)
        #expect(
            GatewayBatch(
                message: Self.message(Array(frames.prefix(3)) + [[]]), applications: ["app-1"], maximumBatch: 100
            ).header == nil)
    }

    @Test func aBadHeaderRefusesTheBatchWholeNamingTheField() {
        let frames: [[UInt8]] = [
            Array("b1".utf8), ContentType.json.frame,
            RecordBatch.encodeBatch(Records.drive(user: "u", count: 2), as: .json),
            Array(#"{"gateway": "gw", "watermark": "later"}"#.utf8),
        ]
        let batch = GatewayBatch(message: Self.message(frames), applications: ["app-1"], maximumBatch: 100)
        #expect(batch.records.isEmpty && batch.header == nil)
        #expect(
            batch.acknowledgement.rejected == [
                Rejection(
                    index: -1, field: "header.watermark",
                    reason: "expected a number (seconds since 1970), found a string")
            ])
    }

    @Test func theJournalKeepsAHeaderInEveryShardAndTheFeedCarriesIt() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let journal = try Journal(directory: directory.path, shards: 4, log: Records.quiet)
        let user = Records.user(inShard: 2, of: 4)
        let records = Records.drive(user: user, count: 3)
        try journal.append([
            Journal.Batch(id: "b1", records: records, header: Self.header),
            Journal.Batch(id: "alone", records: [], header: GatewayBatchHeader(gateway: "gw-9", progress: .end)),
            Journal.Batch(id: "legacy", records: records),
        ])
        #expect(journal.head == 9, "four chunks for each batch with a header, one for the other")
        for shard in 0..<4 {
            let read = try journal.read(Requests.request(after: 0, shard: shard, shards: 4))
            let chunks = try read.items.map { try JournalChunk(item: Array($0)) }
            let expected = shard == 2 ? 3 : 2
            #expect(chunks.count == expected)
            #expect(chunks[0].header == Self.header && chunks[0].shard == shard)
            #expect(chunks[1].header?.progress == .end && chunks[1].shard == shard)
            #expect(
                try RecordBatch.decodeBatch(chunks[0].records, contentType: .msgpack).accepted.count
                    == (shard == 2 ? 3 : 0))
            if shard == 2 { #expect(chunks[2].header == nil && chunks[2].records == Array(read.items[2])) }
        }
        // The operator's view: readable columns (a NULL watermark with a gateway is the stream's end).
        let database = try SQLiteDatabase(path: journal.path)
        var rows: [String] = []
        try database.statement(
            "SELECT shard, records, gateway, watermark FROM chunks WHERE shard = 2 ORDER BY position"
        ).query { row in
            rows.append(
                "\(row.integer(0)) \(row.integer(1)) \(row.isNull(2) ? "-" : row.text(2)) \(row.isNull(3) ? "-" : String(row.double(3)))"
            )
        }
        #expect(rows == ["2 3 gw-9 1772433100.0", "2 0 gw-9 -", "2 3 - -"])
    }

    /// A journal written before headers gains the columns when opened, and its chunks read as before.
    @Test func aJournalWithoutTheHeaderColumnsIsUpgraded() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        do {
            let journal = try Journal(directory: directory.path, shards: 1, log: Records.quiet)
            try journal.append([Journal.Batch(id: "old", records: Records.drive(user: "u", count: 2))])
            journal.close()
        }
        let database = try SQLiteDatabase(path: directory.path + "/" + Journal.fileName)
        try database.execute("ALTER TABLE chunks DROP COLUMN gateway; ALTER TABLE chunks DROP COLUMN watermark")
        database.close()
        let journal = try Journal(directory: directory.path, shards: 1, log: Records.quiet)
        try journal.append([Journal.Batch(id: "new", records: [], header: Self.header)])
        let read = try journal.read(Requests.request(after: 0))
        #expect(try read.items.map { try JournalChunk(item: Array($0)).header } == [nil, Self.header])
    }
}
