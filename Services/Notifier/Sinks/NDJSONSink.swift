import Dispatch
import Foundation
import RoadSaveModel
import SystemKit
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Events as NDJSON, one line per event, to a file (appended) or to standard output (path `-`).
///
/// - The file is opened with `O_WRONLY|O_APPEND|O_CREAT`: never truncated, never replaced by a rename (an atomic
///   rename over the target once turned /dev/null into a regular file on this machine), so devices, FIFOs and files
///   shared with other writers are safe targets.
/// - Each line goes out in one `write(2)` (continued after `EINTR` or a partial write), so lines are never buffered
///   in the process and never interleave with other `O_APPEND` writers; `fsync` after each line is optional.
/// - `deliver` only queues the line; a private serial dispatch queue (not Swift's cooperative pool) does the blocking
///   writes, in order.
/// - Write errors are logged and counted (`stats.failed`), never fatal; the event is not retried.
/// - The queue holds at most `queueCapacity` lines: when full, the oldest non-crash line is dropped (and logged);
///   crash lines are never dropped for capacity.
public final class NDJSONSink: EventSink, Sendable {

    public struct Stats: Sendable, Equatable {
        /// Lines written completely.
        public var written = 0
        /// Lines whose write failed (logged, not retried).
        public var failed = 0
        /// Non-crash lines dropped because the queue was full.
        public var droppedForCapacity = 0
        /// Events handed over after shutdown began.
        public var rejectedAfterShutdown = 0
        /// Lines waiting to be written (including one being written).
        public var queued = 0
    }

    public struct OpenError: Error, CustomStringConvertible, Equatable {
        public var path: String
        public var code: Int32
        public var description: String { "cannot open \(path) for appending: \(String(cString: strerror(code)))" }
    }

    public let name: String
    public let path: String
    public let format: EventFormat
    public let syncsEachLine: Bool
    public let queueCapacity: Int
    private let log: Log
    private let writer: DispatchQueue

    private struct Line {
        var event: RoadSaveEvent
        var bytes: [UInt8]
    }

    /// What changes, all behind one lock (the callers' threads and the writer queue).
    private struct State {
        var descriptor: Int32
        var pending = Ring<Line>()
        var writing: Line?
        var closing = false
        var closed = false
        var counters = Stats()
        var failuresInARow = 0
        var leftovers: [RoadSaveEvent] = []
    }

    private let state: Locked<State>

    /// Opens `path` for appending (`-` is standard output, which is never closed). Throws when it cannot be opened.
    public init(path: String, format: EventFormat = .current, fsync: Bool = false, queueCapacity: Int = 100_000,
                log: Log) throws {
        self.path = path
        self.format = format
        self.syncsEachLine = fsync
        self.queueCapacity = max(1, queueCapacity)
        self.log = log
        self.name = path == "-" ? "ndjson(stdout)" : "ndjson(\(path))"
        self.writer = DispatchQueue(label: "roadsave.ndjson-sink", qos: .utility)
        state = Locked(State(descriptor: path == "-" ? STDOUT_FILENO : try Self.openForAppending(path)))
    }

    private static func openForAppending(_ path: String) throws -> Int32 {
        while true {
            let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
            if descriptor >= 0 { return descriptor }
            if errno == EINTR { continue }
            throw OpenError(path: path, code: errno)
        }
    }

    public var stats: Stats {
        state.withLock { state in
            var stats = state.counters
            stats.queued = state.pending.count + (state.writing == nil ? 0 : 1)
            return stats
        }
    }

    /// Whether a line is being written now (for tests: a blocked writer).
    var isWriting: Bool { state.withLock { $0.writing != nil } }

    /// The events left unwritten by `shutdown` (and those refused after it), in order.
    public func undeliveredEvents() -> [RoadSaveEvent] {
        state.withLock { $0.leftovers }
    }

    public func deliver(_ event: RoadSaveEvent) async {
        accept(event)
    }

