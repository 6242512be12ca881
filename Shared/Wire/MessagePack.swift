import CMessagePack
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
        do throws(WireError) {
            let bytes = try Document.check(buffer)
            let count: Int
            var offset: Int
            switch bytes[0] {
            case 0x90...0x9F: (count, offset) = (Int(bytes[0] & 0x0F), 1)
            case 0xDC: (count, offset) = (Int(Scan.be16(bytes + 1)), 3)
            case 0xDD: (count, offset) = (Int(Scan.be32(bytes + 1)), 5)
            default:
                throw WireError(
                    .unexpectedShape, "a batch must be an array of records, found \(Scan.describe(bytes[0]))",
                    offset: 0)
            }
            guard count <= maximumCount else {
                throw WireError(
                    .tooLarge, "a batch of \(count) records; at most \(maximumCount) are accepted", offset: 0)
            }
            var results: [Result<SensorRecord, RecordError>] = []
            results.reserveCapacity(count)
            guard count > 0 else { return .success(results) }
            guard let zone = msgpack_zone_new(4096) else {
                throw WireError(.tooLarge, "out of memory for a \(buffer.count)-byte document")
            }
            defer { msgpack_zone_free(zone) }
            let walker = Walker(base: UnsafeRawPointer(bytes))
            let chars = UnsafeRawPointer(bytes).assumingMemoryBound(to: CChar.self)
            for _ in 0..<count {
                // The fast path: the scanner reads a plain record in place (into fields of its own: it only sets
                // the members it meets).
                var fields = RecordFields()
                if case .record(let length) = MessagePackRecordScanner.scan(
                    bytes + offset, count: buffer.count - offset,
                    into: &fields, identifiers: identifiers)
                {
                    offset += length
                    do throws(RecordError) {
                        results.append(.success(try RecordDecoding.record(from: fields)))
                    } catch {
                        results.append(.failure(error))
                    }
                    continue
                }
                var element = msgpack_object()
                let status = msgpack_unpack(chars, buffer.count, &offset, zone, &element)
                guard status == MSGPACK_UNPACK_SUCCESS || status == MSGPACK_UNPACK_EXTRA_BYTES else {
                    throw WireError(.malformed, "not MessagePack (msgpack-c refused it)", offset: offset)
                }
                results.append(walker.record(element))
                msgpack_zone_clear(zone)
            }
            return .success(results)
        } catch {
            return .failure(error)
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

    /// Runs `body` with a packer over a fresh `msgpack_sbuffer` and returns the bytes written.
    static func withPacker(capacity: Int, _ body: (inout Packer) -> Void) -> [UInt8] {
        var packer = Packer(capacity: capacity)
        defer { packer.release() }
        body(&packer)
        return packer.bytes()
    }
}

// MARK: - A document in msgpack-c's zone

/// The front half of every decoder: size limit, structural scan, then `msgpack_unpack` into a zone that the caller
/// frees (`free()`) once it has walked the tree. Strings in the tree point into the input buffer.
struct Document {
    let root: msgpack_object
    let walker: Walker
    private let zone: UnsafeMutablePointer<msgpack_zone>

    /// The size limit and the structural scan; the start of the bytes, for unpacking.
    static func check(_ buffer: UnsafeRawBufferPointer) throws(WireError) -> UnsafePointer<UInt8> {
        guard buffer.count <= MessagePack.Limits.maximumBytes else {
            throw WireError(.tooLarge, "\(buffer.count) bytes; at most \(MessagePack.Limits.maximumBytes) are accepted")
        }
        guard let base = buffer.baseAddress, buffer.count > 0 else {
            throw WireError(.truncated, "empty input", offset: 0)
        }
        let bytes = base.assumingMemoryBound(to: UInt8.self)
        if let error = Scan.check(bytes, count: buffer.count) { throw error }
        return bytes
    }

