import Foundation
import RecordCodecs
import RoadSaveModel
import Testing
import Wire

@testable import IngestService

/// sensor-ingest keeps a gateway's MessagePack records as they came: the journal's chunks are the gateway's bytes (the
/// whole body, or the accepted elements under a new header, split by shard), never a second encoding; and what
/// detection decodes from them is exactly what was validated.
@Suite struct GatewayBodyStorageTests {
    static let app = "app-1"

    /// A gateway message [identity, batchID, contentType, body] whose body packs numbers the way other encoders do
    /// (integers where a float64 would do), so a re-encoding would differ from it byte for byte.
    static func message(_ records: [JSONValue]) -> (message: [[UInt8]], body: [UInt8]) {
        let body = MessagePack.encode(.array(records))
        return ([Array("gw".utf8), Array("batch-1".utf8), ContentType.msgpack.frame, body], body)
    }

    static func location(user: String, seq: Int, lat: Double = -33.9) -> JSONValue {
        .object([
            ("kind", .string("location")), ("app", .string(app)), ("user", .string(user)),
            ("seq", .number(Double(seq))),
            ("t", .number(1_772_433_000 + Double(seq))), ("lat", .number(lat)), ("lon", .number(18)),
            ("hacc", .number(5)),
        ])
    }

    /// Where each element of `body` lies, as ingest measures them while decoding (`MessagePack.forEachElement`); nil
    /// when the body cannot be read.
    static func ranges(of body: [UInt8]) -> [Range<Int>]? {
        var ranges: [Range<Int>] = []
        do {
            try body.withUnsafeBytes { buffer in
                try MessagePack.forEachElement(buffer, identifiers: IdentifierCache()) { _, range, _ in
                    ranges.append(range)
                }
            }
        } catch {
            return nil
        }
        return ranges
    }

    /// Where each of `elements` lies in the body `message(elements)` makes, worked out from each one's own encoding.
    static func encodedRanges(_ elements: [JSONValue]) -> [Range<Int>] {
        var offset = MessagePackFraming.arrayHeader(elements.count).count
        return elements.map { element in
            let size = MessagePack.encode(element).count
            defer { offset += size }
            return offset..<offset + size
        }
    }

    static func chunks(_ batch: GatewayBatch, shards: Int) throws -> [(shard: Int, count: Int, body: [UInt8])] {
        let stored = Journal.Batch(id: batch.batchText, records: batch.records, encoded: batch.encoded)
        return stored.chunks(shards: shards) { DeviceShard.of(batch.records[$0].device, shards: shards) }
            .map { chunk in
                var body: [UInt8] = []
                stored.appendBody(of: chunk, to: &body)
                return (chunk.shard, chunk.count, body)
            }
    }

    @Test func aWhollyAcceptedBodyIsStoredAsItCame() throws {
        let (message, body) = Self.message((1...5).map { Self.location(user: "u1", seq: $0) })
        let batch = GatewayBatch(message: message, applications: [Self.app], maximumBatch: 100)
        #expect(batch.acknowledgement.accepted == 5)
        let chunks = try Self.chunks(batch, shards: 1)
        #expect(chunks.count == 1)
        #expect(chunks[0].body == body)
        #expect(try Records.decode([chunks[0].body]) == batch.records)
    }

    @Test func rejectedRecordsAreLeftOutAndTheOthersKeptAsTheyCame() throws {
        let elements = [
            Self.location(user: "u1", seq: 1), Self.location(user: "u1", seq: 2, lat: 95),
            Self.location(user: "u1", seq: 3),
        ]
        let (message, body) = Self.message(elements)
        let batch = GatewayBatch(message: message, applications: [Self.app], maximumBatch: 100)
        #expect(batch.acknowledgement.accepted == 2)
        #expect(batch.acknowledgement.rejected.map(\.index) == [1])
        let chunk = try #require(try Self.chunks(batch, shards: 1).first)
        let ranges = Self.encodedRanges(elements)
        #expect(chunk.body == [0x92] + Array(body[ranges[0]]) + Array(body[ranges[2]]))
        #expect(try Records.decode([chunk.body]) == batch.records)
    }

