import RecordCodecs

/// One item of sensor-ingest's journal feed: the records one gateway batch had for one shard, and the batch's
/// header (`GatewayBatchHeader`) when the gateway sent one.
///
/// Without a header the item is the records' MessagePack array, as it always was. With one it is a map whose last
/// member is that array: `{"gateway": g, "watermark": w, "shard": s, "records": […]}` (or `"end": true` for the
/// watermark), so the records are found by measuring, not decoding, the members before them.
///
/// The shard matters to the watermark: a batch is split into one chunk per shard, and its promise holds for a
/// shard's devices once that shard's chunk is read, not before the batch's other chunks are (a detection that reads
/// every shard reads them one after the other).
public struct JournalChunk: Sendable, Equatable {
    /// A MessagePack array of PROTOCOL §2 maps (`RecordBatch.decodeBatch(_, contentType: .msgpack)`).
    public var records: [UInt8]
    public var header: GatewayBatchHeader?
    /// The journal shard of the chunk (sent with a header only).
    public var shard: Int

    public init(records: [UInt8], header: GatewayBatchHeader?, shard: Int = 0) {
        self.records = records
        self.header = header
        self.shard = shard
    }

    /// The feed item.
    public var item: [UInt8] {
        guard let header else { return records }
        var members: [(String, JSONValue)]
        guard case .object(let headerMembers) = header.value else { return records }
        members = headerMembers + [("shard", .number(Double(shard)))]
        var item = [0x80 | UInt8(members.count + 1)]
        for (key, value) in members {
            item += MessagePack.encode(.string(key))
            item += MessagePack.encode(value)
        }
        item += MessagePack.encode(.string("records"))
        item += records
        return item
    }

    /// Reads a feed item: a bare array of records, or a header map ending with them.
    public init(item: [UInt8]) throws(WireError) {
        guard let first = item.first, (0x80...0x8F).contains(first) else {
            self.init(records: item, header: nil)
            return
        }
        var members: [(String, JSONValue)] = []
        var records: Range<Int>?
        var shard = 0
        var offset = 1
        for _ in 0..<Int(first & 0x0F) {
            let key = try Self.object(in: item, at: &offset)
            guard case .string(let name) = try MessagePack.decode(item[key]) else {
                throw WireError(
                    .nonStringKey, "a journal chunk's header has a key that is not a string", offset: key.lowerBound)
            }
            let value = try Self.object(in: item, at: &offset)
            if name == "records" {
                records = value
            } else if name == "shard" {
                guard case .number(let number) = try MessagePack.decode(item[value]), number >= 0, number < 1_048_576,
                    number == number.rounded()
                else {
                    throw WireError(
                        .unexpectedShape, "a journal chunk's shard is not a shard number", offset: value.lowerBound)
                }
                shard = Int(number)
            } else {
                members.append((name, try MessagePack.decode(item[value])))
            }
        }
        guard offset == item.count, let records else {
            throw WireError(.unexpectedShape, "a journal chunk's map must end with its records", offset: offset)
        }
        let header: GatewayBatchHeader
        do {
            header = try GatewayBatchHeader.decode(.object(members))
        } catch {
            throw WireError(.unexpectedShape, "a journal chunk's header: \(error)", offset: 0)
        }
        self.init(records: Array(item[records]), header: header, shard: shard)
    }

    /// The range of the object at `offset`, which then moves past it.
    private static func object(in item: [UInt8], at offset: inout Int) throws(WireError) -> Range<Int> {
        let extent = item.withUnsafeBufferPointer { bytes in
            offset < bytes.count
                ? MessagePack.extent(bytes.baseAddress! + offset, count: bytes.count - offset) : .incomplete
        }
        switch extent {
        case .complete(let length):
            defer { offset += length }
            return offset..<offset + length
        case .incomplete:
            throw WireError(.truncated, "a journal chunk ends inside its header", offset: offset)
        case .malformed(let error):
            throw error
        }
    }
}