    init(_ buffer: UnsafeRawBufferPointer) throws(WireError) {
        let base = UnsafeRawPointer(try Document.check(buffer))

        // msgpack-c's containers take 24 bytes an element; the scan bounds the elements by the input's length.
        let chunk = min(max(buffer.count * 4, 512), 1 << 20)
        guard let zone = msgpack_zone_new(chunk) else {
            throw WireError(.tooLarge, "out of memory for a \(buffer.count)-byte document")
        }
        var offset = 0
        var root = msgpack_object()
        let status = msgpack_unpack(base.assumingMemoryBound(to: CChar.self), buffer.count, &offset, zone, &root)
        guard status == MSGPACK_UNPACK_SUCCESS else {
            msgpack_zone_free(zone)
            switch status {
            case MSGPACK_UNPACK_EXTRA_BYTES:
                throw WireError(.trailingBytes, "bytes after the end of the document", offset: offset)
            case MSGPACK_UNPACK_CONTINUE:
                throw WireError(.truncated, "the input ends inside a value", offset: buffer.count)
            case MSGPACK_UNPACK_NOMEM_ERROR:
                throw WireError(.tooLarge, "out of memory for a \(buffer.count)-byte document")
            default:
                throw WireError(.malformed, "not MessagePack (msgpack-c refused it)")
            }
        }
        self.zone = zone
        self.root = root
        self.walker = Walker(base: UnsafeRawPointer(base))
    }

    func free() { msgpack_zone_free(zone) }
}

// MARK: - The structural scan

/// One pass over the bytes, before msgpack-c sees them. See `MessagePack`.
enum Scan {
    // What a type byte introduces, from `classes`: the kind in the high nibble, the header's size in the low one.
    private static let scalar: UInt8 = 0x00, fixString: UInt8 = 0x10, string: UInt8 = 0x20
    private static let fixArray: UInt8 = 0x30, array: UInt8 = 0x40, fixMap: UInt8 = 0x50, map: UInt8 = 0x60
    private static let bin: UInt8 = 0x70, ext: UInt8 = 0x80, reserved: UInt8 = 0x90

    private static let classes: [UInt8] = (0...255).map { (byte: Int) -> UInt8 in
        switch byte {
        case 0x00...0x7F, 0xE0...0xFF, 0xC0, 0xC2, 0xC3: scalar | 1
        case 0xCC, 0xD0: scalar | 2
        case 0xCD, 0xD1: scalar | 3
        case 0xCA, 0xCE, 0xD2: scalar | 5
        case 0xCB, 0xCF, 0xD3: scalar | 9
        case 0xA0...0xBF: fixString | 1
        case 0xD9: string | 2
        case 0xDA: string | 3
        case 0xDB: string | 5
        case 0x90...0x9F: fixArray | 1
        case 0xDC: array | 3
        case 0xDD: array | 5
        case 0x80...0x8F: fixMap | 1
        case 0xDE: map | 3
        case 0xDF: map | 5
        case 0xC4...0xC6: bin
        case 0xC7...0xC9, 0xD4...0xD8: ext
        default: reserved // 0xC1
        }
    }

    /// `nil` when the document is well formed within the limits; otherwise what is wrong and where.
    static func check(_ bytes: UnsafePointer<UInt8>, count: Int) -> WireError? {
        classes.withUnsafeBufferPointer { classes in
            // Per open container: the elements still to come (a map of n pairs has 2n), shifted left once, the low
            // bit set for maps. Depth is bounded, so the stack is too.
            withUnsafeTemporaryAllocation(of: Int.self, capacity: MessagePack.maximumDepth + 1) { stack in
                check(bytes, count: count, classes: classes, stack: stack.baseAddress!)
            }
        }
    }

