import CMessagePack
import RecordCodecs
import RoadSaveModel

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// MessagePack ⇄ `JSONValue`, over msgpack-c (Debian's libmsgpack-dev).
///
/// Decoding accepts exactly what has a JSON equivalent: nil, booleans, integers and floats (as `.number`), UTF-8
/// strings, arrays, and maps whose keys are strings. `bin` and `ext` (timestamps included) are refused rather than
/// guessed at, and so are NaN and the infinities, which no JSON number and no record field can hold. Integers beyond
/// ±2^53 become the nearest `Double`, as they would in JSON.
///
/// msgpack-c trusts the length headers it reads: an array header claiming 4 billion elements makes it reserve 96 GB
/// before it looks at a single element, and its errors carry no position. So every input is first checked by a small
/// structural scan in Swift (`Scan.check`): each container must fit in the bytes that follow it (an element takes at
/// least one byte), nesting stays within `maximumDepth`, lengths within `Limits`, and the scan names the byte offset of
/// whatever is wrong. Only a document that passes reaches `msgpack_unpack`, which then builds its object tree in one
/// zone, and the walk turns that tree into a `JSONValue` (strings validated as UTF-8; well-known field names and
/// values are taken from a table instead of being validated and built each time).
public enum MessagePack {
    /// Deepest nesting of containers accepted (the same as `JSONParser.maximumDepth`): records are flat.
    public static let maximumDepth = JSONParser.maximumDepth

    public enum Limits {
        /// Largest document accepted.
        public static let maximumBytes = 64 << 20
        /// Longest string accepted, in bytes.
        public static let maximumStringBytes = 1 << 20
        /// Most elements in one array (or pairs in one map).
        public static let maximumCount = 1 << 20
    }

    // MARK: Decoding

    /// Decodes one complete MessagePack document; bytes after it are an error.
    @inlinable
    public static func decode(_ bytes: some Collection<UInt8>) throws(WireError) -> JSONValue {
        // The generic front stays inlinable so that callers get the contiguous bytes without generic dispatch; the
        // work is done by the non-generic `decodeValue`.
        let result =
            bytes.withContiguousStorageIfAvailable { decodeValue(UnsafeRawBufferPointer($0)) }
            ?? Array(bytes).withUnsafeBytes { decodeValue($0) }
        return try result.get()
    }

    /// Decodes a gateway batch (an array of records): each element by `MessagePackRecordScanner` where it can, else
    /// from msgpack-c's tree, and validated by the one validator either way. A document that cannot be read, or is
    /// not an array, or has more than `maximumCount` elements, throws; a bad element is a `RecordError` in its slot (a
    /// string that is not UTF-8, or a NaN, names the member it is in) and does not spoil the others. `identifiers`
    /// (one per thread) keeps the strings of apps and users seen before, so that they are not made again.
    @inlinable
    public static func decodeRecords(
        _ bytes: some Collection<UInt8>, maximumCount: Int = Limits.maximumCount,
        identifiers: IdentifierCache? = nil
    )
        throws(WireError) -> [Result<SensorRecord, RecordError>]
    {
        let identifiers = identifiers ?? IdentifierCache()
        let result =
            bytes.withContiguousStorageIfAvailable {
                decodeRecords(UnsafeRawBufferPointer($0), maximumCount, identifiers)
            } ?? Array(bytes).withUnsafeBytes { decodeRecords($0, maximumCount, identifiers) }
        return try result.get()
    }

    @usableFromInline
    static func decodeValue(_ buffer: UnsafeRawBufferPointer) -> Result<JSONValue, WireError> {
        do throws(WireError) {
            let document = try Document(buffer)
            defer { document.free() }
            return .success(try document.walker.value(document.root))
        } catch {
            return .failure(error)
        }
    }

    /// The batch is checked whole, then unpacked one element at a time into one zone that is cleared between
    /// elements: memory stays at one record's worth and in cache, however long the batch.
    @usableFromInline
    static func decodeRecords(_ buffer: UnsafeRawBufferPointer, _ maximumCount: Int, _ identifiers: IdentifierCache)
        -> Result<[Result<SensorRecord, RecordError>], WireError>
    {
        var results: [Result<SensorRecord, RecordError>] = []
        do throws(WireError) {
            try forEachRecord(buffer, maximumCount: maximumCount, identifiers: identifiers) { count in
                results.reserveCapacity(count)
            } _: { _, result in
                results.append(result)
            }
            return .success(results)
        } catch {
            return .failure(error)
        }
    }

