import SystemKit

/// The answer to one call into a gateway's engine, resumed exactly once: by the engine thread with the outcome, or
/// with `closed` when the engine drops the call unanswered (it ended first).
final class EngineReply<Value: Sendable>: Sendable {
    private let continuation: Locked<CheckedContinuation<Result<Value, RoadSaveClientError>, Never>?>

    init(_ continuation: CheckedContinuation<Result<Value, RoadSaveClientError>, Never>) {
        self.continuation = Locked(continuation)
    }

    func resume(_ result: Result<Value, RoadSaveClientError>) {
        let waiting = continuation.withLock { continuation in
            defer { continuation = nil }
            return continuation
        }
        waiting?.resume(returning: result)
    }

    deinit {
        resume(.failure(.closed))
    }
}
