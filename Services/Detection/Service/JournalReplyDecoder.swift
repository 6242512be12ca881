import DetectionEngine
import Logging
import RecordCodecs
import RoadSaveModel
import Wire

/// A journal feed reply's items as the core takes them: each chunk's records decoded (with their gateway's header),
/// what cannot be read logged and skipped (it was validated when it was stored). The detection shell's, and what
/// `roadsave-bench counts` measures of a feed reply.
public struct JournalReplyDecoder {
    /// The apps' and users' strings of the journals' records, made once (`MessagePack.decodeRecords`).
    private let identifiers = IdentifierCache()
    private let log: Log

    public init(log: Log) {
        self.log = log
    }

    public func chunks(_ items: FeedItems) -> [JournalChunkRecords] {
        // Every chunk's records in one array, each chunk a slice of it: a batch is split over the journal's shards,
        // so a chunk holds a few records (about 6 of a gateway batch of 100 over 16 shards), and an array of its
        // own was an allocation every few records.
        var records: [SensorRecord] = []
        var parts: [(records: Range<Int>, header: GatewayBatchHeader?, shard: Int)] = []
        parts.reserveCapacity(items.count)
        for item in items {
            item.withUnsafeBytes { bytes in
                let start = records.count
                guard let (header, shard) = chunk(bytes, into: &records) else {
                    records.removeSubrange(start...)
                    return
                }
                parts.append((start..<records.count, header, shard))
            }
        }
        return parts.map { part in
            JournalChunkRecords(
                records: records[part.records], gateway: part.header?.gateway, shard: part.shard,
                watermark: part.header?.watermark)
        }
    }

    /// One chunk read where it is: its header in place (`JournalChunk.parts`), its records decoded straight onto
    /// `records` (`MessagePack.forEachRecord`), nothing copied. Nil when it cannot be read.
    private func chunk(_ item: UnsafeRawBufferPointer, into records: inout [SensorRecord])
        -> (header: GatewayBatchHeader?, shard: Int)?
    {
        do {
            let parts = try JournalChunk.parts(of: item, identifiers: identifiers)
            try MessagePack.forEachRecord(
                UnsafeRawBufferPointer(rebasing: item[parts.records]), maximumCount: RecordBatch.maximumRecords,
                identifiers: identifiers
            ) { count in
                // Doubling, as appending would: reserving each chunk's exact count would move the array every time.
                let needed = records.count + count
                if records.capacity < needed { records.reserveCapacity(max(needed, 2 * records.capacity)) }
            } _: { index, result in
                switch result {
                case .success(let record): records.append(record)
                case .failure(let error):
                    log.error(
                        "invalid record in the journal: skipped",
                        ["index": String(index), "field": error.field, "reason": error.reason])
                }
            }
            return (parts.header, parts.shard)
        } catch {
            log.error("unreadable chunk in the journal: skipped", ["error": "\(error)"])
            return nil
        }
    }
}
