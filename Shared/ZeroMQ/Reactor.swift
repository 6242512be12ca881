import CZeroMQ
import SystemKit

import class Foundation.Thread

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Why work given to a `Reactor` could not run.
public enum ReactorError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The reactor was stopped (or was released without being started) before the work ran.
    case stopped

    public var description: String {
        switch self {
        case .stopped: "the reactor is stopped"
        }
    }
}

/// A dedicated thread that owns a service's sockets and runs a `zmq_poll` loop (DESIGN-NOTES pitfalls 1 and 2).
///
/// The poll timeout is the time to the nearest timer (-1, no limit, when there is none), so an idle reactor sleeps in
/// `zmq_poll` and uses no CPU. Other threads and async code talk to it only through `post` / `run`, with `Sendable`
/// closures; a self-pipe polled alongside the sockets wakes it up. Each round of the loop runs, in order:
/// the posted closures (first posted, first run), the due timers (earliest first), then `zmq_poll`, then the handlers of
/// the readable sockets.
///
///     let reactor = Reactor(name: "ingest", context: context)
///     reactor.start { loop in
///         let router = try loop.socket(.router)
///         try router.bind("tcp://*:5550")
///         loop.onReadable(router) { socket in
///             while let frames = try? socket.receive(dontWait: true) { … }
///         }
///         loop.every(1.0) { … heartbeat … }
///         loop.onStop { … flush … }
///     }
///     let count = try await reactor.run { loop in state.count }   // from async code
///     reactor.stop(); _ = await reactor.finished()                  // or reactor.wait() from a plain thread
///
/// Stopping (`stop()`, `ReactorLoop.stop()`, `ZMQContext.shutdown()`, a throwing `setup`, or a `zmq_poll` failure):
/// new posts are refused at once; closures already accepted still run (so `post` returning true means the closure runs
/// exactly once); then the `onStop` handlers run, every registered socket is closed, and the thread exits.
/// `ETERM` (the context shut down) is a normal exit: `wait()` then returns nil.
///
/// `Sendable` as the compiler checks it: the only mutable state (queue, phase, flags, waiters) lives in a `Locked`; the
/// sockets and timers live in the `ReactorLoop`, which never leaves the reactor thread. The wake-up pipe's descriptors are
/// immutable and closed only in `deinit`, when no other thread can hold the reactor.
public final class Reactor: Sendable {
    public let name: String
    public let context: ZMQContext
    /// Set on every socket the loop creates (`ReactorLoop.socket`): how its connections notice a dead peer.
    public let linkTimings: LinkTimings

    typealias Work = @Sendable (ReactorLoop) -> Void

    private enum Phase { case idle, running, finished }

    private struct State {
        var phase: Phase = .idle
        var accepting = true
        var stopRequested = false
        var queue: [Work] = []
        var wakePending = false
        var exitError: (any Error)?
        var waiters: [CheckedContinuation<(any Error)?, Never>] = []
    }

