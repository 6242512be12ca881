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

    public func chunks(_ items: ArraySlice<[UInt8]>) -> [JournalChunkRecords] {
        var chunks: [JournalChunkRecords] = []
        chunks.reserveCapacity(items.count)
        for item in items {
            let chunk: JournalChunk
            let decoded: DecodedBatch
            do {
                chunk = try JournalChunk(item: item)
                decoded = try RecordBatch.decodeBatch(chunk.records, contentType: .msgpack, identifiers: identifiers)
            } catch {
                log.error("unreadable chunk in the journal: skipped", ["error": "\(error)"])
                continue
            }
            var records: [SensorRecord] = []
            records.reserveCapacity(decoded.records.count)
            for (index, result) in decoded.records {
                switch result {
                case .success(let record): records.append(record)
                case .failure(let error):
                    log.error(
                        "invalid record in the journal: skipped",
                        [
                            "index": String(index), "field": error.field,
                            "reason": error.reason,
                        ])
                }
            }
            chunks.append(
                JournalChunkRecords(
                    records: records, gateway: chunk.header?.gateway, shard: chunk.shard,
                    watermark: chunk.header?.watermark))
        }
        return chunks
    }
}
