import CZeroMQ
import SystemKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A timer of a `ReactorLoop`, for `cancel`.
public struct TimerID: Hashable, Sendable {
    let raw: UInt64
}

/// The reactor thread's side of a `Reactor`: sockets, readable handlers, timers and stop handlers.
///
/// Only usable on the reactor thread: it is handed to `setup`, to posted closures and (captured) to handlers, and is
/// deliberately not `Sendable`. Handlers are plain non-throwing closures: a failing socket call inside one is the handler's
/// to deal with (`ZMQError.isTerminated` means the context is shutting down; the loop will end by itself).
/// Handlers may freely register, cancel, close or stop from inside, including their own socket or timer.
public final class ReactorLoop {
    public let context: ZMQContext
    let reactor: Reactor
    private let thread = pthread_self()

    private final class Reader {
        let socket: ZMQSocket
        let handler: (ZMQSocket) -> Void
        var active = true
        init(socket: ZMQSocket, handler: @escaping (ZMQSocket) -> Void) {
            self.socket = socket
            self.handler = handler
        }
    }

    private final class TimerEntry {
        let handler: () -> Void
        let interval: Double?
        var deadline: Double
        init(handler: @escaping () -> Void, interval: Double?, deadline: Double) {
            self.handler = handler
            self.interval = interval
            self.deadline = deadline
        }
    }

    /// Sockets closed when the loop ends (created by `socket(_:)` or given to `onReadable`).
    private var owned: [ZMQSocket] = [] {
        didSet { readersChanged = true }
    }
    private var readers: [Reader] = []
    private var readersChanged = true
    /// `zmq_poll` items: index 0 is the wake-up pipe, then one per entry of `pollReaders`, then the `ZMQ_FD` of each
    /// entry of `pollWatched`.
    private var pollItems: [zmq_pollitem_t] = []
    private var pollReaders: [Reader] = []
    /// Owned sockets without a readable handler (send-only ones: PUB, a DEALER that only sends). libzmq carries
    /// out a socket's commands only when the application calls into it (DESIGN-NOTES pitfall 10): a socket nobody
    /// receives on would keep, until its next send, connections an unbind closed and peers that left. Their
    /// `ZMQ_FD`s are polled too, and their commands carried out as soon as it signals.
    private var pollWatched: [ZMQSocket] = []

    private var timers: [UInt64: TimerEntry] = [:]
    private var heap = TimerHeap()
    private var nextTimerID: UInt64 = 0

    private var stopHandlers: [() -> Void] = []
    private var stopRequested = false
    private var storage: [ObjectIdentifier: Any] = [:]

    init(reactor: Reactor) {
        self.reactor = reactor
        self.context = reactor.context
    }

    private func assertOnLoopThread(_ function: StaticString = #function) {
        assert(
            pthread_equal(thread, pthread_self()) != 0,
            "ReactorLoop.\(function) called off the reactor thread of \(reactor.name)")
    }

    // MARK: - Sockets

    /// Creates a socket (`ZMQ_LINGER` 0, `ZMQ_SNDTIMEO` 1000 ms unless given, the reactor's `LinkTimings`) owned by
    /// the loop: closed when it ends.
    public func socket(
        _ type: ZMQSocketType,
        linger: Int32 = ZMQSocket.defaultLinger,
        sendTimeout: Int32 = ZMQSocket.defaultSendTimeout
    ) throws(ZMQError) -> ZMQSocket {
        assertOnLoopThread()
        let socket = try ZMQSocket(context, type, linger: linger, sendTimeout: sendTimeout)
        do {
            try socket.setLinkTimings(reactor.linkTimings)
        } catch {
            socket.close()
            throw error
        }
        adopt(socket)
        return socket
    }

    /// Makes the loop close `socket` when it ends (sockets from `socket(_:)` and `onReadable` already are).
    public func adopt(_ socket: ZMQSocket) {
        assertOnLoopThread()
        owned.removeAll { $0.isClosed } // forget sockets closed meanwhile
        if !owned.contains(where: { $0 === socket }) { owned.append(socket) }
    }

    /// Calls `handler` on the reactor thread whenever `socket` has a message to receive (level-triggered: again on the next
    /// round while messages remain, so drain with `receive(dontWait: true)` until nil; a handler that never receives makes
    /// the loop spin). Replaces an earlier handler of the same socket; the loop takes ownership of the socket.
    public func onReadable(_ socket: ZMQSocket, _ handler: @escaping (ZMQSocket) -> Void) {
        assertOnLoopThread()
        adopt(socket)
        stopReading(socket)
        readers.append(Reader(socket: socket, handler: handler))
        readersChanged = true
    }