    private static func check(
        _ bytes: UnsafePointer<UInt8>, count: Int, classes: UnsafeBufferPointer<UInt8>,
        stack: UnsafeMutablePointer<Int>
    ) -> WireError? {
        var position = 0
        var depth = 0
        repeat {
            guard position < count else {
                return WireError(
                    .truncated, depth == 0 ? "empty input" : "the input ends inside a container",
                    offset: position)
            }
            let start = position
            let byte = bytes[start]
            let kind = classes[Int(byte)] & 0xF0
            let size = Int(classes[Int(byte)] & 0x0F)
            if depth > 0 {
                let top = stack[depth - 1]
                if top & 0b11 == 1, kind != fixString, kind != string {
                    // A map with an even number of items to come: this one is a key.
                    return WireError(
                        .nonStringKey, "a map key must be a string, found \(describe(byte))", offset: start)
                }
                stack[depth - 1] = top &- 2
            }
            guard start + size <= count else {
                return WireError(.truncated, "the input ends inside \(describe(byte))", offset: start)
            }
            position = start + size
            switch kind {
            case scalar:
                break
            case fixString, string:
                let length = kind == fixString ? Int(byte & 0x1F) : length(bytes + start + 1, size - 1)
                guard length <= MessagePack.Limits.maximumStringBytes else {
                    return WireError(
                        .tooLarge,
                        "a string of \(length) bytes; at most "
                            + "\(MessagePack.Limits.maximumStringBytes) are accepted", offset: start)
                }
                guard length <= count - position else {
                    return WireError(
                        .truncated, "a string of \(length) bytes but only \(count - position) follow",
                        offset: start)
                }
                position += length
            case fixArray, array, fixMap, map:
                let isMap = kind == fixMap || kind == map
                let elements =
                    kind == fixArray || kind == fixMap ? Int(byte & 0x0F) : length(bytes + start + 1, size - 1)
                guard depth < MessagePack.maximumDepth else {
                    return WireError(.tooDeep, "nested deeper than \(MessagePack.maximumDepth) levels", offset: start)
                }
                guard elements <= MessagePack.Limits.maximumCount else {
                    return WireError(
                        .tooLarge,
                        "\(describe(byte)) of \(elements) \(isMap ? "pairs" : "elements"); "
                            + "at most \(MessagePack.Limits.maximumCount) are accepted", offset: start)
                }
                // Every element takes at least one byte: this bounds what msgpack-c will allocate.
                let items = isMap ? elements * 2 : elements
                guard items <= count - position else {
                    return WireError(
                        .truncated,
                        "\(describe(byte)) of \(elements) \(isMap ? "pairs" : "elements") "
                            + "but only \(count - position) bytes follow", offset: start)
                }
                if items > 0 {
                    stack[depth] = items << 1 | (isMap ? 1 : 0)
                    depth += 1
                }
            case bin:
                return WireError(
                    .unsupportedType, "binary data (bin) is not accepted; send text as a string",
                    offset: start)
            case ext:
                return WireError(
                    .unsupportedType,
                    "extension types (ext, timestamps included) are not accepted; send times as seconds",
                    offset: start)
            default:
                return WireError(.malformed, "byte 0xc1 is never used in MessagePack", offset: start)
            }
            while depth > 0, stack[depth - 1] >> 1 == 0 { depth -= 1 }
        } while depth > 0
        guard position == count else {
            return WireError(
                .trailingBytes, "\(count - position) bytes after the end of the document", offset: position)
        }
        return nil
    }

    /// A big-endian length of 1, 2 or 4 bytes.
    @inline(__always)
    private static func length(_ p: UnsafePointer<UInt8>, _ width: Int) -> Int {
        switch width {
        case 1: Int(p[0])
        case 2: Int(be16(p))
        default: Int(be32(p))
        }
    }

    @inline(__always) static func be16(_ p: UnsafePointer<UInt8>) -> UInt16 { UInt16(p[0]) << 8 | UInt16(p[1]) }

    @inline(__always) static func be32(_ p: UnsafePointer<UInt8>) -> UInt32 {
        UInt32(p[0]) << 24 | UInt32(p[1]) << 16 | UInt32(p[2]) << 8 | UInt32(p[3])
    }

    /// What a type byte introduces, for messages.
    static func describe(_ byte: UInt8) -> String {
        switch byte {
        case 0x00...0x7F, 0xE0...0xFF, 0xCC...0xD3: "an integer"
        case 0xC0: "nil"
        case 0xC2, 0xC3: "a boolean"
        case 0xCA, 0xCB: "a float"
        case 0xA0...0xBF, 0xD9...0xDB: "a string"
        case 0x90...0x9F, 0xDC, 0xDD: "an array"
        case 0x80...0x8F, 0xDE, 0xDF: "a map"
        case 0xC4...0xC6: "binary data (bin)"
        default: "an extension type (ext)"
        }
    }
}

