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
        var chunks: [JournalChunkRecords] = []
        chunks.reserveCapacity(items.count)
        for item in items {
            item.withUnsafeBytes { bytes in
                if let chunk = chunk(bytes) { chunks.append(chunk) }
            }
        }
        return chunks
    }

    /// One chunk read where it is: its header in place (`JournalChunk.parts`), its records decoded straight into
    /// the array the core takes (`MessagePack.forEachRecord`), nothing copied. Nil when it cannot be read.
    private func chunk(_ item: UnsafeRawBufferPointer) -> JournalChunkRecords? {
        var records: [SensorRecord] = []
        let header: GatewayBatchHeader?
        let shard: Int
        do {
            let parts = try JournalChunk.parts(of: item, identifiers: identifiers)
            (header, shard) = (parts.header, parts.shard)
            try MessagePack.forEachRecord(
                UnsafeRawBufferPointer(rebasing: item[parts.records]), maximumCount: RecordBatch.maximumRecords,
                identifiers: identifiers
            ) { count in
                records.reserveCapacity(count)
            } _: { index, result in
                switch result {
                case .success(let record): records.append(record)
                case .failure(let error):
                    log.error(
                        "invalid record in the journal: skipped",
                        ["index": String(index), "field": error.field, "reason": error.reason])
                }
            }
        } catch {
            log.error("unreadable chunk in the journal: skipped", ["error": "\(error)"])
            return nil
        }
        return JournalChunkRecords(
            records: records, gateway: header?.gateway, shard: shard, watermark: header?.watermark)
    }
}
