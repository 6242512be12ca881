import Foundation
import RoadSaveModel
import Testing
import Wire

@testable import IngestService

/// The journal's newest chunks served from memory (`JournalTail`): as a value, and through the journal, whose
/// answers must be the store's.
@Suite struct JournalTailTests {
    static func chunk(_ position: UInt64, shard: Int = 0, size: Int = 10) -> JournalTail.Chunk {
        JournalTail.Chunk(
            position: position, shard: shard, size: size,
            item: [UInt8](repeating: UInt8(position % 256), count: size)[...])
    }

    @Test func itAnswersOnlyWhatItWhollyHolds() throws {
        var tail = JournalTail(maximumBytes: 1000)
        for position: UInt64 in 5...9 { tail.add(Self.chunk(position, shard: Int(position % 2))) }
        #expect(tail.read(shard: nil, after: 3, through: 9, maxItems: 10, maxBytes: 1000) == nil, "6 is not held")
        #expect(tail.read(shard: nil, after: 4, through: 10, maxItems: 10, maxBytes: 1000) == nil, "10 is not held")
        let all = try #require(tail.read(shard: nil, after: 4, through: 9, maxItems: 10, maxBytes: 1000))
        #expect(all.items.count == 5 && all.last == 9 && !all.full)
        let odd = try #require(tail.read(shard: 1, after: 5, through: 9, maxItems: 10, maxBytes: 1000))
        #expect(odd.items.map { $0.first } == [7, 9] && odd.last == 9)
        let two = try #require(tail.read(shard: nil, after: 4, through: 9, maxItems: 2, maxBytes: 1000))
        #expect(two.items.count == 2 && two.last == 6 && two.full)
        let bytes = try #require(tail.read(shard: nil, after: 4, through: 9, maxItems: 10, maxBytes: 25))
        #expect(bytes.items.count == 2 && bytes.last == 6 && bytes.full, "a third would pass 25 bytes")
        let first = try #require(tail.read(shard: nil, after: 4, through: 9, maxItems: 10, maxBytes: 1))
        #expect(first.items.count == 1, "the first alone may be larger")
    }

    @Test func itKeepsItsBytesForgetsWhatIsDeletedAndStartsAgainAfterAGap() {
        var tail = JournalTail(maximumBytes: 35)
        for position: UInt64 in 1...5 { tail.add(Self.chunk(position)) }
        #expect(tail.oldest == 3 && tail.newest == 5 && tail.bytes == 30, "the oldest went over 35 bytes")
        tail.forget(through: 3)
        #expect(tail.oldest == 4 && tail.bytes == 20)
        tail.forget(through: 2)
        #expect(tail.oldest == 4, "already gone")
        tail.add(Self.chunk(9))
        #expect(tail.oldest == 9 && tail.newest == 9, "6 to 8 were never added: only 9 is held")
        tail.forget(through: 9)
        #expect(tail.oldest == nil && tail.bytes == 0)
        for position in 10...3000 { tail.add(Self.chunk(UInt64(position), size: 1)) }
        #expect(tail.oldest == 2966 && tail.newest == 3000 && tail.bytes == 35)
    }

    /// Chunks of four shards, some with gateway headers, some batches only a header: every read the journal answers
    /// from memory is the one the store gives once the journal is opened again (its tail empty).
    @Test func theJournalAnswersFromMemoryAsFromItsStore() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let shards = 4
        var journal: Journal? = try Journal(
            directory: directory.path, shards: shards, log: Records.quiet, clock: { 1_000_000 })
        let users = (0..<6).map { "user-\($0)" }
        for round in 0..<12 {
            let records = users.shuffled().prefix(1 + round % 5).flatMap {
                Records.drive(user: $0, count: 1 + round % 3, start: 1_772_433_000 + Double(round * 10))
            }
            let slots = records.compactMap { journal?.admit($0.device) }
            let header =
                round % 3 == 0
                ? GatewayBatchHeader(gateway: "gw-\(round % 2)", progress: .watermark(1_772_433_000 + Double(round)))
                : nil
            try journal?.append([Journal.Batch(id: "\(round)", records: records, header: header, slots: slots)])
            if round % 4 == 0 {
                try journal?.append([
                    Journal.Batch(
                        id: "alone-\(round)", records: [], header: GatewayBatchHeader(gateway: "gw-2", progress: .end))
                ])
            }
        }
        let head = try #require(journal?.head)
        var requests: [FeedRequest] = []
        for shard in [nil, 0, 1, 2, 3] as [Int?] {
            for after in stride(from: 0, to: head, by: 3) {
                for (maxItems, maxBytes) in [(256, 4 << 20), (2, 4 << 20), (256, 200)] {
                    requests.append(
                        Requests.request(
                            after: after, through: after % 2 == 0 ? nil : min(head, after + 5),
                            maxItems: maxItems, maxBytes: maxBytes, shard: shard,
                            shards: shard == nil ? nil : shards))
                }
            }
        }
        let fromMemory = try requests.map { try journal?.read($0) }
        journal?.close()
        journal = try Journal(directory: directory.path, shards: shards, log: Records.quiet, clock: { 1_000_000 })
        let fromStore = try requests.map { try journal?.read($0) }
        journal?.close()
        #expect(fromMemory.count == fromStore.count && fromMemory.count > 50)
        for (index, request) in requests.enumerated() {
            #expect(
                fromMemory[index]?.items == fromStore[index]?.items && fromMemory[index]?.to == fromStore[index]?.to,
                "after \(request.after) shard \(request.shard.map(String.init) ?? "all")")
        }
    }

    /// Chunks retention deletes (by age here: the size rule records its deletions the same way) are not served from
    /// memory afterwards.
    @Test func whatRetentionDeletedIsNotServedFromMemory() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let clock = TestClock(1_000_000)
        let journal = try Journal(
            directory: directory.path, shards: 1, retentionAge: 600, log: Records.quiet,
            clock: { clock.now })
        defer { journal.close() }
        for round in 0..<3 {
            if round == 2 { clock.now += 1000 }
            let records = Records.drive(user: "u1", count: 2, start: 1_772_433_000 + Double(round * 10))
            try journal.append([
                Journal.Batch(id: "\(round)", records: records, slots: records.compactMap { journal.admit($0.device) })
            ])
        }
        #expect(try journal.read(Requests.request(after: 0)).items.count == 3)
        journal.acknowledged(Requests.request(after: 3, acknowledged: 3, consumer: "detection"))
        #expect(try journal.enforceRetention().expiredChunks == 2, "1 and 2 are old and read")
        let read = try journal.read(Requests.request(after: 0))
        #expect(read.items.count == 1 && read.to == 3, "only 3 is left")
    }
}
