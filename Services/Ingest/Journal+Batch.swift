import RoadSaveModel
import Wire

/// A gateway batch as the journal stores it: which shard each record's chunk is, and each chunk's body (the
/// gateway's own MessagePack when it sent some).
extension Journal {
    /// The accepted records of one gateway batch.
    public struct Batch: Sendable {
        /// The gateway's batchID, for the operator (`batch` column): its UTF-8, bound where the gateway's frame has it.
        public var idUTF8: ArraySlice<UInt8>?
        /// The gateway's batchID as text.
        public var id: String? { idUTF8.map { String(decoding: $0, as: UTF8.self) } }
        public var records: [SensorRecord]
        /// The records' MessagePack as the gateway sent them, when it did (nil: they are encoded here).
        public var encoded: GatewayBody?
        /// The gateway's stream and watermark, when the batch had a header.
        public var header: GatewayBatchHeader?
        /// Each record's device's slot number from `admit` (nil: found by device here).
        public var slots: [Int]?

        public init(
            id: String?, records: [SensorRecord], encoded: GatewayBody? = nil, header: GatewayBatchHeader? = nil,
            slots: [Int]? = nil
        ) {
            precondition(encoded.map { $0.ranges.count == records.count } ?? true, "a range per record")
            precondition(slots.map { $0.count == records.count } ?? true, "a slot per record")
            self.idUTF8 = id.map { Array($0.utf8)[...] }
            self.records = records
            self.encoded = encoded
            self.header = header
            self.slots = slots
        }

        /// A gateway batch's: its batchID as it came (the first 200 bytes; text the journal repairs as `batchText`
        /// does when they are not ASCII), without making a string of it.
        public init(
            gatewayBatchID: ArraySlice<UInt8>, records: [SensorRecord], encoded: GatewayBody? = nil,
            header: GatewayBatchHeader? = nil, slots: [Int]? = nil
        ) {
            let id = gatewayBatchID.prefix(GatewayBatch.batchTextBytes)
            self.init(id: nil, records: records, encoded: encoded, header: header, slots: slots)
            idUTF8 = id.allSatisfy { $0 < 0x80 } ? id : Array(String(decoding: id, as: UTF8.self).utf8)[...]
        }

        /// One chunk of the batch: its shard, its records' indexes in `records` (nil: all of them, in order).
        struct Chunk {
            var shard: Int
            var indexes: ArraySlice<Int>?
            var count: Int
        }

        /// `chunks(shards:shard:)`, with an empty chunk for every shard the records left out when the batch has a
        /// header: a gateway's watermark concerns every shard.
        func chunksWithHeader(shards: Int, shard: (Int) -> Int) -> [Chunk] {
            chunks(shards: shards, shard: shard, everyShard: header != nil)
        }

        /// The chunks of this batch, one per shard it has records of (`everyShard`: one per shard, empty where it
        /// has none), in shard order. `shard` gives the shard of the record at an index.
        func chunks(shards: Int, shard: (Int) -> Int, everyShard: Bool = false) -> [Chunk] {
            let every = everyShard && shards > 1
            guard !records.isEmpty else {
                return everyShard ? (0..<shards).map { Chunk(shard: $0, indexes: [], count: 0) } : []
            }
            let firstShard = shards > 1 ? shard(0) : 0
            if shards == 1 || records.indices.dropFirst().allSatisfy({ shard($0) == firstShard }) {
                let all = Chunk(shard: firstShard, indexes: nil, count: records.count)
                guard every else { return [all] }
                return (0..<shards).map { $0 == firstShard ? all : Chunk(shard: $0, indexes: [], count: 0) }
            }
            // Several shards: each gets the records of its devices, in batch order. The indexes are sorted by shard
            // (a counting sort) into one array that the chunks share, after the `shards + 1` counters that first say
            // where each shard's indexes start, then, as they are placed, where they end: one allocation for both.
            var sorted = [Int](repeating: 0, count: shards + 1 + records.count)
            for index in records.indices { sorted[shard(index) + 1] += 1 }
            sorted[0] = shards + 1
            for next in 0..<shards { sorted[next + 1] += sorted[next] }
            for index in records.indices {
                let shard = shard(index)
                sorted[sorted[shard]] = index
                sorted[shard] += 1
            }
            var chunks: [Chunk] = []
            chunks.reserveCapacity(shards) // made once, not grown chunk by chunk
            var start = shards + 1
            for shard in 0..<shards {
                let end = sorted[shard]
                if end > start || every {
                    chunks.append(Chunk(shard: shard, indexes: sorted[start..<end], count: end - start))
                }
                start = end
            }
            return chunks
        }

        /// The body of `chunk` (a MessagePack array of its records: the gateway's own bytes when it sent
        /// MessagePack, else encoded here) appended to `bytes`.
        func appendBody(of chunk: Chunk, to bytes: inout [UInt8]) {
            guard let encoded else {
                let chosen = chunk.indexes.map { $0.map { records[$0] } } ?? records
                bytes += RecordBatch.encodeBatch(chosen, as: .msgpack)
                return
            }
            guard let indexes = chunk.indexes else {
                if encoded.isWholeBody {
                    bytes += encoded.body
                } else {
                    MessagePackFraming.appendArray(of: nil, ranges: encoded.ranges, in: encoded.body, to: &bytes)
                }
                return
            }
            MessagePackFraming.appendArray(of: indexes, ranges: encoded.ranges, in: encoded.body, to: &bytes)
        }

        /// About the bytes of `chunk`'s body (exactly, for a gateway's MessagePack; 0 when it is to be encoded).
        func bodySize(of chunk: Chunk) -> Int {
            guard let encoded else { return 0 }
            guard let indexes = chunk.indexes else { return encoded.body.count + 5 }
            return encoded.ranges.withUnsafeBufferPointer { ranges in
                indexes.withUnsafeBufferPointer { indexes in
                    var size = 5
                    for index in 0..<indexes.count { size += ranges[indexes[index]].count }
                    return size
                }
            }
        }
    }
}
