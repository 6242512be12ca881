#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Strings for the identifiers (app, user) that every record of a device repeats: a record reader asks for the
/// string of some bytes and gets the one it built last time for the same bytes, so a long identifier is neither
/// validated nor allocated per record. Identifiers of up to 15 bytes are stored inside the `String` itself (no
/// allocation), so they are simply built. One cache per reader: not thread-safe.
public final class IdentifierCache {
    private static let slotCount = 1024
    private var keys: [[UInt8]]
    private var values: [String]

    public init() {
        keys = Array(repeating: [], count: Self.slotCount)
        values = Array(repeating: "", count: Self.slotCount)
    }

    /// The string of `count` bytes at `bytes`; nil when they are not UTF-8. `ascii` says the caller saw no byte
    /// of 0x80 or more (nothing to validate then).
    @inlinable
    public func string(_ bytes: UnsafePointer<UInt8>, _ count: Int, ascii: Bool) -> String? {
        if count <= 15 { return Self.build(bytes, count, ascii: ascii) }
        return cached(bytes, count, ascii: ascii)
    }

    @usableFromInline
    func cached(_ bytes: UnsafePointer<UInt8>, _ count: Int, ascii: Bool) -> String? {
        // FNV-1a over the bytes; identifiers are at most a few hundred bytes.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for index in 0..<count { hash = (hash ^ UInt64(bytes[index])) &* 0x0000_0100_0000_01B3 }
        let slot = Int(truncatingIfNeeded: hash ^ (hash >> 29)) & (Self.slotCount - 1)
        let matches = keys[slot].withUnsafeBufferPointer { key in
            key.count == count && memcmp(key.baseAddress!, bytes, count) == 0
        }
        if matches { return values[slot] }
        guard let text = Self.build(bytes, count, ascii: ascii) else { return nil }
        keys[slot] = Array(UnsafeBufferPointer(start: bytes, count: count))
        values[slot] = text
        return text
    }

    @inlinable
    public static func build(_ bytes: UnsafePointer<UInt8>, _ count: Int, ascii: Bool) -> String? {
        let buffer = UnsafeBufferPointer(start: bytes, count: count)
        // ASCII is always valid UTF-8: the non-validating initializer is the fast one.
        return ascii ? String(decoding: buffer, as: UTF8.self) : String(validating: buffer, as: UTF8.self)
    }
}
