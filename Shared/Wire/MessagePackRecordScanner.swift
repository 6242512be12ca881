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

/// One MessagePack record map (PROTOCOL §2 and §7) → `RecordFields`, straight from the bytes: no msgpack-c tree, no
/// `JSONValue`, no allocation but the strings a record keeps. It takes the shape records have (a map of string keys
/// to scalars, `samples` an array of four-number arrays, UTF-8 strings, finite numbers) and answers `.general` for
/// anything else, so that the caller decodes that record the general way (`MessagePack.record(_:count:)`: the
/// structural scan, msgpack-c, the walk), which gives the same record or the detailed error. In a stream, a record
/// that goes on past the bytes given is `.incomplete`.
public enum MessagePackRecordScanner {
    public enum Outcome {
        /// The record's members are in the fields given; it took this many bytes.
        case record(length: Int)
        /// The bytes end inside the record.
        case incomplete
        /// Not the common shape: decode it with `MessagePack.record(_:count:)`.
        case general
    }

    /// Fills `fields` (which must be fresh) from the record at `bytes`.
    public static func scan(
        _ bytes: UnsafePointer<UInt8>, count: Int, into fields: inout RecordFields,
        identifiers: IdentifierCache?
    ) -> Outcome {
        var reader = Reader(bytes: bytes, end: count)
        do throws(Stop) {
            try reader.record(into: &fields, identifiers)
            return .record(length: reader.index)
        } catch {
            return error == .incomplete ? .incomplete : .general
        }
    }

    enum Stop: Error { case incomplete, general }

    struct Reader {
        let bytes: UnsafePointer<UInt8>
        let end: Int
        var index = 0

        @inline(__always)
        mutating func need(_ count: Int) throws(Stop) {
            guard end - index >= count else { throw .incomplete }
        }

