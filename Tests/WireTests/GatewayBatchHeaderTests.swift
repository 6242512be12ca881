import Foundation
import RecordCodecs
import RoadSaveModel
import Testing
import Wire

/// The gateway batch's optional header (its stream and watermark) and the journal's feed items that carry it.
@Suite struct GatewayBatchHeaderTests {
    @Test(arguments: ContentType.allCases)
    func aHeaderReadsBackInEitherContentType(_ contentType: ContentType) throws {
        for header in [
            GatewayBatchHeader(gateway: "gw-7", progress: .watermark(1_772_433_000.25)),
            GatewayBatchHeader(gateway: "gw-7", progress: .end),
        ] {
            #expect(try GatewayBatchHeader.decode(header.encode(as: contentType), contentType: contentType) == header)
        }
        #expect(GatewayBatchHeader(gateway: "g", progress: .end).watermark == .infinity)
    }

    @Test func unknownMembersAreIgnoredAndEndFalseIsAWatermark() throws {
        let text = #"{"gateway": "gw", "watermark": 12.5, "end": false, "note": "x"}"#
        #expect(
            try GatewayBatchHeader.decode(Array(text.utf8), contentType: .json)
                == GatewayBatchHeader(gateway: "gw", progress: .watermark(12.5)))
    }

    /// Every way a header can be wrong names the member at fault.
    @Test(arguments: [
        (#"[1]"#, "header"),
        (#"{"watermark": 1}"#, "header.gateway"),
        (#"{"gateway": 7, "watermark": 1}"#, "header.gateway"),
        (#"{"gateway": "", "watermark": 1}"#, "header.gateway"),
        (#"{"gateway": "gw"}"#, "header.watermark"),
        (#"{"gateway": "gw", "watermark": "soon"}"#, "header.watermark"),
        (#"{"gateway": "gw", "watermark": -1}"#, "header.watermark"),
        (#"{"gateway": "gw", "watermark": 5e9}"#, "header.watermark"),
        (#"{"gateway": "gw", "end": "yes"}"#, "header.end"),
        (#"{"gateway": "gw", "#, "header"),
    ])
    func aBadHeaderNamesItsField(_ text: String, field: String) {
        #expect(throws: RecordError.self) { try GatewayBatchHeader.decode(Array(text.utf8), contentType: .json) }
        do {
            _ = try GatewayBatchHeader.decode(Array(text.utf8), contentType: .json)
        } catch {
            #expect(error.field == field, "\(text): \(error)")
        }
        let long = String(repeating: "g", count: GatewayBatchHeader.maximumGatewayBytes + 1)
        #expect(throws: RecordError.self) {
            try GatewayBatchHeader.decode(.object([("gateway", .string(long)), ("watermark", .number(1))]))
        }
    }

    static let records = RecordBatch.encodeBatch(
        [
            SensorRecord(
                device: DeviceID(app: "a", user: "u"), seq: 1, t: 1_772_433_000,
                payload: .location(LocationFix(latitude: 1, longitude: 2, speed: 3, horizontalAccuracy: 4)))
        ], as: .msgpack)

    @Test func aChunkWithoutAHeaderIsTheRecordsArrayAsBefore() throws {
        let chunk = JournalChunk(records: Self.records, header: nil)
        #expect(chunk.item == Self.records)
        #expect(try JournalChunk(item: Self.records) == chunk)
    }

    @Test func aChunkWithAHeaderReadsBackWithItsShardAndRecords() throws {
        for progress in [GatewayBatchHeader.Progress.watermark(1_772_433_001.5), .end] {
            let chunk = JournalChunk(
                records: Self.records, header: GatewayBatchHeader(gateway: "gw-1", progress: progress),
                shard: 11)
            let read = try JournalChunk(item: chunk.item)
            #expect(read == chunk)
            #expect(try RecordBatch.decodeBatch(read.records, contentType: .msgpack).accepted.count == 1)
        }
        let empty = JournalChunk(
            records: MessagePackFraming.arrayHeader(0),
            header: GatewayBatchHeader(gateway: "g", progress: .watermark(3)))
        #expect(try JournalChunk(item: empty.item) == empty)
    }

    @Test func aDamagedChunkIsAnErrorNotACrash() {
        let item = JournalChunk(
            records: Self.records, header: GatewayBatchHeader(gateway: "gw", progress: .end), shard: 2
        ).item
        for cut in 1..<item.count - 1 {
            // A cut inside the header or records either fails or reads records that then fail to decode.
            if let chunk = try? JournalChunk(item: Array(item.prefix(cut))) {
                #expect(chunk.records.count < Self.records.count)
            }
        }
        // A map whose last member is not the records.
        let noRecords = MessagePack.encode(.object([("gateway", .string("g")), ("end", .bool(true))]))
        #expect(throws: WireError.self) { try JournalChunk(item: noRecords) }
    }
}
