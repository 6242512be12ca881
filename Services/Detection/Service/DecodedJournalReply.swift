import DetectionEngine
import RoadSaveModel
import Wire

/// A journal feed reply's chunks, decoded as the core reads them: a group of chunks at a time, into one array of up
/// to `JournalReplyDecoder.slabRecords` records (about 70 KB) that the group's chunks are slices of. The core applies
/// a group's records while they are still in the processor's cache: a whole reply decoded first (up to megabytes of
/// records while detection is behind) was out of it again by the time the core read each record, whose first load
/// was then a third of the core's own time in detection's profile under the flood. Not one array for the whole
/// reply either: allocations that size raised detection's peak memory (glibc's heap kept what they left).
public struct DecodedJournalReply: JournalReplyChunks {
    let decoder: JournalReplyDecoder
    let items: FeedItems
    /// Each item's parts, read before any record is decoded; nil for an item that is no chunk (skipped).
    let parts: [JournalReplyDecoder.ChunkParts?]
    public let chunkCount: Int

    init(decoder: JournalReplyDecoder, items: FeedItems, parts: [JournalReplyDecoder.ChunkParts?]) {
        precondition(parts.count == items.count, "a part per item")
        self.decoder = decoder
        self.items = items
        self.parts = parts
        chunkCount = parts.reduce(0) { $0 + ($1 == nil ? 0 : 1) }
    }

    public func makeIterator() -> Iterator { Iterator(reply: self) }

    public struct Iterator: IteratorProtocol {
        private let reply: DecodedJournalReply
        /// The next item to decode.
        private var nextItem = 0
        /// Records of the items not yet decoded: they size the next shared array.
        private var remaining: Int
        /// The group decoded last, and how many of its chunks were given.
        private var group: [JournalChunkRecords] = []
        private var given = 0
        /// Where the group's chunks' records are in its shared array, by item.
        private var placed: [(item: Int, records: Range<Int>)] = []

        init(reply: DecodedJournalReply) {
            self.reply = reply
            remaining = reply.parts.reduce(0) { $0 + ($1?.count ?? 0) }
            // Made once a reply, not grown group by group (chunks of a few records each: a group may hold all).
            group.reserveCapacity(reply.chunkCount)
            placed.reserveCapacity(reply.chunkCount)
        }

        public mutating func next() -> JournalChunkRecords? {
            // A group can come out empty (its one chunk found unreadable): the reply goes on with the next.
            while given == group.count {
                guard nextItem < reply.parts.count else { return nil }
                decodeGroup()
            }
            given += 1
            return group[given - 1]
        }

        /// Decodes the next chunks into one shared array: as many as fit in `slabRecords` records, and at least one
        /// item is read. A chunk whose records cannot be read is logged and skipped (its records, if any, dropped).
        private mutating func decodeGroup() {
            group.removeAll(keepingCapacity: true)
            given = 0
            var records: [SensorRecord] = []
            while nextItem < reply.parts.count {
                guard let parts = reply.parts[nextItem] else {
                    nextItem += 1
                    continue
                }
                if records.count + parts.count > records.capacity {
                    // The array is full (the chunk starts the next group), or none was made yet: chunks of no
                    // records before it need none.
                    guard records.capacity == 0 else { break }
                    records.reserveCapacity(
                        Swift.max(parts.count, Swift.min(remaining, JournalReplyDecoder.slabRecords)))
                }
                remaining -= parts.count
                let start = records.count
                let readable = reply.items[nextItem].withUnsafeBytes { bytes in
                    reply.decoder.decode(UnsafeRawBufferPointer(rebasing: bytes[parts.records]), into: &records)
                }
                if readable {
                    placed.append((nextItem, start..<records.count))
                } else {
                    records.removeSubrange(start...)
                }
                nextItem += 1
            }
            // The slices are taken once the array is complete: a slice taken earlier would make the next append copy it.
            for (item, range) in placed {
                let parts = reply.parts[item]!
                group.append(
                    JournalChunkRecords(
                        records: records[range], gateway: parts.header?.gateway, shard: parts.shard,
                        watermark: parts.header?.watermark))
            }
            placed.removeAll(keepingCapacity: true)
        }
    }
}