    @Test func everyKindOfRejectionIsNamedInOrderAndOnlyTheAcceptedBytesAreKept() throws {
        // A bad latitude, an unknown application, a device over its application's limit and trailing good records.
        var other = Self.location(user: "u2", seq: 3)
        if case .object(var members) = other {
            members[1] = ("app", .string("app-2"))
            other = .object(members)
        }
        let elements = [
            Self.location(user: "u1", seq: 1), Self.location(user: "u1", seq: 2, lat: 95), other,
            Self.location(user: "full", seq: 4), Self.location(user: "u1", seq: 5), Self.location(user: "full", seq: 6),
        ]
        let (message, _) = Self.message(elements)
        var asked: [[String]] = []
        let batch = GatewayBatch(
            message: message, applications: [Self.app], maximumBatch: 100,
            devices: (
                { records in
                    asked.append(records.map(\.device.user))
                    return (
                        slots: records.filter { $0.device.user != "full" }.map { _ in 7 },
                        refused: records.indices.filter { records[$0].device.user == "full" }
                    )
                }, { app in "\(app) is full" }
            ))
        #expect(asked == [["u1", "full", "u1", "full"]], "asked once, with the valid records of known applications")
        #expect(batch.acknowledgement.accepted == 2)
        #expect(batch.acknowledgement.rejected.map(\.index) == [1, 2, 3, 5])
        #expect(batch.acknowledgement.rejected.map(\.field) == ["lat", "app", "user", "user"])
        #expect(batch.acknowledgement.rejected[2].reason == "app-1 is full")
        #expect(batch.records.map(\.seq) == [1, 5])
        #expect(batch.slots == [7, 7])
        let ranges = Self.encodedRanges(elements)
        #expect(batch.encoded?.ranges == [ranges[0], ranges[4]])
        #expect(batch.encoded?.isWholeBody == false)
        let chunk = try #require(try Self.chunks(batch, shards: 1).first)
        #expect(try Records.decode([chunk.body]) == batch.records)
    }

    @Test func aBodyWithBytesAfterItsArrayIsRefusedAndNothingOfItKept() throws {
        let (message, body) = Self.message((1...2).map { Self.location(user: "u1", seq: $0) })
        var padded = message
        padded[3] = body + [0xC0]
        let batch = GatewayBatch(message: padded, applications: [Self.app], maximumBatch: 100)
        #expect(batch.unreadable?.contains("after the end of the document") == true)
        #expect(batch.records.isEmpty && batch.encoded == nil)
    }

    @Test func severalShardsGetTheirDevicesRecordsInBatchOrder() throws {
        let users = [Records.user(inShard: 0, of: 2), Records.user(inShard: 1, of: 2)]
        var elements: [JSONValue] = []
        for seq in 1...6 { elements.append(Self.location(user: users[seq % 2], seq: seq)) }
        let (message, _) = Self.message(elements)
        let batch = GatewayBatch(message: message, applications: [Self.app], maximumBatch: 100)
        let chunks = try Self.chunks(batch, shards: 2)
        #expect(chunks.map(\.shard) == [0, 1])
        #expect(chunks.map(\.count) == [3, 3])
        for chunk in chunks {
            let records = try Records.decode([chunk.body])
            #expect(records == batch.records.filter { DeviceShard.of($0.device, shards: 2) == chunk.shard })
        }
    }

    /// JSON bodies (and anything whose elements cannot be measured) are encoded as before.
    @Test func jsonBodiesAreEncoded() throws {
        let json = Array(#"[{"kind":"steps","app":"app-1","user":"u1","seq":1,"t":1772433000,"steps":3}]"#.utf8)
        let batch = GatewayBatch(
            message: [Array("gw".utf8), Array("b".utf8), ContentType.json.frame, json],
            applications: [Self.app], maximumBatch: 100)
        #expect(batch.encoded == nil)
        let chunk = try #require(try Self.chunks(batch, shards: 1).first)
        #expect(chunk.body == RecordBatch.encodeBatch(batch.records, as: .msgpack))
    }

    @Test func everyKindOfElementIsMeasuredWhereItLies() throws {
        let values: [JSONValue] = [
            .null, .bool(true), .number(1), .number(-3), .number(300), .number(70_000),
            .number(5_000_000_000), .number(-5_000_000_000), .number(0.5),
            .string(String(repeating: "x", count: 40)), .string(String(repeating: "y", count: 300)),
            .array((0..<20).map { .number(Double($0)) }),
            .object((0..<17).map { ("k\($0)", .string("v")) }),
        ]
        let body = MessagePack.encode(.array(values))
        let ranges = try #require(Self.ranges(of: body))
        #expect(ranges == Self.encodedRanges(values))
        // None of them is a record (each is an error, read by msgpack-c's path), and each is measured all the same.
        #expect(ranges.count == values.count)
        for (range, value) in zip(ranges, values) {
            #expect(try MessagePack.decode(Array(body[range])) == value)
        }
        #expect(ranges.first?.lowerBound == MessagePackFraming.arrayHeader(values.count).count)
        #expect(ranges.last?.upperBound == body.count)
        // A body cut short, or with bytes after its array, is not read.
        #expect(Self.ranges(of: Array(body.dropLast())) == nil)
        #expect(Self.ranges(of: body + [0xC0]) == nil)
        #expect(Self.ranges(of: [0xC1]) == nil)
        // Headers of every size.
        for count in [0, 15, 16, 65_535, 65_536] {
            #expect(
                Array(MessagePackFraming.arrayHeader(count))
                    == Array(
                        MessagePack.encode(.array(Array(repeating: .null, count: count))).prefix(
                            MessagePackFraming.arrayHeader(count).count)))
        }
    }
}
