import DetectionEngine
import Foundation
import Logging
import RoadSaveModel
import Testing
import Wire

@testable import DetectionService

/// A journal reply's chunks as the core takes them: slices of shared record arrays (issue 46), each chunk with its
/// own records, gateway, shard and watermark, what cannot be read skipped.
@Suite struct JournalReplyDecoderTests {
    static func records(_ count: Int, user: String, from t: Double) -> [SensorRecord] {
        (0..<count).map {
            SensorRecord(
                device: DeviceID(app: "demo-app", user: user), seq: UInt64($0 + 1), t: t + Double($0),
                payload: .location(LocationFix(latitude: 60, longitude: 25 + Double($0) / 1e4, speed: 10)))
        }
    }

    static func item(_ records: [SensorRecord], gateway: String, shard: Int, watermark: Double) -> [UInt8] {
        JournalChunk(
            records: RecordBatch.encodeBatch(records, as: .msgpack),
            header: GatewayBatchHeader(gateway: gateway, progress: .watermark(watermark)), shard: shard
        ).item
    }

    @Test func everyChunkKeepsItsOwnRecordsAcrossSharedArrays() {
        // More records in all than one shared array holds, a chunk of none, and an unreadable one between.
        let first = Self.records(3, user: "a", from: 1_772_000_000)
        let large = Self.records(JournalReplyDecoder.slabRecords + 100, user: "b", from: 1_772_001_000)
        let last = Self.records(2, user: "c", from: 1_772_002_000)
        let items: [[UInt8]] = [
            Self.item(first, gateway: "gw-1", shard: 0, watermark: 1_771_999_990),
            Array("not a chunk".utf8),
            Self.item([], gateway: "gw-2", shard: 1, watermark: 1_771_999_995),
            Self.item(large, gateway: "gw-1", shard: 2, watermark: 1_772_000_990),
            Self.item(last, gateway: "gw-3", shard: 3, watermark: 1_772_001_990),
        ]
        let chunks = JournalReplyDecoder(log: Log(category: "test", minimumLevel: .error))
            .chunks(FeedItems(frames: items[...]))
        #expect(chunks.map { Array($0.records) } == [first, [], large, last])
        #expect(chunks.map(\.gateway) == ["gw-1", "gw-2", "gw-1", "gw-3"])
        #expect(chunks.map(\.shard) == [0, 1, 2, 3])
        #expect(chunks.map(\.watermark) == [1_771_999_990, 1_771_999_995, 1_772_000_990, 1_772_001_990])
    }
}
