// What every fuzz target shares: the property check, and a way to read several frames out of one input.

/// Stops the run when a property that must hold does not: libFuzzer saves the input that broke it.
func require(
    _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
    file: StaticString = #fileID, line: UInt = #line
) {
    if !condition() { fatalError("fuzz requirement failed: \(message())", file: file, line: line) }
}

/// The input as bytes.
func bytes(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
    guard let data, size > 0 else { return [] }
    return Array(UnsafeBufferPointer(start: data, count: size))
}

/// Splits an input into frames: each frame is a 2-byte little-endian length, then that many bytes (fewer when the
/// input ends first). Seeds are written the same way (Fuzz/make_seeds.py).
func frames(_ input: ArraySlice<UInt8>, limit: Int = 8) -> [[UInt8]] {
    var result: [[UInt8]] = []
    var rest = input
    while rest.count >= 2, result.count < limit {
        let length = Int(rest[rest.startIndex]) | Int(rest[rest.startIndex + 1]) << 8
        rest = rest.dropFirst(2)
        let frame = rest.prefix(length)
        result.append(Array(frame))
        rest = rest.dropFirst(frame.count)
    }
    return result
}