// MARK: - The walk from msgpack-c's tree to JSONValue

/// Turns msgpack-c objects (already checked by `Scan`) into `JSONValue`s. `base` is the start of the input, so a
/// string's offset is its pointer minus `base`.
struct Walker {
    let base: UnsafeRawPointer

    func value(_ object: msgpack_object) throws(WireError) -> JSONValue {
        switch object.type {
        case MSGPACK_OBJECT_NIL:
            return .null
        case MSGPACK_OBJECT_BOOLEAN:
            return .bool(object.via.boolean)
        case MSGPACK_OBJECT_POSITIVE_INTEGER:
            return .number(Double(object.via.u64))
        case MSGPACK_OBJECT_NEGATIVE_INTEGER:
            return .number(Double(object.via.i64))
        case MSGPACK_OBJECT_FLOAT64, MSGPACK_OBJECT_FLOAT32:
            let number = object.via.f64
            guard number.isFinite else { throw WireError(.nonFinite, "\(number) is not a finite number") }
            return .number(number)
        case MSGPACK_OBJECT_STR:
            return .string(try string(object.via.str.ptr, object.via.str.size))
        case MSGPACK_OBJECT_ARRAY:
            let count = Int(object.via.array.size)
            var elements: [JSONValue] = []
            elements.reserveCapacity(count)
            if let pointer = object.via.array.ptr {
                for index in 0..<count {
                    do throws(WireError) {
                        elements.append(try value(pointer[index]))
                    } catch {
                        throw error.inside("[\(index)]")
                    }
                }
            }
            return .array(elements)
        case MSGPACK_OBJECT_MAP:
            return .object(try members(object))
        default:
            // Refused by the scan already; kept for completeness.
            throw WireError(.unsupportedType, "\(MessagePack.typeName(object)) is not accepted")
        }
    }

    func members(_ object: msgpack_object) throws(WireError) -> [(String, JSONValue)] {
        let count = Int(object.via.map.size)
        var members: [(String, JSONValue)] = []
        members.reserveCapacity(count)
        guard let pairs = object.via.map.ptr else { return members }
        for index in 0..<count {
            let key = try self.key(pairs[index].key)
            do throws(WireError) {
                members.append((key, try value(pairs[index].val)))
            } catch {
                throw error.inside(key)
            }
        }
        return members
    }

    func key(_ object: msgpack_object) throws(WireError) -> String {
        guard object.type == MSGPACK_OBJECT_STR else {
            throw WireError(.nonStringKey, "a map key must be a string, found \(MessagePack.typeName(object))")
        }
        return try string(object.via.str.ptr, object.via.str.size)
    }

    /// One element of a batch: a record or the reason it is not one.
    func record(_ object: msgpack_object) -> Result<SensorRecord, RecordError> {
        guard object.type == MSGPACK_OBJECT_MAP else {
            return .failure(
                RecordError(field: "(record)", reason: "expected a map, found \(MessagePack.typeName(object))"))
        }
        let count = Int(object.via.map.size)
        var members: [(String, JSONValue)] = []
        members.reserveCapacity(count)
        if let pairs = object.via.map.ptr {
            for index in 0..<count {
                let key: String
                do throws(WireError) {
                    key = try self.key(pairs[index].key)
                } catch {
                    return .failure(RecordError(field: "(record)", reason: "member \(index + 1): \(error)"))
                }
                do throws(WireError) {
                    members.append((key, try value(pairs[index].val)))
                } catch {
                    let inner = error.inside(key)
                    var detail = error.reason
                    if let offset = error.offset { detail += " at byte \(offset)" }
                    return .failure(RecordError(field: inner.path, reason: detail))
                }
            }
        }
        do throws(RecordError) {
            return .success(try RecordDecoding.record(from: .object(members)))
        } catch {
            return .failure(error)
        }
    }

