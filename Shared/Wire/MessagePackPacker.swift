import CMessagePack
import RecordCodecs

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

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
