import RecordCodecs
import RoadSaveModel

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads a file of records (NDJSON or MessagePack, `RecordFileFormat`) one record at a time, in chunks: memory stays
/// at a chunk (1 MiB) and the record being read, whatever the file's size. Each record comes with its number (the
/// line in NDJSON, where blank lines are skipped; the 1-based position in MessagePack) and is decoded by the fast
/// scanners with the general path behind them, so a bad record gives the same error as everywhere else and the
/// reading goes on. A MessagePack file that ends inside a record, or holds bytes that cannot start one, ends the
/// reading with `failure` set.
public final class RecordFileReader {
    public enum Item {
        case record(SensorRecord)
        case invalid(RecordError)
    }

    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public var path: String
        public var reason: String
        public var description: String { "cannot read \(path): \(reason)" }
    }

    public let format: RecordFileFormat
    public let path: String
    /// Why reading stopped before the end of the input, if it did.
    public private(set) var failure: Failure?
    /// What a record's number counts: "line" or "record", for messages.
    public var numberName: String { format == .ndjson ? "line" : "record" }
    /// Bytes read from the file so far.
    public private(set) var bytesRead = 0
    /// Bytes of the input taken by the records returned so far (what a progress line measures against `size`).
    public var position: Int { consumed + start }
    /// The input's size in bytes when it is a regular file (standard input redirected from one included), else nil.
    public let size: Int?
    /// Bytes read from the file and not yet returned as records: when none are left, the next `next()` reads the file
    /// (and waits, on a pipe, for its writer), so a reader that hands records on in groups hands over what it has.
    public var unreadBytes: Int { filled - start }
    /// The bytes of the record `next()` returned last, as they are in a MessagePack file (nil for NDJSON): valid
    /// until the next call of `next()`. `roadsave send` passes them on without encoding the record again.
    public var lastRecordBytes: UnsafeBufferPointer<UInt8>? {
        lastRecord.map { UnsafeBufferPointer(start: buffer + $0.lowerBound, count: $0.count) }
    }
    private var lastRecord: Range<Int>?

    /// Longest record (or line) accepted: a longer one cannot be a record and would take memory without bound.
    public static let maximumRecordBytes = MessagePack.Limits.maximumBytes
    private static let chunk = 1 << 20

    private let descriptor: Int32
    private let closesDescriptor: Bool
    private var buffer: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    /// The unread bytes are `buffer[start..<filled]`; `consumed` bytes of the file came before `buffer[0]`.
    private var start = 0
    private var filled = 0
    private var consumed = 0
    private var ended = false
    private var number = 0
    private let identifiers = IdentifierCache()

    /// Opens a file; `-` reads standard input.
    public init(path: String, format: RecordFileFormat) throws(Failure) {
        self.path = path
        self.format = format
        if path == "-" {
            descriptor = 0
            closesDescriptor = false
        } else {
            let opened = open(path, O_RDONLY)
            guard opened >= 0 else { throw Failure(path: path, reason: String(cString: strerror(errno))) }
            descriptor = opened
            closesDescriptor = true
        }
        var status = stat()
        size = fstat(descriptor, &status) == 0 && (status.st_mode & S_IFMT) == S_IFREG ? Int(status.st_size) : nil
        capacity = Self.chunk
        buffer = .allocate(capacity: capacity)
    }

    deinit {
        buffer.deallocate()
        if closesDescriptor { close(descriptor) }
    }

    /// The next record or bad record with its number; nil at the end of the input (or after a `failure`).
    public func next() -> (number: Int, item: Item)? {
        switch format {
        case .ndjson: nextLine()
        case .msgpack: nextMessagePack()
        }
    }

    // MARK: NDJSON

    private func nextLine() -> (number: Int, item: Item)? {
        while true {
            var searchFrom = start
            var newline: Int?
            while true {
                if let found = memchr(buffer + searchFrom, 0x0A, filled - searchFrom) {
                    newline = found.assumingMemoryBound(to: UInt8.self) - buffer
                    break
                }
                if ended { break }
                let searched = filled - start
                guard refill() else { return nil }
                searchFrom = start + searched
            }
            let lineStart = start
            let lineEnd: Int
            if let newline {
                lineEnd = newline
                start = newline + 1
            } else {
                // The last line, without a line break.
                guard filled > start else { return nil }
                lineEnd = filled
                start = filled
            }
            number += 1
            var count = lineEnd - lineStart
            while count > 0, buffer[lineStart + count - 1] == 0x0D { count -= 1 }
            let line = UnsafeBufferPointer(start: buffer + lineStart, count: count)
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
            return (number, decodeLine(line))
        }
    }

    private func decodeLine(_ line: UnsafeBufferPointer<UInt8>) -> Item {
        do throws(RecordError) {
            if let fields = JSONRecordScanner.scan(line, identifiers: identifiers) {
                return .record(try RecordDecoding.record(from: fields))
            }
            return .record(try RecordDecoding.recordThroughParser(fromJSON: line))
        } catch {
            return .invalid(error)
        }
    }

    // MARK: MessagePack

    /// The buffer ends inside a record: reads on, or fails (false) when the input ended there (a truncated file).
    private func refillInsideRecord(available: Int) -> Bool {
        if ended {
            fail(
                "the input ends inside record \(number + 1), which starts at byte \(consumed + start) "
                    + "(\(available) bytes follow): the file is truncated")
            return false
        }
        return refill()
    }

    private func nextMessagePack() -> (number: Int, item: Item)? {
        lastRecord = nil
        while true {
            guard failure == nil else { return nil }
            let available = filled - start
            if available == 0 {
                if ended { return nil }
                guard refill() else { return nil }
                continue
            }
            var fields = RecordFields()
            switch MessagePackRecordScanner.scan(
                buffer + start, count: available, into: &fields, identifiers: identifiers)
            {
            case .record(let length):
                lastRecord = start..<start + length
                start += length
                number += 1
                do throws(RecordError) {
                    return (number, .record(try RecordDecoding.record(from: fields)))
                } catch {
                    return (number, .invalid(error))
                }
            case .incomplete:
                guard refillInsideRecord(available: available) else { return nil }
            case .general:
                switch MessagePack.extent(buffer + start, count: available) {
                case .complete(let length):
                    let result = MessagePack.record(buffer + start, count: length)
                    lastRecord = start..<start + length
                    start += length
                    number += 1
                    switch result {
                    case .success(let record): return (number, .record(record))
                    case .failure(let error): return (number, .invalid(error))
                    }
                case .incomplete:
                    guard refillInsideRecord(available: available) else { return nil }
                case .malformed(let error):
                    var reason = "record \(number + 1) (byte \(consumed + start)): \(error.reason)"
                    if let offset = error.offset { reason += " at byte \(consumed + start + offset)" }
                    fail(reason + "; nothing after it can be read")
                    return nil
                }
            }
        }
    }

    // MARK: Reading

    private func fail(_ reason: String) {
        failure = Failure(path: path, reason: reason)
    }

    /// Moves the unread bytes to the front (growing the buffer when they fill it) and reads more; false (with
    /// `failure` set) on a read error or a record longer than `maximumRecordBytes`. Sets `ended` at the end of input.
    private func refill() -> Bool {
        if start > 0 {
            let unread = filled - start
            if unread > 0 { memmove(buffer, buffer + start, unread) }
            consumed += start
            filled = unread
            start = 0
        }
        if filled == capacity {
            guard capacity < Self.maximumRecordBytes else {
                fail("\(numberName) \(number + 1) is longer than \(Self.maximumRecordBytes) bytes")
                return false
            }
            let larger = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity * 2)
            larger.update(from: buffer, count: filled)
            buffer.deallocate()
            buffer = larger
            capacity *= 2
        }
        while true {
            let count = read(descriptor, buffer + filled, capacity - filled)
            if count < 0 {
                if errno == EINTR { continue }
                fail(String(cString: strerror(errno)))
                return false
            }
            if count == 0 { ended = true }
            filled += count
            bytesRead += count
            return true
        }
    }
}