    func string(_ pointer: UnsafePointer<CChar>?, _ size: UInt32) throws(WireError) -> String {
        guard let pointer, size > 0 else { return "" }
        let bytes = UnsafeBufferPointer(
            start: UnsafeRawPointer(pointer).assumingMemoryBound(to: UInt8.self),
            count: Int(size))
        if let known = KnownStrings.lookup(bytes) { return known }
        // `String(decoding:)` is the fast, non-generic path; it repairs invalid UTF-8 with U+FFFD, so a result whose
        // bytes differ from the input means the input was not valid (ASCII, the common case, is checked first).
        let text = String(decoding: bytes, as: UTF8.self)
        var ascii = true
        for byte in bytes where byte >= 0x80 {
            ascii = false
            break
        }
        if !ascii, !text.utf8.elementsEqual(bytes) {
            throw WireError(
                .invalidUTF8, "a string that is not valid UTF-8",
                offset: UnsafeRawPointer(pointer) - base)
        }
        return text
    }
}

/// Field names and enumerated values that every record, ack and envelope repeats. Matching them by length and bytes
/// is cheaper than validating UTF-8 and building a `String` each time; the strings returned are literals (small or
/// immortal: no allocation, no reference counting). Generated from one list; keep it sorted by length.
enum KnownStrings {
    @inline(__always)
    private static func equal(_ bytes: UnsafeBufferPointer<UInt8>, _ literal: StaticString) -> Bool {
        memcmp(bytes.baseAddress!, literal.utf8Start, bytes.count) == 0
    }

    static func lookup(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        switch bytes.count {
        case 1:
            if equal(bytes, "t") { return "t" }
        case 3:
            if equal(bytes, "app") { return "app" }
            if equal(bytes, "seq") { return "seq" }
            if equal(bytes, "lat") { return "lat" }
            if equal(bytes, "lon") { return "lon" }
            if equal(bytes, "low") { return "low" }
        case 4:
            if equal(bytes, "kind") { return "kind" }
            if equal(bytes, "user") { return "user" }
            if equal(bytes, "hacc") { return "hacc" }
            if equal(bytes, "high") { return "high" }
        case 5:
            if equal(bytes, "speed") { return "speed" }
            if equal(bytes, "steps") { return "steps" }
            if equal(bytes, "peakG") { return "peakG" }
            if equal(bytes, "index") { return "index" }
            if equal(bytes, "field") { return "field" }
            if equal(bytes, "event") { return "event" }
        case 6:
            if equal(bytes, "course") { return "course" }
            if equal(bytes, "impact") { return "impact" }
            if equal(bytes, "medium") { return "medium" }
            if equal(bytes, "reason") { return "reason" }
            if equal(bytes, "tripID") { return "tripID" }
            if equal(bytes, "isTest") { return "isTest" }
        case 7:
            if equal(bytes, "samples") { return "samples" }
            if equal(bytes, "walking") { return "walking" }
            if equal(bytes, "running") { return "running" }
            if equal(bytes, "cycling") { return "cycling" }
            if equal(bytes, "unknown") { return "unknown" }
            if equal(bytes, "endDate") { return "endDate" }
            if equal(bytes, "crashID") { return "crashID" }
            if equal(bytes, "dataGap") { return "dataGap" }
        case 8:
            if equal(bytes, "activity") { return "activity" }
            if equal(bytes, "location") { return "location" }
            if equal(bytes, "accepted") { return "accepted" }
            if equal(bytes, "rejected") { return "rejected" }
            if equal(bytes, "latitude") { return "latitude" }
        case 9:
            if equal(bytes, "startDate") { return "startDate" }
            if equal(bytes, "endReason") { return "endReason" }
            if equal(bytes, "longitude") { return "longitude" }
            if equal(bytes, "stopDelay") { return "stopDelay" }
        case 10:
            if equal(bytes, "confidence") { return "confidence" }
            if equal(bytes, "durationMs") { return "durationMs" }
            if equal(bytes, "automotive") { return "automotive" }
            if equal(bytes, "stationary") { return "stationary" }
            if equal(bytes, "detectedAt") { return "detectedAt" }
            if equal(bytes, "tripDidEnd") { return "tripDidEnd" }
        case 12:
            if equal(bytes, "capabilities") { return "capabilities" }
            if equal(bytes, "tripDidStart") { return "tripDidStart" }
        case 13:
            if equal(bytes, "crashDetected") { return "crashDetected" }
        case 14:
            if equal(bytes, "distanceMetres") { return "distanceMetres" }
        case 15:
            if equal(bytes, "detectionPaused") { return "detectionPaused" }
        case 17:
            if equal(bytes, "activityAvailable") { return "activityAvailable" }
            if equal(bytes, "monitoringStopped") { return "monitoringStopped" }
        case 18:
            if equal(bytes, "pedometerAvailable") { return "pedometerAvailable" }
        case 20:
            if equal(bytes, "detectionModeChanged") { return "detectionModeChanged" }
        default: break
        }
        return nil
    }
}