    /// The synchronous form of `deliver` (it never blocks on I/O either).
    public func accept(_ event: RoadSaveEvent) {
        let line = Line(event: event, bytes: Array((event.json(format) + "\n").utf8))
        var dropped: RoadSaveEvent?
        let accepted: Bool = state.withLock { state in
            if state.closing {
                state.counters.rejectedAfterShutdown += 1
                state.leftovers.append(event)
                return false
            }
            if state.pending.count >= queueCapacity {
                if let index = state.pending.firstIndex(where: { !$0.event.isCrash }) {
                    dropped = state.pending.remove(at: index).event
                    state.counters.droppedForCapacity += 1
                } else if !event.isCrash {
                    // Only crashes are waiting: the newcomer is the oldest droppable line there is.
                    dropped = event
                    state.counters.droppedForCapacity += 1
                    return false
                }
            }
            state.pending.append(line)
            return true
        }
        if !accepted && dropped == nil {
            log.error("event refused: the sink is shut down",
                      ["sink": name, "event": event.name, "eventID": event.eventID, "device": event.device.description])
        }
        if let dropped {
            log.warning("queue full: dropped the oldest non-crash event",
                        ["sink": name, "event": dropped.name, "eventID": dropped.eventID,
                         "device": dropped.device.description, "capacity": String(queueCapacity)])
        }
        if accepted {
            writer.async { self.writeNext() }
        }
    }

    /// Runs on `writer`: writes the oldest pending line.
    private func writeNext() {
        guard let (line, descriptor) = state.withLock({ state -> (Line, Int32)? in
            guard !state.closed, let line = state.pending.popFirst() else { return nil }
            state.writing = line
            return (line, state.descriptor)
        }) else { return }

        let error = Self.writeAll(line.bytes, to: descriptor)
        var syncError: Int32 = 0
        if error == 0 && syncsEachLine && fsync(descriptor) != 0 && errno != EINVAL && errno != EROFS {
            syncError = errno // EINVAL/EROFS: stdout on a pipe or a terminal, which cannot be synced.
        }

        let (failures, recovered): (Int, Bool) = state.withLock { state in
            state.writing = nil
            if error == 0 {
                state.counters.written += 1
                let recovered = state.failuresInARow > 0
                state.failuresInARow = 0
                return (0, recovered)
            }
            state.counters.failed += 1
            state.failuresInARow += 1
            return (state.failuresInARow, false)
        }
        if error != 0 {
            // One line for the first failure in a row, then at 10, 100, 1000…: a full disk doesn't flood the log.
            if Self.isPowerOfTen(failures) {
                log.error("write failed: event not written",
                          ["sink": name, "error": String(cString: strerror(error)), "event": line.event.name,
                           "eventID": line.event.eventID, "failuresInARow": String(failures)])
            }
        } else if recovered {
            log.info("writes succeed again", ["sink": name])
        }
        if syncError != 0 {
            log.warning("fsync failed", ["sink": name, "error": String(cString: strerror(syncError))])
        }
    }

    private static func isPowerOfTen(_ value: Int) -> Bool {
        var value = value
        while value >= 10 && value % 10 == 0 { value /= 10 }
        return value == 1
    }

    /// One `write(2)` for the line, continued after EINTR, a partial write or EAGAIN (a non-blocking descriptor
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

    // MARK: Durable batches (the notifier's outbox)

    /// Why a durable batch was not written.
    public struct WriteError: Error, CustomStringConvertible, Equatable {
        public var operation: String
        public var code: Int32
        public var description: String { "\(operation) failed: \(String(cString: strerror(code)))" }
    }

    /// Whether the output is a regular file whose size this sink can read and cut (not standard output, a device or
    /// a FIFO): only then can `recover` and `appendDurably` make the file hold each event exactly once.
    public var isTruncatable: Bool {
        state.withLock { state in
            var status = stat()
            return path != "-" && fstat(state.descriptor, &status) == 0 && (status.st_mode & S_IFMT) == S_IFREG
        }
    }

    /// Makes the file end at `committedOffset`, the size recorded after the last batch whose outbox entries were
    /// deleted: what was written after it was not recorded and will be written again. Returns the offset to record
    /// from now on. With no recorded offset (a new sink) the file is kept as it is; a file shorter than the recorded
    /// offset was rotated or cut by someone else and is kept too (logged). Standard output, devices and FIFOs: nil.
    public func recover(committedOffset: Int64?) throws -> Int64? {
        guard isTruncatable else { return nil }
        return try state.withLock { state throws -> Int64 in
            let descriptor = state.descriptor
            var status = stat()
            guard fstat(descriptor, &status) == 0 else { throw WriteError(operation: "fstat \(path)", code: errno) }
            let size = Int64(status.st_size)
            guard let committedOffset else { return size }
            if size < committedOffset {
                log.warning("the file is shorter than recorded: it was rotated or cut; appending to it as it is",
                            ["sink": name, "size": String(size), "recorded": String(committedOffset)])
                return size
            }
            if size > committedOffset {
                guard ftruncate(descriptor, off_t(committedOffset)) == 0 else {
                    throw WriteError(operation: "ftruncate \(path)", code: errno)
                }
                guard fsync(descriptor) == 0 else { throw WriteError(operation: "fsync \(path)", code: errno) }
                log.info("cut lines written after the last recorded batch (they are written again)",
                         ["sink": name, "bytes": String(size - committedOffset), "offset": String(committedOffset)])
            }
            return committedOffset
        }
    }