        @inline(__always)
        func be16(_ at: Int) -> Int { Int(UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1])) }

        @inline(__always)
        func be32(_ at: Int) -> UInt32 { UnsafeRawPointer(bytes + at).loadUnaligned(as: UInt32.self).bigEndian }

        @inline(__always)
        func be64(_ at: Int) -> UInt64 { UnsafeRawPointer(bytes + at).loadUnaligned(as: UInt64.self).bigEndian }

        mutating func record(into fields: inout RecordFields, _ identifiers: IdentifierCache?) throws(Stop) {
            try need(1)
            let header = bytes[index]
            let pairs: Int
            switch header {
            case 0x80...0x8F:
                pairs = Int(header & 0x0F)
                index += 1
            case 0xDE:
                try need(3)
                pairs = be16(index + 1)
                index += 3
            default:
                throw .general
            }
            for _ in 0..<pairs {
                let (keyStart, keyCount) = try string()
                let name = RecordFields.Name.match(bytes + keyStart, keyCount)
                if name == nil {
                    // An unknown member's name must still be UTF-8, as the general path checks.
                    for offset in 0..<keyCount where bytes[keyStart + offset] >= 0x80 { throw .general }
                }
                try need(1)
                let byte = bytes[index]
                if byte & 0xF0 == 0x90 || byte == 0xDC {
                    guard name == .samples else { throw .general }
                    fields.setSamples(try samples())
                } else {
                    let member = try scalar(name: name, identifiers)
                    if let name { fields.set(name, member) }
                }
            }
        }

        /// A string's bytes (where they start, how many); `.general` for anything but a string.
        @inline(__always)
        mutating func string() throws(Stop) -> (Int, Int) {
            try need(1)
            let byte = bytes[index]
            let count: Int
            switch byte {
            case 0xA0...0xBF:
                count = Int(byte & 0x1F)
                index += 1
            case 0xD9:
                try need(2)
                count = Int(bytes[index + 1])
                index += 2
            case 0xDA:
                try need(3)
                count = be16(index + 1)
                index += 3
            default:
                throw .general
            }
            try need(count)
            let start = index
            index += count
            return (start, count)
        }

        /// A number, `nil` as `.null`, a boolean or a string; `.general` for anything else.
        @inline(__always)
        mutating func scalar(name: RecordFields.Name?, _ identifiers: IdentifierCache?) throws(Stop)
            -> RecordFields.Member
        {
            let byte = bytes[index]
            switch byte {
            case 0xA0...0xBF, 0xD9, 0xDA:
                let (start, count) = try string()
                var ascii = true
                for offset in 0..<count where bytes[start + offset] >= 0x80 {
                    ascii = false
                    break
                }
                guard let name else {
                    if !ascii, IdentifierCache.build(bytes + start, count, ascii: false) == nil { throw .general }
                    return .null
                }
                guard
                    let member = RecordFields.string(
                        for: name, bytes + start, count, ascii: ascii,
                        identifiers: identifiers)
                else { throw .general }
                return member
            case 0xC0:
                index += 1
                return .null
            case 0xC2:
                index += 1
                return .bool(false)
            case 0xC3:
                index += 1
                return .bool(true)
            default:
                return .number(try number())
            }
        }

        /// An integer or a finite float, as the `Double` the general path makes of it.
        @inline(__always)
        mutating func number() throws(Stop) -> Double {
            try need(1)
            let byte = bytes[index]
            switch byte {
            case 0x00...0x7F:
                index += 1
                return Double(byte)
            case 0xE0...0xFF:
                index += 1
                return Double(Int8(bitPattern: byte))
            case 0xCB:
                try need(9)
                let value = Double(bitPattern: be64(index + 1))
                guard value.isFinite else { throw .general }
                index += 9
                return value
            case 0xCA:
                try need(5)
                let value = Double(Float(bitPattern: be32(index + 1)))
                guard value.isFinite else { throw .general }
                index += 5
                return value
            case 0xCC:
                try need(2)
                defer { index += 2 }
                return Double(bytes[index + 1])
            case 0xCD:
                try need(3)
                defer { index += 3 }
                return Double(be16(index + 1))
            case 0xCE:
                try need(5)
                defer { index += 5 }
                return Double(be32(index + 1))
            case 0xCF:
                try need(9)
                defer { index += 9 }
                return Double(be64(index + 1))
            case 0xD0:
                try need(2)
                defer { index += 2 }
                return Double(Int8(bitPattern: bytes[index + 1]))
            case 0xD1:
                try need(3)
                defer { index += 3 }
                return Double(Int16(bitPattern: UInt16(be16(index + 1))))
            case 0xD2:
                try need(5)
                defer { index += 5 }
                return Double(Int32(bitPattern: be32(index + 1)))
            case 0xD3:
                try need(9)
                defer { index += 9 }
                return Double(Int64(bitPattern: be64(index + 1)))
            default:
                throw .general
            }
        }

        /// `samples`: an array of `[dt, x, y, z]` rows of numbers.
        mutating func samples() throws(Stop) -> RecordFields.Samples {
            let byte = bytes[index]
            let count: Int
            if byte == 0xDC {
                try need(3)
                count = be16(index + 1)
                index += 3
            } else {
                count = Int(byte & 0x0F)
                index += 1
            }
            guard count <= RecordDecoding.maximumSamples else { throw .general }
            var rows: [ImpactSample] = []
            rows.reserveCapacity(count)
            for _ in 0..<count {
                try need(1)
                guard bytes[index] == 0x94 else { throw .general }
                index += 1
                let dt = try number()
                let x = try number()
                let y = try number()
                let z = try number()
                rows.append(ImpactSample(dt: dt, x: x, y: y, z: z))
            }
            return .rows(rows)
        }
    }
}

extension MessagePack {
    /// How far one MessagePack object in a stream reaches.
    public enum Extent: Equatable {
        /// It takes this many bytes.
        case complete(Int)
        /// It goes on past the bytes given.
        case incomplete
        /// No object can start here (a reserved byte, an object larger than `Limits.maximumBytes`): the stream
        /// cannot be read further.
        case malformed(WireError)
    }

