import Foundation
import RecordCodecs
import RoadSaveModel
import Testing

@testable import Wire

/// Detection's reading of the journal's chunks (`MessagePack.forEachStoredRecord`, without the structural scan of
/// the whole body that a gateway's batch gets) against the gateway batch's reading (`MessagePack.decodeRecords`):
/// the same records and errors for every batch the latter reads, and damaged batches refused or read record by
/// record without a crash.
@Suite("Stored records read as the batch decoder reads them")
struct StoredRecordReadingTests {
    /// Each record's result, or the error that refused the batch.
    static func stored(_ batch: [UInt8]) -> Result<[Result<SensorRecord, RecordError>], WireError> {
        batch.withUnsafeBytes { buffer in
            var results: [Result<SensorRecord, RecordError>] = []
            do throws(WireError) {
                try MessagePack.forEachStoredRecord(buffer, identifiers: IdentifierCache()) { index, result in
                    #expect(index == results.count)
                    results.append(result)
                }
                return .success(results)
            } catch {
                return .failure(error)
            }
        }
    }

    static func batch(_ elements: [[UInt8]]) -> [UInt8] {
        MessagePackFraming.arrayHeader(elements.count) + elements.flatMap { $0 }
    }

    /// Records the scanner reads in place and records it leaves to the general path (a member it does not know
    /// holding a container, a record that is not a map, nesting in a member).
    static var elements: [[UInt8]] {
        func str(_ text: String) -> [UInt8] { [0xA0 | UInt8(text.utf8.count)] + Array(text.utf8) }
        let head = str("kind") + str("steps") + str("app") + str("a") + str("user") + str("b")
        return Fixtures.records.map { MessagePack.encode(record: $0) } + [
            [0x86] + head + str("t") + [0xCE, 0x69, 0x8A, 0x2B, 0x00] + str("steps") + [0x01] + str("extra")
                + [0x92, 0x01, 0x81] + str("x") + [0x02],
            // A string that is not UTF-8 (what the fuzzer found: its error's byte offset counts from the batch).
            [0x86] + head + str("t") + [0xCE, 0x69, 0x8A, 0x2B, 0x00] + str("steps") + [0x01] + str("extra")
                + [0xA2, 0xC3, 0x28],
            [0x93, 0x01, 0x02, 0x03],
            [0x81] + str("x") + Array(repeating: 0x91, count: 20) + [0x01],
        ]
    }

    /// The same records and the same errors (byte offsets from the start of the batch in both).
    static func same(_ a: [Result<SensorRecord, RecordError>], _ b: [Result<SensorRecord, RecordError>]) -> Bool {
        String(reflecting: a) == String(reflecting: b)
    }

    @Test func everyBatchTheDecoderReadsIsReadTheSame() throws {
        let elements = Self.elements
        var batches = elements.map { Self.batch([$0]) }
        batches.append(Self.batch(elements))
        batches.append(Self.batch(Array(repeating: elements[0], count: 70_000 / elements[0].count))) // array 16
        batches.append(Self.batch([]))
        let located = try MessagePack.decodeRecords(Self.batch(elements)).filter {
            if case .failure(let error) = $0 { error.reason.contains("at byte") } else { false }
        }
        #expect(!located.isEmpty, "no error names a byte offset: the check of offsets would check nothing")
        for batch in batches {
            let expected = try MessagePack.decodeRecords(batch)
            let read = try Self.stored(batch).get()
            #expect(Self.same(read, expected), "\(read)")
        }
    }

    /// Each byte of a batch of three records replaced by bytes that change its type or length: where the batch
    /// decoder reads the batch, the same records; otherwise refused or read record by record, never a crash.
    @Test func damagedBatchesAgreeWhereTheDecoderReadsThem() {
        let replacements: [UInt8] = [
            0x00, 0x7F, 0x80, 0x8F, 0x90, 0x94, 0xA0, 0xBF, 0xC0, 0xC1, 0xC4, 0xCB, 0xD9,
            0xDC, 0xDD, 0xDE, 0xDF, 0xFF,
        ]
        var agreed = 0
        var checked = 0
        for record in Fixtures.records.prefix(12) {
            let batch = Self.batch([
                MessagePack.encode(record: Fixtures.records[0]), MessagePack.encode(record: record),
                MessagePack.encode(record: Fixtures.records[1]),
            ])
            for index in batch.indices {
                var damaged = batch
                damaged[index] = replacements[(index * 7 + checked) % replacements.count]
                checked += 1
                let stored = Self.stored(damaged)
                guard let expected = try? MessagePack.decodeRecords(damaged) else { continue }
                let read = try? stored.get()
                #expect(read.map { Self.same($0, expected) } == true, "byte \(index): \(String(describing: read))")
                agreed += 1
            }
        }
        #expect(checked > 500 && agreed > 100, "\(checked) damaged, \(agreed) read by the batch decoder")
    }

    @Test func aBatchThatIsNotOneArrayOfRecordsIsRefusedWhole() {
        let one = MessagePack.encode(record: Fixtures.records[0])
        let cases: [(bytes: [UInt8], code: WireError.Code)] = [
            ([], .truncated),
            ([0xDD, 0xFF], .truncated),
            (Self.batch([one]) + [0xC0], .trailingBytes),
            (Self.batch([one, one]).dropLast(3), .truncated),
            ([0x92] + one, .truncated),
            // An array header claiming 4 billion records: refused before anything is read or reserved.
            ([0xDD, 0xFF, 0xFF, 0xFF, 0xFF] + one, .tooLarge),
            ([0x91, 0xC1], .malformed),
            (MessagePack.encode(.object([("records", .array([]))])), .unexpectedShape),
        ]
        for (bytes, code) in cases {
            guard case .failure(let error) = Self.stored(Array(bytes)) else {
                Issue.record("read: \(bytes.prefix(12))")
                continue
            }
            #expect(error.code == code, "\(error)")
        }
    }

    /// A chunk's records are the rest of its item, not measured in place: bytes after them are refused by the records'
    /// reader, as the document reading refuses the item.
    @Test func bytesAfterAChunksRecordsAreRefusedByTheirReader() throws {
        let records = Self.batch([MessagePack.encode(record: Fixtures.records[0])])
        let chunk = JournalChunk(
            records: records, header: GatewayBatchHeader(gateway: "gw-1", progress: .watermark(1_772_433_001)),
            shard: 3)
        let item = chunk.item + [0xC0]
        #expect(throws: WireError.self) { try JournalChunk(item: item) }
        let parts = try item.withUnsafeBytes { try JournalChunk.parts(of: $0, identifiers: IdentifierCache()) }
        #expect(parts.header == chunk.header && parts.shard == 3)
        guard case .failure(let error) = Self.stored(Array(item[parts.records])) else {
            Issue.record("the records and the byte after them were read")
            return
        }
        #expect(error.code == .trailingBytes)
    }
}
