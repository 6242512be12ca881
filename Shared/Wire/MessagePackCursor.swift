#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads a small map's members where they lie, for the in-place readers of the frames every batch carries (a
/// gateway's header, a journal chunk's members): no document, no tree. A read of another type, or cut short, gives
/// nil and leaves the position unspecified: the caller then reads the frame in full, with that reader's errors.
struct MessagePackCursor {
    let bytes: UnsafePointer<UInt8>
    let count: Int
    var offset: Int

    init(_ bytes: UnsafePointer<UInt8>, count: Int, offset: Int = 0) {
        self.bytes = bytes
        self.count = count
        self.offset = offset
    }

    /// The next byte, if there is one.
    mutating func byte() -> UInt8? {
        guard offset < count else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// A string's bytes (fixstr or str8); nil for any other type.
    mutating func string() -> UnsafeBufferPointer<UInt8>? {
        guard let type = byte() else { return nil }
        let length: Int
        switch type {
        case 0xA0...0xBF: length = Int(type & 0x1F)
        case 0xD9:
            guard let size = byte() else { return nil }
            length = Int(size)
        default: return nil
        }
        guard offset + length <= count else { return nil }
        defer { offset += length }
        return UnsafeBufferPointer(start: bytes + offset, count: length)
    }

    /// A number: a positive fixint, an unsigned integer of 8 to 64 bits, or a float of 32 or 64; nil for any other
    /// type (negative integers among them: no member read this way may be negative).
    mutating func number() -> Double? {
        guard let type = byte() else { return nil }
        switch type {
        case 0x00...0x7F: return Double(type)
        case 0xCA: return bigEndian(4).map { Double(Float(bitPattern: UInt32($0))) }
        case 0xCB: return bigEndian(8).map { Double(bitPattern: $0) }
        case 0xCC: return bigEndian(1).map { Double($0) }
        case 0xCD: return bigEndian(2).map { Double($0) }
        case 0xCE: return bigEndian(4).map { Double($0) }
        case 0xCF: return bigEndian(8).map { Double($0) }
        default: return nil
        }
    }

    private mutating func bigEndian(_ width: Int) -> UInt64? {
        guard offset + width <= count else { return nil }
        var value: UInt64 = 0
        for index in 0..<width { value = value << 8 | UInt64(bytes[offset + index]) }
        offset += width
        return value
    }

    /// Whether `text` (a string read by `string()`) is `name`.
    static func equals(_ text: UnsafeBufferPointer<UInt8>, _ name: StaticString) -> Bool {
        text.count == name.utf8CodeUnitCount
            && (text.count == 0 || memcmp(text.baseAddress!, name.utf8Start, text.count) == 0)
    }
}
