#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The project's one lock: a value guarded by a pthread mutex, with a condition variable for waiting on it.
///
/// pthread rather than `Synchronization.Mutex`: `Reactor.wait()` blocks until the loop has ended (`wait(until:)`),
/// and `Mutex` has no condition variable to wait on. `Locked(())` is the plain lock, for code that guards several
/// stored properties with one lock.
///
/// `@unchecked Sendable` is sound because `state` is only ever read or written inside `withLock` / `wait(until:)`,
/// that is, while holding `mutex`. The pthread objects live on the heap (never moved), as pthreads require.
public final class Locked<State>: @unchecked Sendable {
    private var state: State
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    public init(_ initial: State) {
        state = initial
        mutex = .allocate(capacity: 1)
        condition = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the state. With `notify`, wakes every `wait(until:)` afterwards.
    public func withLock<R>(notify: Bool = false, _ body: (inout State) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer {
            if notify { pthread_cond_broadcast(condition) }
            pthread_mutex_unlock(mutex)
        }
        return try body(&state)
    }

    /// Blocks the calling thread until `predicate` holds (re-checked after every notifying `withLock`), then runs `body`.
    public func wait<R>(until predicate: (State) -> Bool, then body: (inout State) -> R) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while !predicate(state) {
            pthread_cond_wait(condition, mutex)
        }
        return body(&state)
    }
}

extension Locked where State == Void {
    /// A plain lock, guarding whatever its owner reads and writes inside `withLock`.
    public convenience init() {
        self.init(())
    }

    /// Runs `body` holding the lock.
    public func withLock<R>(_ body: () throws -> R) rethrows -> R {
        try withLock { (_: inout Void) in try body() }
    }
}
