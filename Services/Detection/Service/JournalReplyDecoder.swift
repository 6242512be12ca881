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

    /// The reply's chunks, decoded as they are read (`DecodedJournalReply`). Each chunk's header and record count
    /// are read here; an item that is no chunk is logged and skipped.
    public func chunks(_ items: FeedItems) -> DecodedJournalReply {
        var parts: [ChunkParts?] = []
        parts.reserveCapacity(items.count)
        for item in items {
            item.withUnsafeBytes { bytes in
                do {
                    let found = try JournalChunk.parts(of: bytes, identifiers: identifiers)
                    // The array's header, believed only as far as the records could be there (a damaged chunk must
                    // not reserve gigabytes): it sizes the shared arrays, and the decoder checks the rest.
                    let count = min(
                        MessagePack.recordCount(UnsafeRawBufferPointer(rebasing: bytes[found.records])) ?? 0,
                        found.records.count, RecordBatch.maximumRecords)
                    parts.append(
                        ChunkParts(records: found.records, header: found.header, shard: found.shard, count: count))
                } catch {
                    log.error("unreadable chunk in the journal: skipped", ["error": "\(error)"])
                    parts.append(nil)
                }
            }
        }
        return DecodedJournalReply(decoder: self, items: items, parts: parts)
    }

    /// What a chunk's item says before its records are decoded: where they are in it, its gateway's header, its
    /// shard, and how many records its array holds.
    struct ChunkParts {
        var records: Range<Int>
        var header: GatewayBatchHeader?
        var shard: Int
        var count: Int
    }

    /// Records a shared array holds at most (about 70 KB): a chunk holds a few records (about 6 of a gateway batch of
    /// 100 over 16 shards), and an array a chunk was an allocation every few records.
    static let slabRecords = 512

    /// A chunk's records decoded where they are, onto `records`; false when the chunk cannot be read (what it
    /// appended is then the caller's to drop). `forEachStoredRecord`: ingest checked the batch whole when it stored
    /// it, so it is not scanned whole again here; each record is still read safely.
    func decode(_ body: UnsafeRawBufferPointer, into records: inout [SensorRecord]) -> Bool {
        do {
            try MessagePack.forEachStoredRecord(
                body, maximumCount: RecordBatch.maximumRecords, identifiers: identifiers
            ) { index, result in
                switch result {
                case .success(let record): records.append(record)
                case .failure(let error):
                    log.error(
                        "invalid record in the journal: skipped",
                        ["index": String(index), "field": error.field, "reason": error.reason])
                }
            }
            return true
        } catch {
            log.error("unreadable chunk in the journal: skipped", ["error": "\(error)"])
            return false
        }
    }
}
