import SystemKit

/// Where a stop request (a signal) goes, from the first moment of the process: to the service once it exists, or
/// remembered until it does. The signal thread starts before the service is built, so a SIGTERM that arrives while a
/// service opens its store (or recovers it) is taken at once, not left pending, and the service is then stopped
/// before it starts serving.
public final class StopRequest: Sendable {
    private struct State {
        var service: (any RunnableService)?
        var requestedBy: String?
    }

    private let state = Locked(State())

    public init() {}

    /// Stops the service if there is one; otherwise remembers the request for `attach`.
    public func request(_ signal: String) {
        let target: (any RunnableService)? = state.withLock { state in
            if state.requestedBy == nil { state.requestedBy = signal }
            return state.service
        }
        target?.stop()
    }

    /// Hands the service over. Returns the signal that asked for a stop before it existed, if any (the caller must
    /// not run it then).
    public func attach(_ service: any RunnableService) -> String? {
        state.withLock { state in
            state.service = service
            return state.requestedBy
        }
    }

    /// The signal of the first request, if one came.
    public var requested: String? { state.withLock { $0.requestedBy } }
}
