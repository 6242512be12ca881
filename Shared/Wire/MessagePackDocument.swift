import CMessagePack

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

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
