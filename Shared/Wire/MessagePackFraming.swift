/// New arrays of a batch's elements as they came (where they lie, `MessagePack.forEachElement` says as it decodes
/// them): sensor-ingest stores the records a gateway sent, instead of encoding them again.
public enum MessagePackFraming {
    /// The header of an array of `count` elements (the smallest form).
    public static func arrayHeader(_ count: Int) -> [UInt8] {
        var header: [UInt8] = []
        appendArrayHeader(count, to: &header)
        return header
    }

    /// `arrayHeader(count)`, appended to `bytes`.
    public static func appendArrayHeader(_ count: Int, to bytes: inout [UInt8]) {
        switch count {
        case ..<16: bytes.append(0x90 | UInt8(count))
        case ..<65_536:
            bytes.append(0xDC)
            bytes.append(UInt8(count >> 8))
            bytes.append(UInt8(count & 0xFF))
        default:
            bytes.append(0xDD)
            for shift in [24, 16, 8, 0] { bytes.append(UInt8(truncatingIfNeeded: count >> shift)) }
        }
    }

    /// An array of the given slices of `source`, in order: the elements as they were, under a new header.
    public static func array(of ranges: [Range<Int>], in source: [UInt8]) -> [UInt8] {
        var result: [UInt8] = []
        appendArray(of: nil, ranges: ranges, in: source, to: &result)
        return result
    }

    /// An array of the slices `ranges[i]` of `source` for each `i` of `elements` (every range when nil), in that
    /// order, appended to `bytes` (room for it made first).
    public static func appendArray(
        of elements: ArraySlice<Int>?, ranges: [Range<Int>], in source: [UInt8], to bytes: inout [UInt8]
    ) {
        // Loops over buffers, not the collections: the same machine code in a release build, and no allocation per
        // element in a debug one (whose count guards `make test` checks).
        ranges.withUnsafeBufferPointer { ranges in
            source.withUnsafeBufferPointer { source in
                func append(_ range: Range<Int>) {
                    bytes.append(contentsOf: UnsafeBufferPointer(rebasing: source[range]))
                }
                guard let elements else {
                    bytes.reserveCapacity(
                        bytes.count + 5 + (ranges.last?.upperBound ?? 0) - (ranges.first?.lowerBound ?? 0))
                    appendArrayHeader(ranges.count, to: &bytes)
                    for index in 0..<ranges.count { append(ranges[index]) }
                    return
                }
                elements.withUnsafeBufferPointer { elements in
                    var size = 5
                    for index in 0..<elements.count { size += ranges[elements[index]].count }
                    bytes.reserveCapacity(bytes.count + size)
                    appendArrayHeader(elements.count, to: &bytes)
                    for index in 0..<elements.count { append(ranges[elements[index]]) }
                }
            }
        }
    }
}
