#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Wire

/// Reads a file of concatenated MessagePack records (one CONTRACT §2 map after another, no framing: what
/// `roadsave simulate`/`convert` write as `.msgpack`) and hands each record's bytes on, as they are in the file, with
/// its number (1-based). Streams in blocks: memory is a block and the record being read, whatever the file's size.
struct MessagePackRecordReader: ~Copyable {
    private let file: UnsafeMutablePointer<FILE>
    private let closesFile: Bool
    private let path: String
    static let blockSize = 1 << 20
    /// A record larger than this is not a record: the file is not what it claims (no block grows past it).
    static let maximumRecordBytes = 64 << 20

    /// Opens a file; `-` reads standard input.
    init(path: String) throws(CommandExit) {
        self.path = path
        if path == "-" {
            file = fdopen(0, "r")
            closesFile = false
        } else {
            guard let opened = fopen(path, "r") else {
                throw CommandExit.usage("cannot read \(path): \(String(cString: strerror(errno)))")
            }
            file = opened
            closesFile = true
        }
    }

    deinit {
        if closesFile { fclose(file) }
    }

    /// Calls `body` with each record's bytes and number. A byte that starts no MessagePack object, a record cut off
    /// by the end of the file, or one over `maximumRecordBytes` is an error naming the record and byte offset.
    mutating func forEachRecord(_ body: (UnsafeBufferPointer<UInt8>, Int) throws(CommandExit) -> Void) throws(CommandExit) {
        var buffer = [UInt8](repeating: 0, count: Self.blockSize)
        var filled = 0
        var start = 0
        var number = 0
        var consumedBefore = 0  // file offset of buffer[0]
        var atEnd = false
        while true {
            // Records wholly in the buffer.
            while start < filled {
                let outcome = buffer.withUnsafeBufferPointer {
                    MessagePackFraming.objectEnd(UnsafeBufferPointer(rebasing: $0[..<filled]), from: start)
                }
                switch outcome {
                case let .end(end):
                    number += 1
                    try buffer.withUnsafeBufferPointer { bytes throws(CommandExit) in
                        try body(UnsafeBufferPointer(rebasing: bytes[start..<end]), number)
                    }
                    start = end
                    continue
                case let .invalid(offset):
                    throw CommandExit(2, "\(path): record \(number + 1): byte 0x\(String(buffer[offset], radix: 16)) at offset \(consumedBefore + offset) starts no MessagePack object (is this a .msgpack file of records?)")
                case .incomplete:
                    break
                }
                break
            }
            if atEnd {
                if start < filled {
                    throw CommandExit(2, "\(path): record \(number + 1) (offset \(consumedBefore + start)) is cut off by the end of the file")
                }
                return
            }
            // Keep the unfinished record, grow the buffer if it alone fills it, and read on.
            if start > 0 {
                buffer.withUnsafeMutableBufferPointer { bytes in
                    _ = memmove(bytes.baseAddress!, bytes.baseAddress! + start, filled - start)
                }
                filled -= start
                consumedBefore += start
                start = 0
            }
            if filled == buffer.count {
                guard buffer.count < Self.maximumRecordBytes else {
                    throw CommandExit(2, "\(path): record \(number + 1) (offset \(consumedBefore)) is over \(Self.maximumRecordBytes >> 20) MiB: not a record")
                }
                buffer += [UInt8](repeating: 0, count: buffer.count)
            }
            let read = buffer.withUnsafeMutableBufferPointer { bytes in
                fread(bytes.baseAddress! + filled, 1, bytes.count - filled, file)
            }
            if read == 0 {
                if ferror(file) != 0 {
                    throw CommandExit(2, "cannot read \(path): \(String(cString: strerror(errno)))")
                }
                atEnd = true
            }
            filled += read
        }
    }
}