    /// Removes the readable handler of `socket` (the socket stays open and owned).
    public func stopReading(_ socket: ZMQSocket) {
        assertOnLoopThread()
        for reader in readers where reader.socket === socket {
            reader.active = false
            readersChanged = true
        }
        readers.removeAll { !$0.active }
    }

    /// Removes the handler of `socket` and closes it.
    public func close(_ socket: ZMQSocket) {
        stopReading(socket)
        socket.close()
        owned.removeAll { $0 === socket }
    }

    // MARK: - Timers

    /// Monotonic seconds (`CLOCK_MONOTONIC`), the clock of every timer.
    public var now: Double { MonotonicClock.now() }

    /// Runs `handler` once on the reactor thread, `seconds` from now (≤ 0: on the next round).
    @discardableResult
    public func schedule(after seconds: Double, _ handler: @escaping () -> Void) -> TimerID {
        let delay = seconds.isNaN ? 0 : max(0, seconds)
        return addTimer(deadline: now + delay, interval: nil, handler)
    }

    /// Runs `handler` once on the reactor thread when `MonotonicClock.now()` reaches `monotonicSeconds`.
    @discardableResult
    public func schedule(at monotonicSeconds: Double, _ handler: @escaping () -> Void) -> TimerID {
        addTimer(deadline: monotonicSeconds.isNaN ? now : monotonicSeconds, interval: nil, handler)
    }

    /// Runs `handler` every `seconds` (at least 1 ms), first `seconds` from now. Deadlines advance by the interval, so
    /// there is no drift; if the loop falls behind by more than an interval the missed runs are skipped, not bunched.
    @discardableResult
    public func every(_ seconds: Double, _ handler: @escaping () -> Void) -> TimerID {
        let interval = seconds.isNaN ? 0.001 : max(0.001, seconds)
        return addTimer(deadline: now + interval, interval: interval, handler)
    }

    /// Cancels a timer (one-shot or repeating). Cancelling one that already fired or was cancelled does nothing.
    public func cancel(_ timer: TimerID) {
        assertOnLoopThread()
        timers[timer.raw] = nil
        // Stale heap entries are skipped when they come up; compact if they pile up (many cancelled timeouts).
        if heap.count > 64 && heap.count > 4 * timers.count {
            heap.rebuild(from: timers.map { (deadline: $0.value.deadline, id: $0.key) })
        }
    }

    /// Whether `timer` is still pending.
    public func isScheduled(_ timer: TimerID) -> Bool {
        timers[timer.raw] != nil
    }

    private func addTimer(deadline: Double, interval: Double?, _ handler: @escaping () -> Void) -> TimerID {
        assertOnLoopThread()
        nextTimerID += 1
        let id = nextTimerID
        timers[id] = TimerEntry(handler: handler, interval: interval, deadline: deadline)
        heap.push(deadline: deadline, id: id)
        return TimerID(raw: id)
    }

    // MARK: - Storage

    /// Keeps `value` on the loop, one per type, for posted closures to find: they must be `@Sendable`, so they cannot
    /// capture the (non-Sendable) objects that `setup` created, but they receive the loop.
    ///
    ///     reactor.start { loop in
    ///         let state = IngestState(router: try loop.socket(.router))   // a non-Sendable class
    ///         loop.setValue(state)
    ///     }
    ///     let stats = try await reactor.run { loop in loop.value(IngestState.self)!.stats }
    ///
    /// Dropped when the loop ends, after the `onStop` handlers.
    public func setValue<T>(_ value: T, for type: T.Type = T.self) {
        assertOnLoopThread()
        storage[ObjectIdentifier(type)] = value
    }

    /// The value stored for `type` with `setValue`, if any.
    public func value<T>(_ type: T.Type) -> T? {
        assertOnLoopThread()
        return storage[ObjectIdentifier(type)] as? T
    }

    /// Removes the value stored for `type`.
    public func removeValue<T>(_ type: T.Type) {
        assertOnLoopThread()
        storage[ObjectIdentifier(type)] = nil
    }

    // MARK: - Stopping

    /// Runs `handler` when the loop ends, before the sockets are closed (in registration order).
    public func onStop(_ handler: @escaping () -> Void) {
        assertOnLoopThread()
        stopHandlers.append(handler)
    }

    /// Ends the loop after the current handler returns (same effect as `Reactor.stop()`).
    public func stop() {
        assertOnLoopThread()
        stopRequested = true
        reactor.refusePosts()
    }

    // MARK: - The loop

