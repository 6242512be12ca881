/// A value that belongs to one reactor's thread, like swift-nio's `NIOLoopBound`: the box may go anywhere (it is
/// `Sendable`, so closures posted from other threads and tasks may hold it), but its value is only reached on the
/// reactor's thread, and every access checks that. The check is a `precondition`, kept in release builds: an
/// access from another thread would be a data race, and a crash that names the reactor beats a corrupted state.
///
/// A service keeps its reactor-thread state in one (a non-`Sendable` class, so the compiler stops it from escaping
/// any other way), and a closure posted back to the reactor captures the box, not the state.
///
///     let bound = ReactorBound(self, on: reactor)                 // on the reactor thread
///     Task { let answer = await ask(); reactor.post { _ in bound.value.answered(answer) } }
public final class ReactorBound<Value>: @unchecked Sendable {
    // @unchecked: the project's one statement that "this is touched on the reactor thread only", and here it is
    // checked. `stored` is read and written only through `value`, which preconditions `isAccessible`, so it is only
    // ever used on `reactor`'s thread; `reactor` is Sendable and immutable.
    public let reactor: Reactor
    private var stored: Value

    /// Binds `value`, made on the reactor's thread, to it (called there; checked).
    public init(_ value: Value, on reactor: Reactor) {
        precondition(reactor.isOnReactorThread, "ReactorBound made off the thread of reactor \(reactor.name)")
        self.reactor = reactor
        stored = value
    }

    /// Hands `value` over to the reactor from any thread, e.g. a service's state made before its reactor starts:
    /// `sending` means the caller keeps no other way to reach it, so from now on only the reactor's thread does.
    public init(handingOver value: sending Value, to reactor: Reactor) {
        self.reactor = reactor
        stored = value
    }

    /// The value; only on the reactor's thread.
    public var value: Value {
        _read {
            precondition(isAccessible, "ReactorBound used off the thread of reactor \(reactor.name)")
            yield stored
        }
        _modify {
            precondition(isAccessible, "ReactorBound used off the thread of reactor \(reactor.name)")
            yield &stored
        }
    }

    /// Whether the calling thread may use `value`: it is the reactor's thread (what `value` preconditions).
    public var isAccessible: Bool { reactor.isOnReactorThread }
}
