import RecordCodecs
import RoadSaveModel
import Testing

@testable import Wire

@Suite("Record batches")
struct RecordBatchTests {
    /// A batch of good and bad elements, with the field each bad one must be rejected for (nil = accepted).
    static let mixed: [(JSONValue, String?)] = [
        (Fixtures.locationValue, nil),
        (Fixtures.location(with: "lat", .number(91)), "lat"),
        (
            .object([
                ("kind", .string("steps")), ("app", .string("a")), ("user", .string("u")),
                ("t", .number(1_718_708_242)),
                ("steps", .number(10)), ("extra", .array([.null])),
            ]), nil
        ),
        (Fixtures.location(without: "user"), "user"),
        (.string("not a record"), "(record)"),
        (Fixtures.location(with: "kind", .string("teleport")), "kind"),
        (Fixtures.location(with: "t", .string("yesterday")), "t"),
        (
            .object([
                ("kind", .string("activity")), ("app", .string("a")), ("user", .string("u")),
                ("t", .number(1_718_708_242)),
                ("activity", .string("automotive")), ("confidence", .string("high")),
            ]), nil
        ),
        (Fixtures.location(with: "seq", .number(-1)), "seq"),
    ]

    static func body(_ contentType: ContentType) -> [UInt8] {
        let array = JSONValue.array(mixed.map(\.0))
        return contentType == .json ? JSONText.bytes(array) : MessagePack.encode(array)
    }

    @Test(arguments: ContentType.allCases)
    func mixedBatchGivesPerIndexErrors(_ contentType: ContentType) throws {
        let batch = try RecordBatch.decodeBatch(Self.body(contentType), contentType: contentType)
        #expect(batch.records.map(\.index) == Array(0..<Self.mixed.count))
        for (slot, (value, field)) in zip(batch.records, Self.mixed) {
            switch (slot.result, field) {
            case (.success(let record), nil):
                #expect(record == (try RecordDecoding.record(from: value)))
            case (.failure(let error), let field?):
                #expect(error.field == field, "index \(slot.index): \(error)")
                #expect(!error.reason.isEmpty)
            default:
                Issue.record("index \(slot.index): expected \(field ?? "success"), got \(slot.result)")
            }
        }
        #expect(batch.accepted.count == 3)
        #expect(batch.rejections.map(\.index) == [1, 3, 4, 5, 6, 8])
        #expect(batch.rejections.map(\.field) == ["lat", "user", "(record)", "kind", "t", "seq"])
        let ack = batch.acknowledgement
        #expect(ack.accepted == 3)
        #expect(ack.rejected == batch.rejections)
    }

    @Test(arguments: ContentType.allCases)
    func bothContentTypesAgree(_ contentType: ContentType) throws {
        let other: ContentType = contentType == .json ? .msgpack : .json
        let a = try RecordBatch.decodeBatch(Self.body(contentType), contentType: contentType)
        let b = try RecordBatch.decodeBatch(Self.body(other), contentType: other)
        #expect(a.accepted == b.accepted)
        #expect(a.rejections.map(\.index) == b.rejections.map(\.index))
        #expect(a.rejections.map(\.field) == b.rejections.map(\.field))
    }