    /// Runs until a stop is requested, the context shuts down (nil) or `zmq_poll` fails (the error).
    func run() -> (any Error)? {
        var batch: [Reactor.Work] = []
        while true {
            // 1. Posted work, in posting order.
            let stopAsked = reactor.takePosted(into: &batch)
            for work in batch { work(self) }
            batch.removeAll(keepingCapacity: true)
            if stopAsked || stopRequested { return nil }

            // 2. Due timers, earliest first.
            fireDueTimers()
            if stopRequested { return nil }

            // 3. Wait for a socket, the wake-up pipe or the next timer.
            rebuildPollItemsIfNeeded()
            let timeout = pollTimeout()
            do {
                _ = try pollItems.withUnsafeMutableBufferPointer { buffer throws(ZMQError) in
                    try ZMQPoller.pollRaw(buffer.baseAddress, count: buffer.count, timeoutMilliseconds: timeout)
                }
            } catch {
                return error.isTerminated ? nil : error
            }

            // 4. Wake-ups, the commands of sockets nobody reads, and readable sockets.
            if pollItems[0].revents & Int16(ZMQ_POLLIN) != 0 { reactor.drainWake() }
            let watchedBase = pollReaders.count + 1
            for index in pollWatched.indices where pollItems[watchedBase + index].revents & Int16(ZMQ_POLLIN) != 0 {
                let socket = pollWatched[index]
                if !socket.isClosed { socket.processCommands() }
            }
            for index in pollReaders.indices where pollItems[index + 1].revents & Int16(ZMQ_POLLIN) != 0 {
                let reader = pollReaders[index]
                guard reader.active, !reader.socket.isClosed else { continue }
                reader.handler(reader.socket)
                if stopRequested { return nil }
            }
        }
    }

    private func rebuildPollItemsIfNeeded() {
        if !readersChanged && !pollReaders.contains(where: { $0.socket.isClosed })
            && !pollWatched.contains(where: \.isClosed)
        {
            return
        }
        readers.removeAll { !$0.active || $0.socket.isClosed }
        pollReaders = readers
        pollWatched = []
        pollItems.removeAll(keepingCapacity: true)
        pollItems.append(zmq_pollitem_t(socket: nil, fd: reactor.wakeReadFD, events: Int16(ZMQ_POLLIN), revents: 0))
        for reader in pollReaders {
            pollItems.append(
                zmq_pollitem_t(socket: reader.socket.rawHandle, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0))
        }
        for socket in owned where !socket.isClosed && !readers.contains(where: { $0.socket === socket }) {
            guard let fd = try? socket.fileDescriptor() else { continue }
            // Whatever signalled before the socket was watched is carried out now; the descriptor signals what follows.
            socket.processCommands()
            pollWatched.append(socket)
            pollItems.append(zmq_pollitem_t(socket: nil, fd: fd, events: Int16(ZMQ_POLLIN), revents: 0))
        }
        readersChanged = false
    }

    /// Milliseconds to the nearest timer, rounded up so the loop never wakes early and spins; -1 without timers.
    private func pollTimeout() -> Int {
        guard let deadline = nextDeadline() else { return -1 }
        let milliseconds = ((deadline - now) * 1000).rounded(.up)
        if milliseconds <= 0 { return 0 }
        return Int(min(milliseconds, Double(Int32.max)))
    }

    private func nextDeadline() -> Double? {
        while let top = heap.top {
            if let entry = timers[top.id], entry.deadline == top.deadline { return top.deadline }
            heap.pop() // cancelled or rescheduled
        }
        return nil
    }

    private func fireDueTimers() {
        let now = self.now
        var due: [(id: UInt64, entry: TimerEntry)] = []
        while let top = heap.top, top.deadline <= now {
            heap.pop()
            guard let entry = timers[top.id], entry.deadline == top.deadline else { continue }
            due.append((top.id, entry))
        }
        for (id, entry) in due {
            guard timers[id] === entry else { continue } // cancelled by an earlier handler of this round
            if let interval = entry.interval {
                var next = entry.deadline + interval
                if next <= now { next = now + interval }
                entry.deadline = next
                heap.push(deadline: next, id: id)
            } else {
                timers[id] = nil
            }
            entry.handler()
            if stopRequested { return }
        }
    }

    /// After `run`: the closures still queued, the stop handlers, then every owned socket is closed.
    func finish() {
        var batch: [Reactor.Work] = []
        _ = reactor.takePosted(into: &batch) // posts are refused by now, so this is the last batch
        for work in batch { work(self) }
        let handlers = stopHandlers
        stopHandlers = []
        for handler in handlers { handler() }
        for socket in owned { socket.close() }
        owned = []
        readers = []
        pollReaders = []
        pollItems = []
        timers = [:]
        heap = TimerHeap()
        storage = [:]
    }
}

@available(*, unavailable)
extension ReactorLoop: Sendable {}