    /// How many records a batch (an array of records) holds, read from its array header alone; nil when it does not
    /// begin with one. For a reader that sizes one array for several batches before it reads them (`forEachRecord`
    /// checks the whole batch).
    public static func recordCount(_ buffer: UnsafeRawBufferPointer) -> Int? {
        try? arrayHeader(buffer).count
    }

    /// `arrayHeader(_:)` of a buffer that may be too short to hold the header (or empty): then `truncated`.
    private static func arrayHeader(_ buffer: UnsafeRawBufferPointer) throws(WireError) -> (count: Int, offset: Int) {
        guard let first = buffer.first, let base = buffer.baseAddress else {
            throw WireError(.truncated, "an empty batch", offset: 0)
        }
        let headerSize = first == 0xDC ? 3 : first == 0xDD ? 5 : 1
        guard buffer.count >= headerSize else { throw WireError(.truncated, "a batch ends in its header", offset: 0) }
        return try arrayHeader(base.assumingMemoryBound(to: UInt8.self))
    }

    /// An array's element count and the offset of its first element (`bytes` holds the whole header).
    private static func arrayHeader(_ bytes: UnsafePointer<UInt8>) throws(WireError) -> (count: Int, offset: Int) {
        switch bytes[0] {
        case 0x90...0x9F: return (Int(bytes[0] & 0x0F), 1)
        case 0xDC: return (Int(Scan.be16(bytes + 1)), 3)
        case 0xDD: return (Int(Scan.be32(bytes + 1)), 5)
        default:
            throw WireError(
                .unexpectedShape, "a batch must be an array of records, found \(Scan.describe(bytes[0]))",
                offset: 0)
        }
    }

    /// Reads a batch (an array of records) element by element, as `decodeRecords` does, handing each element's
    /// record or error to `body` with its index, in order, after `count` has been told how many there are; nothing
    /// is collected, so a reader that keeps only the records (detection, of its journal's chunks) allocates no array
    /// of results. msgpack-c's zone is made only for an element the scanner cannot read in place.
    public static func forEachRecord(
        _ buffer: UnsafeRawBufferPointer, maximumCount: Int = Limits.maximumCount, identifiers: IdentifierCache,
        count: (Int) -> Void = { _ in },
        _ body: (Int, Result<SensorRecord, RecordError>) -> Void
    ) throws(WireError) {
        try forEachElement(buffer, maximumCount: maximumCount, identifiers: identifiers, count: count) {
            index, _, result in body(index, result)
        }
    }

    /// `forEachRecord`, also handing `body` where each element lies in `buffer` (its bytes, from the start of the
    /// buffer): sensor-ingest stores the accepted records' bytes as the gateway sent them, measured in the same pass
    /// that decodes them. (A buffer with bytes after its array is refused whole, as by every decoder here.)
    public static func forEachElement(
        _ buffer: UnsafeRawBufferPointer, maximumCount: Int = Limits.maximumCount, identifiers: IdentifierCache,
        count: (Int) -> Void = { _ in },
        _ body: (Int, Range<Int>, Result<SensorRecord, RecordError>) -> Void
    ) throws(WireError) {
        let bytes = try Document.check(buffer)
        let header = try arrayHeader(bytes)
        let total = header.count
        var offset = header.offset
        guard total <= maximumCount else {
            throw WireError(.tooLarge, "a batch of \(total) records; at most \(maximumCount) are accepted", offset: 0)
        }
        count(total)
        guard total > 0 else { return }
        var zone: UnsafeMutablePointer<msgpack_zone>?
        defer { if let zone { msgpack_zone_free(zone) } }
        let walker = Walker(base: UnsafeRawPointer(bytes))
        let chars = UnsafeRawPointer(bytes).assumingMemoryBound(to: CChar.self)
        for index in 0..<total {
            if let (length, result) = scannedRecord(bytes + offset, count: buffer.count - offset, identifiers) {
                body(index, offset..<offset + length, result)
                offset += length
                continue
            }
            if zone == nil { zone = msgpack_zone_new(4096) }
            guard let zone else {
                throw WireError(.tooLarge, "out of memory for a \(buffer.count)-byte document")
            }
            var element = msgpack_object()
            let start = offset
            let status = msgpack_unpack(chars, buffer.count, &offset, zone, &element)
            guard status == MSGPACK_UNPACK_SUCCESS || status == MSGPACK_UNPACK_EXTRA_BYTES else {
                throw WireError(.malformed, "not MessagePack (msgpack-c refused it)", offset: offset)
            }
            body(index, start..<offset, walker.record(element))
            msgpack_zone_clear(zone)
        }
    }