// MARK: - Encoding through msgpack_packer into msgpack_sbuffer

/// A `msgpack_packer` writing into a `msgpack_sbuffer`, both on the heap (the packer keeps a pointer to the buffer).
/// Call `release()` when done.
struct Packer {
    private let buffer: UnsafeMutablePointer<msgpack_sbuffer>
    private let packer: UnsafeMutablePointer<msgpack_packer>

    init(capacity: Int) {
        buffer = .allocate(capacity: 1)
        // msgpack_sbuffer_write grows `data` with realloc, so a first block from malloc is what it expects.
        let size = max(capacity, 16)
        buffer.initialize(
            to: msgpack_sbuffer(
                size: 0, data: malloc(size)?.assumingMemoryBound(to: CChar.self),
                alloc: size))
        if buffer.pointee.data == nil { buffer.pointee.alloc = 0 }
        packer = .allocate(capacity: 1)
        packer.initialize(to: msgpack_packer())
        msgpack_packer_init(packer, buffer, msgpack_sbuffer_write)
    }

    func release() {
        free(buffer.pointee.data)
        buffer.deallocate()
        packer.deallocate()
    }

    func bytes() -> [UInt8] {
        let count = buffer.pointee.size
        guard count > 0, let data = buffer.pointee.data else { return [] }
        return [UInt8](UnsafeRawBufferPointer(start: data, count: count))
    }

    func pack(_ value: JSONValue) {
        switch value {
        case .null: packNil()
        case .bool(let flag): pack(flag)
        case .number(let number): packNumber(number)
        case .string(let text): pack(text)
        case .array(let elements):
            packArrayHeader(elements.count)
            for element in elements { pack(element) }
        case .object(let members):
            packMapHeader(members.count)
            for (key, member) in members {
                pack(key)
                pack(member)
            }
        }
    }

    func packNil() { _ = msgpack_pack_nil(packer) }

    func pack(_ flag: Bool) { _ = flag ? msgpack_pack_true(packer) : msgpack_pack_false(packer) }

    /// Integral values within Int64 as integers (smallest form), others as float64, non-finite ones as nil.
    func packNumber(_ number: Double) {
        if !number.isFinite {
            packNil()
        } else if number == number.rounded(.towardZero), number >= -9.223_372_036_854_775_808e18,
            number < 9.223_372_036_854_775_808e18
        {
            _ = msgpack_pack_int64(packer, Int64(number))
        } else {
            _ = msgpack_pack_double(packer, number)
        }
    }

    /// Always float64: for typed fields (times, coordinates), so the wire type does not depend on the value.
    func pack(double number: Double) {
        if number.isFinite { _ = msgpack_pack_double(packer, number) } else { packNil() }
    }

    func pack(_ integer: Int64) { _ = msgpack_pack_int64(packer, integer) }

    func pack(_ integer: UInt64) { _ = msgpack_pack_uint64(packer, integer) }

    func pack(_ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            _ = msgpack_pack_str_with_body(packer, utf8.baseAddress, utf8.count)
        }
    }

    func packArrayHeader(_ count: Int) { _ = msgpack_pack_array(packer, count) }

    func packMapHeader(_ count: Int) { _ = msgpack_pack_map(packer, count) }
}
