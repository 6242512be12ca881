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

    /// The chunks the shell's decoder gives for a reply of these items (what cannot be read is logged, as errors).
    static func chunks(_ items: [[UInt8]]) -> [JournalChunkRecords] {
        JournalReplyDecoder(log: Log(category: "test", minimumLevel: .error)).chunks(FeedItems(frames: items[...]))
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
        let chunks = Self.chunks(items)
        #expect(chunks.map { Array($0.records) } == [first, [], large, last])
        #expect(chunks.map(\.gateway) == ["gw-1", "gw-2", "gw-1", "gw-3"])
        #expect(chunks.map(\.shard) == [0, 1, 2, 3])
        #expect(chunks.map(\.watermark) == [1_771_999_990, 1_771_999_995, 1_772_000_990, 1_772_001_990])
    }

    @Test func chunksShareArraysOfAtMostTheSharedSize() {
        // 20 chunks of 100 records: 2,000 records, about four shared arrays' worth, and one item that is no chunk.
        let size = 100
        let batches = (0..<20).map { Self.records(size, user: "u\($0)", from: 1_772_000_000 + Double($0) * 1000) }
        var items = batches.enumerated().map { number, records in
            Self.item(records, gateway: "gw", shard: number % 16, watermark: 1_771_999_000 + Double(number))
        }
        items.insert(Array("not a chunk".utf8), at: 7)
        let reply = Self.chunks(items)
        // The item that is no chunk reads as a bare array of records, found unreadable and skipped.
        #expect(reply.count == 20)
        var given: [[SensorRecord]] = []
        // The records each shared array holds: a chunk's records are a slice of one, at its positions in it, so a
        // new array's first chunk starts at 0 and the next chunks of the same array where the one before ended.
        var groups: [Int] = []
        var previousEnd = 0
        for chunk in reply {
            given.append(Array(chunk.records))
            if chunk.records.startIndex == 0 {
                groups.append(0)
            } else {
                #expect(chunk.records.startIndex == previousEnd)
            }
            groups[groups.count - 1] += chunk.records.count
            previousEnd = chunk.records.endIndex
        }
        #expect(given == batches)
        #expect(groups.count >= 2000 / JournalReplyDecoder.slabRecords)
        #expect(groups.allSatisfy { $0 <= JournalReplyDecoder.slabRecords }, "\(groups)")
    }

    @Test func aChunkFoundUnreadableWhenDecodedIsSkippedAndTheReplyGoesOn() {
        // An array that says it holds 5 records and holds none readable, then more records than one shared array
        // holds: the first is skipped, and the reply goes on to the second.
        let large = Self.records(JournalReplyDecoder.slabRecords + 100, user: "b", from: 1_772_001_000)
        let items: [[UInt8]] = [
            [0x95, 0xC1, 0xC1, 0xC1, 0xC1, 0xC1],
            Self.item(large, gateway: "gw-1", shard: 2, watermark: 1_772_000_990),
        ]
        let reply = Self.chunks(items)
        #expect(reply.map(\.records.count) == [large.count])
        #expect(reply.map { Array($0.records) } == [large], "the records as sent")
        #expect(reply.map(\.watermark) == [1_772_000_990])
    }
}
