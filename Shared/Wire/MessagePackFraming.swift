/// Where MessagePack objects begin and end, without decoding them: the byte ranges of a batch's elements (so that
/// sensor-ingest can store the records a gateway sent as they came, instead of encoding them again) and of the
/// records in a stream of concatenated ones (`roadsave send FILE.msgpack`). It only measures; whether an object is a
/// valid record is still `MessagePack.decodeRecords`'s to say.
public enum MessagePackFraming {
    /// What `objectEnd` found.
    public enum Outcome: Equatable, Sendable {
        /// The object ends just before this offset.
        case end(Int)
        /// The bytes stop inside the object: more are needed.
        case incomplete
        /// A byte that starts no MessagePack object (0xc1), at this offset.
        case invalid(Int)
    }

    /// The end of the object starting at `start`: containers are followed element by element (no recursion: a
    /// count of objects still owed), strings and binaries skipped by their length.
    public static func objectEnd(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Outcome {
        var offset = start
        var owed = 1
        let count = bytes.count
        @inline(__always) func need(_ n: Int) -> Bool { offset + n <= count }
        @inline(__always) func big(_ at: Int, _ width: Int) -> Int {
            var value = 0
            for index in 0..<width { value = value << 8 | Int(bytes[at + index]) }
            return value
        }
        while owed > 0 {
            guard need(1) else { return .incomplete }
            let byte = bytes[offset]
            owed -= 1
            switch byte {
            case 0x00...0x7F, 0xE0...0xFF, 0xC0, 0xC2, 0xC3:
                offset += 1
            case 0x80...0x8F:
                owed += 2 * Int(byte & 0x0F)
                offset += 1
            case 0x90...0x9F:
                owed += Int(byte & 0x0F)
                offset += 1
            case 0xA0...0xBF:
                offset += 1 + Int(byte & 0x1F)
            case 0xC4, 0xD9:  // bin 8, str 8
                guard need(2) else { return .incomplete }
                offset += 2 + big(offset + 1, 1)
            case 0xC5, 0xDA:  // bin 16, str 16
                guard need(3) else { return .incomplete }
                offset += 3 + big(offset + 1, 2)
            case 0xC6, 0xDB:  // bin 32, str 32
                guard need(5) else { return .incomplete }
                offset += 5 + big(offset + 1, 4)
            case 0xC7:  // ext 8: length, type, data
                guard need(2) else { return .incomplete }
                offset += 3 + big(offset + 1, 1)
            case 0xC8:
                guard need(3) else { return .incomplete }
                offset += 4 + big(offset + 1, 2)
            case 0xC9:
                guard need(5) else { return .incomplete }
                offset += 6 + big(offset + 1, 4)
            case 0xCA, 0xCE, 0xD2: offset += 5
            case 0xCB, 0xCF, 0xD3: offset += 9
            case 0xCC, 0xD0: offset += 2
            case 0xCD, 0xD1: offset += 3
            case 0xD4: offset += 3  // fixext 1: type + 1
            case 0xD5: offset += 4
            case 0xD6: offset += 6
            case 0xD7: offset += 10
            case 0xD8: offset += 18
            case 0xDC:  // array 16
                guard need(3) else { return .incomplete }
                owed += big(offset + 1, 2)
                offset += 3
            case 0xDD:
                guard need(5) else { return .incomplete }
                owed += big(offset + 1, 4)
                offset += 5
            case 0xDE:  // map 16
                guard need(3) else { return .incomplete }
                owed += 2 * big(offset + 1, 2)
                offset += 3
            case 0xDF:
                guard need(5) else { return .incomplete }
                owed += 2 * big(offset + 1, 4)
                offset += 5
            default:  // 0xC1, never used
                return .invalid(offset)
            }
        }
        return offset <= count ? .end(offset) : .incomplete
    }

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
                guard case let .end(end) = objectEnd(bytes, from: offset) else { return nil }
                ranges.append(offset..<end)
                offset = end
            }
            return offset == bytes.count ? ranges : nil
        }
    }

    /// The header of an array of `count` elements (the smallest form).
    public static func arrayHeader(_ count: Int) -> [UInt8] {
        switch count {
        case ..<16: [0x90 | UInt8(count)]
        case ..<65_536: [0xDC, UInt8(count >> 8), UInt8(count & 0xFF)]
        default: [0xDD, UInt8(truncatingIfNeeded: count >> 24), UInt8(truncatingIfNeeded: count >> 16),
                  UInt8(truncatingIfNeeded: count >> 8), UInt8(truncatingIfNeeded: count)]
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
