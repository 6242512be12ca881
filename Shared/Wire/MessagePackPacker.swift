import CMessagePack
import RecordCodecs

/// A `msgpack_packer` appending to a Swift array (`MessagePack.append(to:_:)`): msgpack-c's encoding rules, without a
/// buffer of its own to allocate and copy out.
struct Packer {
    private let packer: UnsafeMutablePointer<msgpack_packer>

    fileprivate init(packer: UnsafeMutablePointer<msgpack_packer>) {
        self.packer = packer
    }

    /// Runs `body` with a packer whose output is appended to `bytes`.
    static func append(to bytes: inout [UInt8], _ body: (inout Packer) -> Void) {
        withUnsafeMutablePointer(to: &bytes) { target in
            var raw = msgpack_packer()
            msgpack_packer_init(&raw, UnsafeMutableRawPointer(target)) { data, buffer, count in
                guard let data, let buffer, count > 0 else { return 0 }
                data.assumingMemoryBound(to: [UInt8].self).pointee.append(
                    contentsOf: UnsafeRawBufferPointer(start: buffer, count: count))
                return 0
            }
            withUnsafeMutablePointer(to: &raw) { pointer in
                var packer = Packer(packer: pointer)
                body(&packer)
            }
        }
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
