import Dispatch
import Foundation
import Logging
import RecordCodecs
import RoadSaveModel
import SystemKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Events as NDJSON, one line per event, appended to a file or written to standard output (path `-`), in batches
/// that the notifier's outbox makes durable (`NDJSONOutlet`): the outbox is the one queue, so this sink holds none.
///
/// - The file is opened with `O_WRONLY|O_APPEND|O_CREAT`: never replaced by a rename (an atomic rename over the
///   target once turned /dev/null into a regular file on this machine), so devices, FIFOs and files shared with other
///   writers are safe targets. It is cut only by `recover` and `appendDurably`, back to a size recorded with the outbox.
/// - A batch goes out in one `write(2)` (continued after `EINTR` or a partial write) and is fsync'd, on a private
///   serial dispatch queue (not Swift's cooperative pool), in order.
/// - Write errors are returned to the caller, which keeps the events and tries again; they are counted here.
public final class NDJSONSink: Sendable {

    public struct Stats: Sendable, Equatable {
        /// Lines written completely.
        public var written = 0
        /// Lines of batches whose write failed.
        public var failed = 0
    }

    public struct OpenError: Error, CustomStringConvertible, Equatable {
        public var path: String
        public var code: Int32
        public var description: String { "cannot open \(path) for appending: \(String(cString: strerror(code)))" }
    }

    public let name: String
    public let path: String
    public let format: EventFormat
    private let log: Log
    private let writer: DispatchQueue

    /// Open from `init` until `close` (standard output is never closed).
    private let descriptor: Int32
    /// What changes, behind one lock (the callers' threads and the writer queue).
    private struct State {
        var closed = false
        var counters = Stats()
    }
    private let state = Locked(State())

    /// Opens `path` for appending (`-` is standard output, which is never closed). Throws when it cannot be opened.
    public init(path: String, format: EventFormat = .current, log: Log) throws {
        self.path = path
        self.format = format
        self.log = log
        self.name = path == "-" ? "ndjson(stdout)" : "ndjson(\(path))"
        self.writer = DispatchQueue(label: "roadsave.ndjson-sink", qos: .utility)
        if path == "-" {
            descriptor = STDOUT_FILENO
        } else {
            descriptor = try Self.openForAppending(path)
        }
    }

    private static func openForAppending(_ path: String) throws -> Int32 {
        while true {
            let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
            if descriptor >= 0 { return descriptor }
            if errno == EINTR { continue }
            throw OpenError(path: path, code: errno)
        }
    }

    public var stats: Stats { state.withLock { $0.counters } }

    /// One `write(2)` for the bytes, continued after EINTR, a partial write or EAGAIN (a non-blocking descriptor
    /// inherited as standard output). Returns 0 or the errno.
    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32) -> Int32 {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written > 0 {
                    offset += written
                    continue
                }
                if written < 0 && errno == EINTR { continue }
                if written < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                    var poller = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&poller, 1, 1000)
                    continue
                }
                return written < 0 ? errno : EIO
            }
            return 0
        }
    }

    /// Why a durable batch was not written.
    public struct WriteError: Error, CustomStringConvertible, Equatable {
        public var operation: String
        public var code: Int32
        public var description: String { "\(operation) failed: \(String(cString: strerror(code)))" }
    }

    /// Whether the output is a regular file whose size this sink can read and cut (not standard output, a device or
    /// a FIFO): only then can `recover` and `appendDurably` make the file hold each event exactly once.
    public var isTruncatable: Bool {
        var status = stat()
        return path != "-" && fstat(descriptor, &status) == 0 && (status.st_mode & S_IFMT) == S_IFREG
    }

    /// Makes the file end at `committedOffset`, the size recorded after the last batch whose outbox entries were
    /// deleted: what was written after it was not recorded and will be written again. Returns the offset to record
    /// from now on. With no recorded offset (a new sink) the file is kept as it is; a file shorter than the recorded
    /// offset was rotated or cut by someone else and is kept too (logged). Standard output, devices and FIFOs: nil.
    public func recover(committedOffset: Int64?) throws -> Int64? {
        guard isTruncatable else { return nil }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw WriteError(operation: "fstat \(path)", code: errno) }
        let size = Int64(status.st_size)
        guard let committedOffset else { return size }
        if size < committedOffset {
            log.warning(
                "the file is shorter than recorded: it was rotated or cut; appending to it as it is",
                ["sink": name, "size": String(size), "recorded": String(committedOffset)])
            return size
        }
        if size > committedOffset {
            guard ftruncate(descriptor, off_t(committedOffset)) == 0 else {
                throw WriteError(operation: "ftruncate \(path)", code: errno)
            }
            guard fsync(descriptor) == 0 else { throw WriteError(operation: "fsync \(path)", code: errno) }
            log.info(
                "cut lines written after the last recorded batch (they are written again)",
                ["sink": name, "bytes": String(size - committedOffset), "offset": String(committedOffset)])
        }
        return committedOffset
    }

    /// Appends `events` (one line each) in one write, then fsyncs, on the sink's writer queue, and calls `completion`
    /// there with the file's size afterwards (nil for standard output, devices and FIFOs) or the error. When
    /// `expectedOffset` is given and the file is longer (an earlier batch failed part-way), the file is first cut back to
    /// it, so a batch is never in the file twice.
    public func appendDurably(
        _ events: [RoadSaveEvent], expectedOffset: Int64?,
        completion: @escaping @Sendable (Result<Int64?, WriteError>) -> Void
    ) {
        var lines: [UInt8] = []
        for event in events { lines += Array((event.json(format) + "\n").utf8) }
        let bytes = lines
        writer.async {
            guard !self.state.withLock({ $0.closed }) else {
                return completion(.failure(WriteError(operation: "write \(self.path)", code: EBADF)))
            }
            if let expectedOffset {
                var status = stat()
                if fstat(self.descriptor, &status) == 0, Int64(status.st_size) > expectedOffset,
                    ftruncate(self.descriptor, off_t(expectedOffset)) != 0
                {
                    return completion(.failure(WriteError(operation: "ftruncate \(self.path)", code: errno)))
                }
            }
            let error = Self.writeAll(bytes, to: self.descriptor)
            guard error == 0 else {
                self.state.withLock { $0.counters.failed += events.count }
                return completion(.failure(WriteError(operation: "write \(self.path)", code: error)))
            }
            // EINVAL/EROFS: standard output on a pipe or a terminal, which cannot be synced.
            if fsync(self.descriptor) != 0 && errno != EINVAL && errno != EROFS {
                return completion(.failure(WriteError(operation: "fsync \(self.path)", code: errno)))
            }
            self.state.withLock { $0.counters.written += events.count }
            var status = stat()
            guard self.path != "-", fstat(self.descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
                return completion(.success(nil))
            }
            completion(.success(Int64(status.st_size)))
        }
    }

    /// Closes the file once the batches given so far are written (standard output stays open). A batch given after
    /// it fails with EBADF.
    public func close() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            writer.async {
                let closing = self.state.withLock { state in
                    defer { state.closed = true }
                    return !state.closed
                }
                if closing, self.path != "-" { closeDescriptor(self.descriptor) }
                continuation.resume()
            }
        }
    }
}

/// `close(2)`, out of the class whose `close()` would hide it.
private func closeDescriptor(_ descriptor: Int32) {
    _ = close(descriptor)
}
