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