    /// `forEachRecord` for a batch that was checked whole when it was stored (detection's journal chunks, which
    /// sensor-ingest took through `forEachElement`): no structural scan of the whole body first, which cost detection
    /// a twentieth of its work. Each element is still read safely, as `RecordFileReader` reads a file: in place by
    /// the bounds-checked scanner, or else measured (`extent`) and checked alone (`record(_:count:)`) before msgpack-c
    /// sees it. A body that is not one array whose elements end where the buffer does throws, after `body` may have
    /// had some of its records: the caller drops them. Each result is `body`'s to keep (`consuming`): a record kept
    /// from a borrowed one was copied first.
    public static func forEachStoredRecord(
        _ buffer: UnsafeRawBufferPointer, maximumCount: Int = Limits.maximumCount, identifiers: IdentifierCache,
        _ body: (Int, consuming Result<SensorRecord, RecordError>) -> Void
    ) throws(WireError) {
        let header = try arrayHeader(buffer)
        guard header.count <= maximumCount else {
            throw WireError(
                .tooLarge, "a batch of \(header.count) records; at most \(maximumCount) are accepted", offset: 0)
        }
        let bytes = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
        var offset = header.offset
        for index in 0..<header.count {
            let remaining = buffer.count - offset
            if remaining > 0, let (length, result) = scannedRecord(bytes + offset, count: remaining, identifiers) {
                body(index, result)
                offset += length
                continue
            }
            switch remaining > 0 ? extent(bytes + offset, count: remaining) : .incomplete {
            case .complete(let length):
                body(index, record(bytes + offset, count: length, base: bytes))
                offset += length
            case .incomplete:
                throw WireError(.truncated, "the batch ends inside record \(index + 1)", offset: offset)
            case .malformed(let error):
                throw WireError(error.code, error.reason, offset: offset + (error.offset ?? 0))
            }
        }
        guard offset == buffer.count else {
            throw WireError(.trailingBytes, "\(buffer.count - offset) bytes after the batch", offset: offset)
        }
    }

    /// The fast path of both batch readers: the scanner reads a plain record in place (into fields of its own: it
    /// only sets the members it meets), and the one validator makes it a record or an error. Nil where the scanner
    /// leaves the record to the general path, or the bytes end inside it; else the record's length and result.
    private static func scannedRecord(
        _ bytes: UnsafePointer<UInt8>, count: Int, _ identifiers: IdentifierCache
    ) -> (length: Int, result: Result<SensorRecord, RecordError>)? {
        var fields = RecordFields()
        guard
            case .record(let length) = MessagePackRecordScanner.scan(
                bytes, count: count, into: &fields, identifiers: identifiers)
        else { return nil }
        do throws(RecordError) {
            return (length, .success(try RecordDecoding.record(from: fields)))
        } catch {
            return (length, .failure(error))
        }
    }

    static func typeName(_ object: msgpack_object) -> String {
        switch object.type {
        case MSGPACK_OBJECT_NIL: "nil"
        case MSGPACK_OBJECT_BOOLEAN: "a boolean"
        case MSGPACK_OBJECT_POSITIVE_INTEGER, MSGPACK_OBJECT_NEGATIVE_INTEGER: "an integer"
        case MSGPACK_OBJECT_FLOAT32, MSGPACK_OBJECT_FLOAT64: "a float"
        case MSGPACK_OBJECT_STR: "a string"
        case MSGPACK_OBJECT_ARRAY: "an array"
        case MSGPACK_OBJECT_MAP: "a map"
        case MSGPACK_OBJECT_BIN: "binary data (bin)"
        default: "an extension type (ext)"
        }
    }

    // MARK: Encoding

    /// Encodes a value in the smallest MessagePack form: numbers that are integral and within Int64 as integers,
    /// others as float64. A non-finite number is written as nil (as `JSONObjectWriter` writes `null`), since no
    /// decoder here accepts one. Object members keep their order.
    public static func encode(_ value: JSONValue) -> [UInt8] {
        withPacker(capacity: 256) { packer in packer.pack(value) }
    }

    /// Runs `body` with a packer and returns the bytes written (room for `capacity` made first).
    static func withPacker(capacity: Int, _ body: (inout Packer) -> Void) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(capacity)
        Packer.append(to: &bytes, body)
        return bytes
    }
}