    @Test(arguments: ContentType.allCases)
    func unreadableBodiesThrow(_ contentType: ContentType) {
        let notArray =
            contentType == .json ? JSONText.bytes(Fixtures.locationValue) : MessagePack.encode(Fixtures.locationValue)
        #expect(throws: WireError.self) { try RecordBatch.decodeBatch(notArray, contentType: contentType) }
        do {
            _ = try RecordBatch.decodeBatch(notArray, contentType: contentType)
        } catch {
            #expect(error.code == .unexpectedShape)
            #expect(error.reason.contains("array"))
        }
        for garbage: [UInt8] in [[], [0xC1, 0x00], Array("{\"kind\":".utf8), [0x93, 0x01], Array("hello".utf8)] {
            #expect(throws: WireError.self, "\(garbage)") {
                try RecordBatch.decodeBatch(garbage, contentType: contentType)
            }
        }
    }

    @Test func msgpackBodyReadAsJSONThrows() {
        #expect(throws: WireError.self) {
            try RecordBatch.decodeBatch(Self.body(.msgpack), contentType: .json)
        }
    }

    @Test func tooManyRecordsAreRefusedWhole() {
        let count = RecordBatch.maximumRecords + 1
        // array32 header, then `count` × nil
        let body: [UInt8] =
            [
                0xDD, UInt8(count >> 24 & 0xFF), UInt8(count >> 16 & 0xFF), UInt8(count >> 8 & 0xFF),
                UInt8(count & 0xFF),
            ] + [UInt8](repeating: 0xC0, count: count)
        do {
            _ = try RecordBatch.decodeBatch(body, contentType: .msgpack)
            Issue.record("expected tooLarge")
        } catch {
            #expect(error.code == .tooLarge)
        }
        let json = Array(("[" + Array(repeating: "null", count: count).joined(separator: ",") + "]").utf8)
        do {
            _ = try RecordBatch.decodeBatch(json, contentType: .json)
            Issue.record("expected tooLarge")
        } catch {
            #expect(error.code == .tooLarge)
        }
    }

    @Test func emptyBatchIsFine() throws {
        #expect(try RecordBatch.decodeBatch([0x90], contentType: .msgpack).records.isEmpty)
        #expect(
            try RecordBatch.decodeBatch(Array(" [ ] ".utf8), contentType: .json).acknowledgement
                == Acknowledgement(accepted: 0, rejected: []))
    }

    // MARK: Encoding

    @Test func msgpackBatchRoundTripsExactly() throws {
        let body = RecordBatch.encodeBatch(Fixtures.records, as: .msgpack)
        let batch = try RecordBatch.decodeBatch(body, contentType: .msgpack)
        #expect(batch.rejections.isEmpty, "\(batch.rejections)")
        #expect(batch.accepted == Fixtures.records)
    }

    /// Each record of a MessagePack batch (and of ingest's journal, which stores these batches) is the PROTOCOL §2
    /// map, keys in the documented order, times exact.
    @Test func msgpackRecordIsTheContractMap() throws {
        let value = try MessagePack.decode(RecordBatch.encodeBatch([Fixtures.records[0]], as: .msgpack))
        guard case .array(let records) = value, records.count == 1, case .object(let members) = records[0] else {
            Issue.record("not an array of one map: \(value)")
            return
        }
        #expect(members.map(\.0) == ["kind", "app", "user", "seq", "t", "lat", "lon", "speed", "course", "hacc"])
        #expect(records[0]["t"] == .number(1_718_708_242.123_456_7))
        #expect(records[0]["seq"] == .number(1))
    }

    @Test func jsonBatchRoundTripsAtTheModelPrecision() throws {
        let body = RecordBatch.encodeBatch(Fixtures.jsonExactRecords, as: .json)
        #expect(body.first == UInt8(ascii: "[") && body.last == UInt8(ascii: "]"))
        let batch = try RecordBatch.decodeBatch(body, contentType: .json)
        #expect(batch.rejections.isEmpty, "\(batch.rejections)")
        #expect(batch.accepted == Fixtures.jsonExactRecords)
        // The JSON of each element is the model's own line.
        #expect(
            String(decoding: body, as: UTF8.self)
                == "[" + Fixtures.jsonExactRecords.map { $0.json() }.joined(separator: ",") + "]")
    }

    @Test(arguments: ContentType.allCases)
    func emptyBatchEncodes(_ contentType: ContentType) throws {
        let body = RecordBatch.encodeBatch([], as: contentType)
        #expect(body == (contentType == .json ? Array("[]".utf8) : [0x90]))
    }

    // MARK: Content types

    @Test func contentTypeParsing() {
        #expect(ContentType(parsing: "application/json") == .json)
        #expect(ContentType(parsing: "application/msgpack") == .msgpack)
        #expect(ContentType(parsing: "Application/JSON; charset=utf-8") == .json)
        #expect(ContentType(parsing: "  application/msgpack ;q=1") == .msgpack)
        #expect(ContentType(parsing: "application/x-msgpack") == .msgpack)
        #expect(ContentType(parsing: "application/vnd.msgpack") == .msgpack)
        #expect(ContentType(parsing: "text/plain") == nil)
        #expect(ContentType(parsing: "application/jsonx") == nil)
        #expect(ContentType(parsing: "") == nil)
        #expect(ContentType(parsing: "json") == nil)
        #expect(ContentType(frame: Array("application/json".utf8)) == .json)
        #expect(ContentType(frame: [0xFF, 0xFE]) == nil)
        #expect(ContentType.msgpack.frame == Array("application/msgpack".utf8))
    }
}
