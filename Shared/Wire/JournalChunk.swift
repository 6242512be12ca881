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

    /// The feed item: written in one array, the header's members (those of `GatewayBatchHeader.value`, in its
    /// order), the shard, and the records after them.
    public var item: [UInt8] {
        guard let header else { return records }
        var item: [UInt8] = []
        item.reserveCapacity(records.count + header.gateway.utf8.count + 48)
        Self.appendItemHeader(header, shard: shard, to: &item)
        item += records
        return item
    }

    /// The start of a feed item with a header, up to where its records go (the key `records`): a writer that has the
    /// records' bytes elsewhere appends them next, and the item is whole (sensor-ingest writes a chunk's records
    /// straight after it, and stores them from there).
    public static func appendItemHeader(_ header: GatewayBatchHeader, shard: Int, to item: inout [UInt8]) {
        Packer.append(to: &item) { packer in
            packer.packMapHeader(4)
            packer.pack("gateway")
            packer.pack(header.gateway)
            switch header.progress {
            case .watermark(let time):
                packer.pack("watermark")
                packer.packNumber(time)
            case .end:
                packer.pack("end")
                packer.pack(true)
            }
            packer.pack("shard")
            packer.packNumber(Double(shard))
            packer.pack("records")
        }
    }

    /// Where a feed item's parts are, read in place: its records (a range of the item's bytes), its header and its
    /// shard. For a reader that decodes the records where they are instead of copying them out (detection), with
    /// the gateway's name taken from `identifiers`. The common shape (the members `JournalChunk.item` writes, in any
    /// order, the records last) is read without building a document, and the records are then the rest of the item,
    /// not measured: their reader (`MessagePack.forEachStoredRecord`) refuses them if they do not end with it.
    /// Anything else (an unknown member, another encoding of a number) is read as `init(item:)` reads it, whose
    /// errors it throws.
    public static func parts(of item: UnsafeRawBufferPointer, identifiers: IdentifierCache) throws(WireError) -> (
        records: Range<Int>, header: GatewayBatchHeader?, shard: Int
    ) {
        guard let base = item.baseAddress?.assumingMemoryBound(to: UInt8.self), item.count > 0,
            (0x80...0x8F).contains(base[0])
        else { return (0..<item.count, nil, 0) }
        if let parts = inPlace(base, count: item.count, identifiers: identifiers) { return parts }
        return try read(Array(item))
    }

    /// `parts(of:identifiers:)` for the common shape; nil for anything else.
    private static func inPlace(_ bytes: UnsafePointer<UInt8>, count: Int, identifiers: IdentifierCache) -> (
        records: Range<Int>, header: GatewayBatchHeader?, shard: Int
    )? {
        var cursor = MessagePackCursor(bytes, count: count, offset: 1)
        var gateway: String?
        var watermark: Double?
        var end: Bool?
        var shard: Int?
        var records: Range<Int>?
        let members = Int(bytes[0] & 0x0F)
        for member in 0..<members {
            guard let key = cursor.string() else { return nil }
            if MessagePackCursor.equals(key, "records") {
                // The last member (as `item` writes it; anything else is read the general way): the records are the
                // rest of the item, not measured here, since their reader checks that they end where the item does.
                guard member == members - 1, cursor.offset < count else { return nil }
                records = cursor.offset..<count
                cursor.offset = count
            } else if MessagePackCursor.equals(key, "gateway") {
                guard gateway == nil, let text = cursor.string(),
                    let name = identifiers.string(text.baseAddress!, text.count, ascii: false)
                else { return nil }
                gateway = name
            } else if MessagePackCursor.equals(key, "watermark") {
                guard watermark == nil, let value = cursor.number() else { return nil }
                watermark = value
            } else if MessagePackCursor.equals(key, "end") {
                guard end == nil, let flag = cursor.byte(), flag == 0xC2 || flag == 0xC3 else { return nil }
                end = flag == 0xC3
            } else if MessagePackCursor.equals(key, "shard") {
                guard shard == nil, let value = cursor.number(), value >= 0, value < 1_048_576,
                    value == value.rounded()
                else {
                    return nil
                }
                shard = Int(value)
            } else {
                // A member this reader does not know (the header's readers ignore it, once it reads as a document).
                return nil
            }
        }
        guard cursor.offset == count, let records, let gateway,
            let header = try? GatewayBatchHeader.checked(gateway: gateway, end: end ?? false, watermark: watermark)
        else { return nil }
        return (records, header, shard ?? 0)
    }

    /// Reads a feed item: a bare array of records, or a header map ending with them.
    public init(item: [UInt8]) throws(WireError) {
        let (records, header, shard) = try Self.read(item)
        self.init(records: header == nil ? item : Array(item[records]), header: header, shard: shard)
    }

    /// The item's parts, each member decoded as a document (what `parts(of:identifiers:)` falls back to).
    private static func read(_ item: [UInt8]) throws(WireError) -> (
        records: Range<Int>, header: GatewayBatchHeader?, shard: Int
    ) {
        guard let first = item.first, (0x80...0x8F).contains(first) else { return (0..<item.count, nil, 0) }
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
        return (records, header, shard)
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
