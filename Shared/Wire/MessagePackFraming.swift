/// Where a batch's elements begin and end, without decoding them (`MessagePack.extent` measures each), and new arrays
/// of them: sensor-ingest stores the records a gateway sent as they came, instead of encoding them again. It only
/// measures; whether an object is a valid record is still `MessagePack.decodeRecords`'s to say.
public enum MessagePackFraming {
    /// The byte ranges of the elements of the array that is the whole of `body`; nil when `body` is not exactly one
    /// array (a caller then falls back to decoding and encoding).
    public static func elementRanges(of body: [UInt8]) -> [Range<Int>]? {
        body.withUnsafeBufferPointer { bytes -> [Range<Int>]? in
            guard let first = bytes.first else { return nil }
            var offset: Int
            let elements: Int
            switch first {
            case 0x90...0x9F: (elements, offset) = (Int(first & 0x0F), 1)
            case 0xDC where bytes.count >= 3: (elements, offset) = (Int(bytes[1]) << 8 | Int(bytes[2]), 3)
            case 0xDD where bytes.count >= 5:
                elements = Int(bytes[1]) << 24 | Int(bytes[2]) << 16 | Int(bytes[3]) << 8 | Int(bytes[4])
                offset = 5
            default: return nil
            }
            // Every element takes at least a byte: a header claiming more than the body holds is not believed.
            guard elements <= bytes.count - offset else { return nil }
            var ranges: [Range<Int>] = []
            ranges.reserveCapacity(elements)
            for _ in 0..<elements {
                guard
                    case .complete(let length) = MessagePack.extent(
                        bytes.baseAddress! + offset, count: bytes.count - offset)
                else { return nil }
                ranges.append(offset..<offset + length)
                offset += length
            }
            return offset == bytes.count ? ranges : nil
        }
    }

    /// The header of an array of `count` elements (the smallest form).
    public static func arrayHeader(_ count: Int) -> [UInt8] {
        switch count {
        case ..<16: [0x90 | UInt8(count)]
        case ..<65_536: [0xDC, UInt8(count >> 8), UInt8(count & 0xFF)]
        default:
            [
                0xDD, UInt8(truncatingIfNeeded: count >> 24), UInt8(truncatingIfNeeded: count >> 16),
                UInt8(truncatingIfNeeded: count >> 8), UInt8(truncatingIfNeeded: count),
            ]
        }
    }

    /// An array of the given slices of `source`, in order: the elements as they were, under a new header.
    public static func array(of ranges: [Range<Int>], in source: [UInt8]) -> [UInt8] {
        var size = 5
        for range in ranges { size += range.count }
        var result: [UInt8] = []
        result.reserveCapacity(size)
        result += arrayHeader(ranges.count)
        source.withUnsafeBufferPointer { bytes in
            for range in ranges { result.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[range])) }
        }
        return result
    }
}