    /// Appends `events` (one line each) in one write, then fsyncs, on the sink's writer queue, and calls `completion`
    /// there with the file's size afterwards (nil for standard output, devices and FIFOs) or the error. When
    /// `expectedOffset` is given and the file is longer (an earlier batch failed part-way), the file is first cut back to
    /// it, so a batch is never in the file twice.
    public func appendDurably(_ events: [RoadSaveEvent], expectedOffset: Int64?,
                              completion: @escaping @Sendable (Result<Int64?, WriteError>) -> Void) {
        var lines: [UInt8] = []
        for event in events { lines += Array((event.json(format) + "\n").utf8) }
        let bytes = lines
        writer.async {
            let descriptor = self.state.withLock { $0.descriptor }
            if let expectedOffset {
                var status = stat()
                if fstat(descriptor, &status) == 0, Int64(status.st_size) > expectedOffset,
                   ftruncate(descriptor, off_t(expectedOffset)) != 0 {
                    return completion(.failure(WriteError(operation: "ftruncate \(self.path)", code: errno)))
                }
            }
            let error = Self.writeAll(bytes, to: descriptor)
            guard error == 0 else {
                self.state.withLock { $0.counters.failed += events.count }
                return completion(.failure(WriteError(operation: "write \(self.path)", code: error)))
            }
            // EINVAL/EROFS: standard output on a pipe or a terminal, which cannot be synced.
            if fsync(descriptor) != 0 && errno != EINVAL && errno != EROFS {
                return completion(.failure(WriteError(operation: "fsync \(self.path)", code: errno)))
            }
            self.state.withLock { $0.counters.written += events.count }
            var status = stat()
            guard self.path != "-", fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
                return completion(.success(nil))
            }
            completion(.success(Int64(status.st_size)))
        }
    }

    /// Waits until the writer queue has done everything given to it so far.
    public func flush() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            writer.async { continuation.resume() }
        }
    }

    /// Reopens the file (after log rotation moved it away); lines already queued go to the new file. Does nothing for
    /// standard output. Throws, and keeps writing to the old descriptor, when the path cannot be opened.
    public func reopen() throws {
        guard path != "-" else { return }
        let fresh = try Self.openForAppending(path)
        writer.async {
            let old: Int32? = self.state.withLock { state in
                guard !state.closed else { return fresh }
                let old = state.descriptor
                state.descriptor = fresh
                return old
            }
            if let old { _ = close(old) }
        }
    }

    /// Writes what is queued, for at most `deadline` seconds, then closes the file. Returns the number of lines left
    /// unwritten (a line being written at the deadline counts as unwritten, though it may still complete).
    public func shutdown(deadline: Double) async -> Int {
        let alreadyClosing = state.withLock { state -> Bool in
            defer { state.closing = true }
            return state.closing
        }
        let end = MonotonicClock.now() + max(0, deadline)
        while !Task.isCancelled {
            let left = state.withLock { $0.pending.count + ($0.writing == nil ? 0 : 1) }
            if left == 0 || MonotonicClock.now() >= end { break }
            try? await Task.sleep(for: .milliseconds(2))
        }
        let left: [RoadSaveEvent] = state.withLock { state in
            if state.closed { return [] }
            state.closed = true
            var left = state.pending.elements.map(\.event)
            if let writing = state.writing { left.insert(writing.event, at: 0) }
            state.pending.removeAll()
            state.leftovers.insert(contentsOf: left, at: 0)
            return left
        }
        if alreadyClosing && left.isEmpty { return 0 }
        for event in left {
            log.write(event.isCrash ? .error : .warning, "shutdown: event left unwritten",
                      ["sink": name, "event": event.name, "eventID": event.eventID])
        }
        // After any write in progress (the queue is serial); standard output stays open.
        writer.async {
            let descriptor = self.state.withLock { $0.descriptor }
            if self.path != "-" { _ = close(descriptor) }
        }
        return left.count
    }
}
