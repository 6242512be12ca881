import Synchronization

/// What a signal handler may record: the last signal's number and how many arrived. Only atomic loads and stores,
/// which are async-signal-safe (a lock, an allocation or a print in a handler is not), so the handler may run on any
/// thread, in the middle of anything.
///
/// Keep one in a `static let` and touch it once (read `signal`) before installing the handler, so the lazy
/// initialisation of the static does not happen inside the handler.
public final class SignalCounter: Sendable {
    private let last = Atomic<Int32>(0)
    private let count = Atomic<Int32>(0)

    public init() {}

    /// Called from the signal handler.
    public func record(_ signal: Int32) {
        last.store(signal, ordering: .relaxed)
        count.wrappingAdd(1, ordering: .relaxed)
    }

    /// The last signal received (0 = none).
    public var signal: Int32 { last.load(ordering: .relaxed) }
    /// How many signals arrived so far.
    public var times: Int32 { count.load(ordering: .relaxed) }
}