    /// The reactor whose loop runs on the calling thread, as a thread-specific value set by the loop's thread itself:
    /// `isOnReactorThread` (which every `ReactorBound` access checks) is a lock-free lookup and a pointer compare.
    private static let runningHere: pthread_key_t = {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0, "pthread_key_create failed")
        return key
    }()

    private let state = Locked(State())
    /// Self-pipe: `post` and `stop` write a byte, the loop polls the read end. (`eventfd` is not visible to Swift through
    /// Glibc's module map; a non-blocking pipe does the same job.) -1 if `pipe` failed: the loop then ends at once.
    let wakeReadFD: Int32
    private let wakeWriteFD: Int32
    private let pipeError: ZMQError?

    public init(name: String, context: ZMQContext, linkTimings: LinkTimings = .standard) {
        self.name = name
        self.context = context
        self.linkTimings = linkTimings
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) == 0 {
            for fd in fds {
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            }
            wakeReadFD = fds[0]
            wakeWriteFD = fds[1]
            pipeError = nil
        } else {
            wakeReadFD = -1
            wakeWriteFD = -1
            pipeError = ZMQError(
                code: errno, operation: "pipe (reactor \(name) wake-up)",
                message: String(cString: strerror(errno)))
        }
        if !context.register(self) {
            // The context is already shut down: this reactor could not open a socket anyway.
            state.withLock {
                $0.stopRequested = true
                $0.accepting = false
            }
        }
    }

    deinit {
        if wakeReadFD >= 0 { close(wakeReadFD) }
        if wakeWriteFD >= 0 { close(wakeWriteFD) }
    }

    /// Starts the thread (named after the reactor, first 15 bytes, as Linux allows). `setup` runs on it first: create,
    /// bind and connect sockets there and register handlers and timers. If `setup` throws, the reactor stops and `wait()`
    /// returns the error. A second call does nothing.
    public func start(_ setup: @escaping @Sendable (ReactorLoop) throws -> Void) {
        let first = state.withLock { state -> Bool in
            guard state.phase == .idle else { return false }
            state.phase = .running
            return true
        }
        guard first else { return }
        let thread = Thread { [self] in
            self.threadMain(setup)
        }
        thread.start()
    }

    /// Runs `work` on the reactor thread soon, after the work posted before it (thread-safe, from anywhere, including
    /// async code and the reactor thread itself; never blocks). Work posted before `start` runs right after `setup`.
    /// Returns false, and drops `work`, once the reactor is stopping or stopped.
    @discardableResult
    public func post(_ work: @escaping @Sendable (ReactorLoop) -> Void) -> Bool {
        let wake: Bool? = state.withLock { state in
            guard state.accepting else { return nil }
            state.queue.append(work)
            if state.wakePending { return false }
            state.wakePending = true
            return true
        }
        guard let wake else { return false }
        if wake { signalWake() }
        return true
    }

    /// Runs `body` on the reactor thread and returns its result to the awaiting task, which is suspended meanwhile (no
    /// thread of the cooperative pool blocks). Throws what `body` throws, or `ReactorError.stopped` if the reactor
    /// refused or dropped the work. The body runs even if the task is cancelled meanwhile.
    public func run<T: Sendable>(_ body: @escaping @Sendable (ReactorLoop) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let completion = Completion(continuation)
            let accepted = post { loop in
                completion.complete(Result { try body(loop) })
            }
            if !accepted { completion.complete(.failure(ReactorError.stopped)) }
        }
    }

    /// Asks the loop to stop (thread-safe, returns at once, idempotent): posts are refused from now on; the loop finishes
    /// the closures already posted, runs the `onStop` handlers, closes every registered socket and exits its thread.
    public func stop() {
        state.withLock { state in
            state.stopRequested = true
            state.accepting = false
        }
        signalWake()
    }

    /// Blocks the calling thread until the loop has exited, then returns the error that ended it (nil for `stop()` or a
    /// context shutdown). Returns at once if the reactor was never started. Don't call it from async code (pitfall 1):
    /// use `finished()`. Calling it on the reactor thread is a programming error (it would never return).
    public func wait() -> (any Error)? {
        precondition(!isOnReactorThread, "Reactor.wait() called on the reactor's own thread (\(name))")
        return state.wait(until: { $0.phase != .running }) { $0.exitError }
    }

    /// The async form of `wait()`: suspends (without blocking a thread) until the loop has exited.
    public func finished() async -> (any Error)? {
        await withCheckedContinuation { (continuation: CheckedContinuation<(any Error)?, Never>) in
            let done: (any Error)?? = state.withLock { state in
                guard state.phase == .running else { return .some(state.exitError) }
                state.waiters.append(continuation)
                return .none
            }
            if case .some(let error) = done { continuation.resume(returning: error) }
        }
    }

    /// True when called on this reactor's thread (while its loop runs: setup, posted work, handlers, `onStop`).
    public var isOnReactorThread: Bool {
        pthread_getspecific(Self.runningHere) == Unmanaged.passUnretained(self).toOpaque()
    }

    /// True once the reactor refuses posts (stop requested, or finished).
    public var isStopped: Bool {
        state.withLock { !$0.accepting }
    }

    // MARK: - Loop side

    private func threadMain(_ setup: @Sendable (ReactorLoop) throws -> Void) {
        Self.nameCurrentThread(name)
        pthread_setspecific(Self.runningHere, Unmanaged.passUnretained(self).toOpaque())
        let loop = ReactorLoop(reactor: self)

        var exitError: (any Error)? = pipeError
        if exitError == nil && !state.withLock({ $0.stopRequested }) {
            do {
                try setup(loop)
                exitError = loop.run()
            } catch let error as ZMQError where error.isTerminated {
                exitError = nil // the context shut down during setup: a normal exit
            } catch {
                exitError = error
            }
        }

        refusePosts()
        loop.finish()
        pthread_setspecific(Self.runningHere, nil)

        let waiters = state.withLock(notify: true) { state in
            state.phase = .finished
            state.exitError = exitError
            let waiters = state.waiters
            state.waiters = []
            return waiters
        }
        for waiter in waiters { waiter.resume(returning: exitError) }
    }

    /// Swaps the posted closures into `batch` (which must be empty). Returns whether a stop was requested.
    func takePosted(into batch: inout [Work]) -> Bool {
        state.withLock { state in
            swap(&state.queue, &batch)
            state.wakePending = false
            return state.stopRequested
        }
    }

    func refusePosts() {
        state.withLock { state in
            state.stopRequested = true
            state.accepting = false
        }
    }

    private func signalWake() {
        guard wakeWriteFD >= 0 else { return }
        var byte: UInt8 = 1
        // EAGAIN means the pipe is full, so the loop has wake-ups pending anyway.
        while write(wakeWriteFD, &byte, 1) < 0 && errno == EINTR {}
    }

    func drainWake() {
        guard wakeReadFD >= 0 else { return }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 256) { buffer in
            while true {
                let n = read(wakeReadFD, buffer.baseAddress, buffer.count)
                if n > 0 { continue }
                if n < 0 && errno == EINTR { continue }
                return // 0 (impossible for a pipe we keep open) or EAGAIN: empty
            }
        }
    }

    /// Names the calling thread for `top -H`, `ps -L`, gdb and core dumps.
    ///
    /// `pthread_setname_np` and `prctl` are not visible through Glibc's module map, and Foundation's `Thread.name` only
    /// reaches the OS when its setter wins a race with `Thread.start()` (a new Linux thread otherwise keeps its creator's
    /// name, e.g. a cooperative-pool thread's). So write `/proc/thread-self/comm`, as glibc's `pthread_setname_np` does
    /// (proc(5): a thread may change its own `comm`). Best effort: without /proc the name stays inherited.
    static func nameCurrentThread(_ name: String) {
        let short = threadName(name)
        Thread.current.name = short
        let fd = open("/proc/thread-self/comm", O_WRONLY)
        guard fd >= 0 else { return }
        defer { _ = close(fd) }
        var bytes = Array(short.utf8)
        while write(fd, &bytes, bytes.count) < 0 && errno == EINTR {}
    }

    /// Linux thread names hold 15 bytes; cut at a character boundary.
    static func threadName(_ name: String) -> String {
        var result = ""
        var bytes = 0
        for character in name {
            let size = character.utf8.count
            if bytes + size > 15 { break }
            bytes += size
            result.append(character)
        }
        return result
    }
}

/// Resumes a continuation exactly once: with the work's result, or with `ReactorError.stopped` if the work was dropped
/// unrun (the closure holding this object is released without calling it).
///
private final class Completion<T: Sendable>: Sendable {
    private let lock = Locked<CheckedContinuation<T, any Error>?>(nil)

    init(_ continuation: CheckedContinuation<T, any Error>) {
        lock.withLock { $0 = continuation }
    }

    func complete(_ result: Result<T, any Error>) {
        let continuation = lock.withLock { state -> CheckedContinuation<T, any Error>? in
            defer { state = nil }
            return state
        }
        continuation?.resume(with: result)
    }

    deinit {
        complete(.failure(ReactorError.stopped))
    }
}
