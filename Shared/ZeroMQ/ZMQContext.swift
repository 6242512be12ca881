import CZeroMQ
import SystemKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A libzmq context: one per process is usual; every socket and `Reactor` refers to one.
///
/// Shutting down, in order:
/// 1. `shutdown()` (from any thread): every blocking call on the context's sockets returns `ETERM`, and every `Reactor`
///    on this context is asked to stop. New sockets cannot be created.
/// 2. Every socket is closed by its owner thread (reactors close theirs when their loop ends: `reactor.wait()`).
/// 3. `terminate()`: `zmq_ctx_term`, which blocks until every socket is closed (sockets carry `ZMQ_LINGER` 0 by default,
///    so no pending message keeps it waiting). `deinit` does it too; since every socket holds a strong reference to its
///    context, a context is only deinitialised once all its sockets are gone.
///
/// `@unchecked Sendable`: libzmq contexts are thread-safe. The Swift-side state (terminated flag, reactors to stop) is
/// guarded by a mutex, and the handle is never passed to libzmq after `zmq_ctx_term` started: `zmq_socket` and
/// `zmq_ctx_shutdown` run while holding that mutex and check the flag first.
public final class ZMQContext: @unchecked Sendable {
    let handle: UnsafeMutableRawPointer

    private struct WeakReactor {
        weak var reactor: Reactor?
    }

    private struct State {
        var shutDown = false
        var terminated = false
        var reactors: [WeakReactor] = []
    }

    private let state = Locked(State())

    /// - Parameter ioThreads: `ZMQ_IO_THREADS`; one handles about a gigabyte a second, plenty here.
    public init(ioThreads: Int32 = 1) throws(ZMQError) {
        guard let handle = zmq_ctx_new() else { throw ZMQError.last("zmq_ctx_new") }
        if zmq_ctx_set(handle, ZMQ_IO_THREADS, ioThreads) != 0 {
            let error = ZMQError.last("zmq_ctx_set(ZMQ_IO_THREADS=\(ioThreads))")
            zmq_ctx_term(handle)
            throw error
        }
        self.handle = handle
    }

    deinit {
        terminate()
    }

    /// `zmq_ctx_shutdown`: callable from any thread, returns at once. Blocked calls on this context's sockets return
    /// `ETERM` (`ZMQError.isTerminated`), later calls too; every `Reactor` on this context is asked to stop. Idempotent.
    public func shutdown() {
        let reactors: [Reactor] = state.withLock { state in
            guard !state.terminated else { return [] }
            if !state.shutDown {
                state.shutDown = true
                zmq_ctx_shutdown(handle) // only fails with EFAULT (invalid context), impossible here
            }
            let alive = state.reactors.compactMap(\.reactor)
            state.reactors = []
            return alive
        }
        for reactor in reactors { reactor.stop() }
    }

    /// `zmq_ctx_term`: blocks until every socket of this context is closed (and, for sockets with a positive linger, their
    /// pending messages are sent or the linger expires). Call it after closing every socket, or after `shutdown()` and the
    /// owner threads have closed theirs. Does `shutdown()` first (so blocked calls return `ETERM` and reactors stop).
    /// Idempotent; `EINTR` is retried.
    public func terminate() {
        shutdown()
        let first = state.withLock { state -> Bool in
            guard !state.terminated else { return false }
            state.terminated = true
            return true
        }
        guard first else { return }
        while zmq_ctx_term(handle) != 0 && zmq_errno() == EINTR {}
    }

    /// True once `shutdown()` or `terminate()` was called.
    public var isShutDown: Bool {
        state.withLock { $0.shutDown || $0.terminated }
    }

    // MARK: - Internal

    /// `zmq_socket`, refused with `ETERM` once the context is shut down or terminating.
    func makeSocketHandle(_ type: Int32, name: String) throws(ZMQError) -> UnsafeMutableRawPointer {
        let result: Result<UnsafeMutableRawPointer, ZMQError> = state.withLock { state in
            guard !state.shutDown, !state.terminated else {
                return .failure(ZMQError(code: ETERM, operation: "zmq_socket(\(name))"))
            }
            guard let socket = zmq_socket(handle, type) else {
                return .failure(ZMQError.last("zmq_socket(\(name))"))
            }
            return .success(socket)
        }
        return try result.get()
    }

    /// Registers a reactor to be stopped by `shutdown()`. Returns false when the context is already shut down.
    func register(_ reactor: Reactor) -> Bool {
        state.withLock { state in
            guard !state.shutDown, !state.terminated else { return false }
            state.reactors.removeAll { $0.reactor == nil }
            state.reactors.append(WeakReactor(reactor: reactor))
            return true
        }
    }
}
