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
        // Chunks' records share arrays of up to `slabRecords` (each chunk's header and count read first), each chunk
        // a slice of one: a batch is split over the journal's shards, so a chunk holds a few records (about 6 of a
        // gateway batch of 100 over 16 shards), and an array of its own was an allocation every few records. Not one
        // array for the whole reply: a reply's records reach megabytes, and allocations that size raised
        // detection's peak memory in the timed benchmark from 68 to 70–75 MiB (glibc's heap kept what they left).
        var headers: [(records: Range<Int>, header: GatewayBatchHeader?, shard: Int, count: Int)?] = []
        headers.reserveCapacity(items.count)
        for item in items {
            item.withUnsafeBytes { bytes in
                do {
                    let parts = try JournalChunk.parts(of: bytes, identifiers: identifiers)
                    // The array's header, believed only as far as the records could be there (a damaged chunk must
                    // not reserve gigabytes): it sizes the slab, and the decoder checks the rest.
                    let count = min(
                        MessagePack.recordCount(UnsafeRawBufferPointer(rebasing: bytes[parts.records])) ?? 0,
                        parts.records.count, RecordBatch.maximumRecords)
                    headers.append((parts.records, parts.header, parts.shard, count))
                } catch {
                    log.error("unreadable chunk in the journal: skipped", ["error": "\(error)"])
                    headers.append(nil)
                }
            }
        }
        var slabs: [[SensorRecord]] = []
        var slab: [SensorRecord] = []
        var placed: [(slab: Int, records: Range<Int>)?] = []
        placed.reserveCapacity(items.count)
        var remaining = headers.reduce(0) { $0 + ($1?.count ?? 0) }
        for (item, parts) in zip(items, headers) {
            guard let parts else {
                placed.append(nil)
                continue
            }
            if slab.count + parts.count > slab.capacity {
                if !slab.isEmpty { slabs.append(slab) }
                slab = []
                slab.reserveCapacity(max(parts.count, min(remaining, Self.slabRecords)))
            }
            remaining -= parts.count
            item.withUnsafeBytes { bytes in
                let start = slab.count
                if decode(UnsafeRawBufferPointer(rebasing: bytes[parts.records]), into: &slab) {
                    placed.append((slabs.count, start..<slab.count))
                } else {
                    slab.removeSubrange(start...)
                    placed.append(nil)
                }
            }
        }
        // Also when empty: chunks of no records may name it.
        slabs.append(slab)
        var chunks: [JournalChunkRecords] = []
        chunks.reserveCapacity(items.count)
        for (parts, place) in zip(headers, placed) {
            guard let parts, let place else { continue }
            chunks.append(
                JournalChunkRecords(
                    records: slabs[place.slab][place.records], gateway: parts.header?.gateway, shard: parts.shard,
                    watermark: parts.header?.watermark))
        }
        return chunks
    }

    /// Records a shared array holds at most (about 70 KB).
    static let slabRecords = 512

    /// A chunk's records decoded where they are, onto `records`; false when the chunk cannot be read (what it
    /// appended is then the caller's to drop). `forEachStoredRecord`: ingest checked the batch whole when it stored
    /// it, so it is not scanned whole again here; each record is still read safely.
    private func decode(_ body: UnsafeRawBufferPointer, into records: inout [SensorRecord]) -> Bool {
        do {
            try MessagePack.forEachStoredRecord(
                body, maximumCount: RecordBatch.maximumRecords, identifiers: identifiers
            ) { index, result in
                switch consume result {
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
