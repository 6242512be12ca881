import RoadSaveModel
import Wire

/// A gateway batch as the journal stores it: which shard each record's chunk is, and each chunk's body (the
/// gateway's own MessagePack when it sent some).
extension Journal {
    /// The accepted records of one gateway batch.
    public struct Batch: Sendable {
        /// The gateway's batchID, for the operator (`batch` column).
        public var id: String?
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
            self.id = id
            self.records = records
            self.encoded = encoded
            self.header = header
            self.slots = slots
        }

        /// `chunks(shards:shard:)`, with an empty chunk for every shard the records left out when the batch has a
        /// header: a gateway's watermark concerns every shard.
        func chunksWithHeader(shards: Int, shard: (Int) -> Int) -> [(
            shard: Int, count: Int, body: [UInt8], indexes: [Int]?
        )] {
            let filled = chunks(shards: shards, shard: shard)
            guard header != nil, filled.count < shards else { return filled }
            var byShard: [Int: (shard: Int, count: Int, body: [UInt8], indexes: [Int]?)] = [:]
            for chunk in filled { byShard[chunk.shard] = chunk }
            return (0..<shards).map { byShard[$0] ?? ($0, 0, MessagePackFraming.arrayHeader(0), []) }
        }

        /// The chunk bodies of this batch, one per shard it has records of, in shard order: (shard, records, body,
        /// the indexes of its records in `records`, nil for all of them). `shard` gives the shard of the record at
        /// an index.
        func chunks(shards: Int, shard: (Int) -> Int) -> [(shard: Int, count: Int, body: [UInt8], indexes: [Int]?)] {
            guard !records.isEmpty else { return [] }
            let firstShard = shards > 1 ? shard(0) : 0
            let oneShard = shards == 1 || records.indices.dropFirst().allSatisfy { shard($0) == firstShard }
            if oneShard {
                let body: [UInt8]
                if let encoded {
                    body =
                        encoded.isWholeBody
                        ? encoded.body : MessagePackFraming.array(of: encoded.ranges, in: encoded.body)
                } else {
                    body = RecordBatch.encodeBatch(records, as: .msgpack)
                }
                return [(firstShard, records.count, body, nil)]
            }
            // Several shards: each gets the records of its devices, in batch order.
            var byShard = [[Int]](repeating: [], count: shards)
            var used: [Int] = []
            for index in records.indices {
                let shard = shard(index)
                if byShard[shard].isEmpty { used.append(shard) }
                byShard[shard].append(index)
            }
            return used.sorted().map { shard in
                let indexes = byShard[shard]
                let body: [UInt8]
                if let encoded {
                    var ranges: [Range<Int>] = []
                    ranges.reserveCapacity(indexes.count)
                    for index in indexes { ranges.append(encoded.ranges[index]) }
                    body = MessagePackFraming.array(of: ranges, in: encoded.body)
                } else {
                    body = RecordBatch.encodeBatch(indexes.map { records[$0] }, as: .msgpack)
                }
                return (shard, indexes.count, body, indexes)
            }
        }
    }
}