    /// The length of the first object in `bytes`, whatever its types (bin and ext included, so that a record holding
    /// one can be skipped after its error is reported). It only measures: containers are followed by a count of
    /// objects still owed (no recursion, no allocation), strings and binaries skipped by their length; nesting is
    /// left to the decoder to judge.
    public static func extent(_ bytes: UnsafePointer<UInt8>, count: Int) -> Extent {
        var position = 0
        var owed = 1
        @inline(__always) func length(_ width: Int) -> Int? {
            guard position + 1 + width <= count else { return nil }
            var value = 0
            for offset in 0..<width { value = value << 8 | Int(bytes[position + 1 + offset]) }
            return value
        }
        while owed > 0 {
            guard position < count else { return .incomplete }
            guard position < Limits.maximumBytes else {
                return .malformed(WireError(.tooLarge, "an object larger than \(Limits.maximumBytes) bytes", offset: 0))
            }
            let byte = bytes[position]
            owed -= 1
            var header = 1
            var body = 0
            var items = 0
            switch byte {
            case 0x00...0x7F, 0xE0...0xFF, 0xC0, 0xC2, 0xC3: break
            case 0xCC, 0xD0: header = 2
            case 0xCD, 0xD1: header = 3
            case 0xCA, 0xCE, 0xD2: header = 5
            case 0xCB, 0xCF, 0xD3: header = 9
            case 0xD4: header = 3
            case 0xD5: header = 4
            case 0xD6: header = 6
            case 0xD7: header = 10
            case 0xD8: header = 18
            case 0xA0...0xBF: body = Int(byte & 0x1F)
            case 0xD9, 0xC4:
                guard let value = length(1) else { return .incomplete }
                (header, body) = (2, value)
            case 0xDA, 0xC5:
                guard let value = length(2) else { return .incomplete }
                (header, body) = (3, value)
            case 0xDB, 0xC6:
                guard let value = length(4) else { return .incomplete }
                (header, body) = (5, value)
            case 0xC7:
                guard let value = length(1) else { return .incomplete }
                (header, body) = (3, value)
            case 0xC8:
                guard let value = length(2) else { return .incomplete }
                (header, body) = (4, value)
            case 0xC9:
                guard let value = length(4) else { return .incomplete }
                (header, body) = (6, value)
            case 0x90...0x9F: items = Int(byte & 0x0F)
            case 0x80...0x8F: items = Int(byte & 0x0F) * 2
            case 0xDC, 0xDE:
                guard let value = length(2) else { return .incomplete }
                (header, items) = (3, byte == 0xDE ? value * 2 : value)
            case 0xDD, 0xDF:
                guard let value = length(4) else { return .incomplete }
                (header, items) = (5, byte == 0xDF ? value * 2 : value)
            default:
                return .malformed(WireError(.malformed, "byte 0xc1 is never used in MessagePack", offset: position))
            }
            // Every item takes at least a byte: a container claiming more than the limit allows is not a record.
            guard body + items <= Limits.maximumBytes else {
                return .malformed(
                    WireError(
                        .tooLarge, "\(Scan.describe(byte)) longer than \(Limits.maximumBytes) bytes",
                        offset: position))
            }
            position += header + body
            owed += items
        }
        return position <= count ? .complete(position) : .incomplete
    }

    /// One record the general way (the gateway batch's path: the structural scan, msgpack-c, the walk to `JSONValue`,
    /// the validator), for what `MessagePackRecordScanner` does not take. `count` is the record's extent. Byte offsets
    /// in its errors count from `base` (the start of the batch the record is in; the record itself by default).
    public static func record(_ bytes: UnsafePointer<UInt8>, count: Int, base: UnsafePointer<UInt8>? = nil)
        -> Result<SensorRecord, RecordError>
    {
        let base = base ?? bytes
        if var error = Scan.check(bytes, count: count) {
            error.offset = error.offset.map { $0 + (bytes - base) }
            return .failure(RecordError(field: "(record)", reason: error.description))
        }
        guard let zone = msgpack_zone_new(4096) else {
            return .failure(RecordError(field: "(record)", reason: "out of memory for a \(count)-byte record"))
        }
        defer { msgpack_zone_free(zone) }
        var offset = 0
        var object = msgpack_object()
        let status = msgpack_unpack(
            UnsafeRawPointer(bytes).assumingMemoryBound(to: CChar.self), count, &offset, zone,
            &object)
        guard status == MSGPACK_UNPACK_SUCCESS else {
            return .failure(RecordError(field: "(record)", reason: "not MessagePack (msgpack-c refused it)"))
        }
        return Walker(base: UnsafeRawPointer(base)).record(object)
    }
}
