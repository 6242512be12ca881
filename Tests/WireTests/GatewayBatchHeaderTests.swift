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

    /// The item as it was written before it was written in place: each member encoded as a document.
    static func itemAsDocuments(_ chunk: JournalChunk) -> [UInt8] {
        guard let header = chunk.header, case .object(let members) = header.value else { return chunk.records }
        var item = [0x80 | UInt8(members.count + 2)]
        for (key, value) in members + [("shard", .number(Double(chunk.shard)))] {
            item += MessagePack.encode(.string(key)) + MessagePack.encode(value)
        }
        return item + MessagePack.encode(.string("records")) + chunk.records
    }

    @Test func anItemIsWrittenByteForByteAsItsMembersEncodedOneByOne() {
        for header in [
            GatewayBatchHeader(gateway: "gw-1", progress: .watermark(1_772_433_001.5)),
            GatewayBatchHeader(gateway: "gw-1", progress: .watermark(1_772_433_001)),
            GatewayBatchHeader(gateway: String(repeating: "g", count: 200), progress: .end),
        ] {
            for shard in [0, 11, 200, 70_000] {
                let chunk = JournalChunk(records: Self.records, header: header, shard: shard)
                #expect(chunk.item == Self.itemAsDocuments(chunk))
            }
        }
    }

    /// What detection reads in place must be what the document reading gives, for every item, and the same error
    /// for one that is not right.
    @Test func readingInPlaceAgreesWithReadingTheDocument() throws {
        let identifiers = IdentifierCache()
        func parts(_ item: [UInt8]) throws -> JournalChunk {
            let (range, header, shard) = try item.withUnsafeBytes {
                try JournalChunk.parts(of: $0, identifiers: identifiers)
            }
            return JournalChunk(records: Array(item[range]), header: header, shard: shard)
        }
        var items = [Self.records]
        for header in [
            GatewayBatchHeader(gateway: "gw-1", progress: .watermark(1_772_433_001.5)),
            GatewayBatchHeader(gateway: "gateway-with-a-long-name-0123456789", progress: .watermark(7)),
            GatewayBatchHeader(gateway: "g", progress: .end),
        ] {
            items.append(JournalChunk(records: Self.records, header: header, shard: 5).item)
        }
        // Members in another order, an unknown one, a float shard, an integer watermark, `end` false.
        items.append(
            MessagePack.encode(
                .object([
                    ("shard", .number(3)), ("extra", .array([.number(1)])), ("watermark", .number(12.5)),
                    ("gateway", .string("gw")), ("records", .array([])),
                ])))
        items.append(
            [0x84] + MessagePack.encode(.string("gateway")) + MessagePack.encode(.string("gw"))
                + MessagePack.encode(.string("end")) + [0xC2] + MessagePack.encode(.string("watermark"))
                + MessagePack.encode(.number(9)) + MessagePack.encode(.string("records")) + Self.records)
        items.append(
            [0x84] + MessagePack.encode(.string("gateway")) + MessagePack.encode(.string("gw"))
                + MessagePack.encode(.string("watermark")) + MessagePack.encode(.number(4))
                + MessagePack.encode(.string("shard")) + [0xCB, 0x40, 0x08, 0, 0, 0, 0, 0, 0]
                + MessagePack.encode(.string("records")) + Self.records)
        for item in items {
            #expect(try parts(item) == JournalChunk(item: item))
        }
        // Items that are not right: the same error either way.
        let bad: [[UInt8]] = [
            MessagePack.encode(.object([("gateway", .string("g")), ("end", .bool(true))])),
            MessagePack.encode(.object([("gateway", .string("")), ("end", .bool(true)), ("records", .array([]))])),
            MessagePack.encode(
                .object([("gateway", .string("g")), ("watermark", .number(-1)), ("records", .array([]))])),
            MessagePack.encode(.object([("watermark", .number(1)), ("records", .array([]))])),
            MessagePack.encode(.object([("gateway", .string("g")), ("shard", .number(-2)), ("records", .array([]))])),
            // What the fuzzer found (journal_chunk): a shard far below zero, a watermark as a uint64 beyond the
            // times, a key that is not UTF-8.
            Array(Data(base64Encoded: "hKVzaGFyZMvcaWRAK8zQYwA9pGg=")!),
            [0x84] + MessagePack.encode(.string("gateway")) + MessagePack.encode(.string("gw-1"))
                + MessagePack.encode(.string("watermark")) + [0xCF, 0x41, 0x0A, 0x00, 0x5A, 0x04, 0x20, 0x00, 0x00]
                + MessagePack.encode(.string("shard")) + [3] + MessagePack.encode(.string("records")) + Self.records,
            [0x84, 0xA2, 0xFF, 0xFE, 0x01] + MessagePack.encode(.string("gateway")) + MessagePack.encode(.string("g"))
                + MessagePack.encode(.string("end")) + [0xC3] + MessagePack.encode(.string("records")) + Self.records,
        ]
        for item in bad {
            #expect(throws: WireError.self) { try parts(item) }
            var inPlace = ""
            var document = ""
            do { _ = try parts(item) } catch { inPlace = "\(error)" }
            do { _ = try JournalChunk(item: item) } catch { document = "\(error)" }
            #expect(inPlace == document)
        }
    }
}
