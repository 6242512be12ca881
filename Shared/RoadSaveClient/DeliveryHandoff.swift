import SystemKit

/// Hands deliveries from a subscriber's engine thread to the async code that iterates them, at most `capacity` at a
/// time: the engine thread waits (a plain thread, never one of Swift's cooperative pool) while the consumer is that
/// far behind, so a slow consumer costs bounded memory here; meanwhile the notifier's events wait in the live
/// socket's queue, and what overflows it is caught up by position. Cancelled when the consumer goes away (its task
/// cancelled, or the iterator dropped): the engine then stops.
final class DeliveryHandoff: Sendable {
    private struct State {
        var outstanding = 0
        var cancelled = false
    }

    let capacity: Int
    private let state = Locked(State())
    private let continuation: AsyncThrowingStream<RoadSaveSubscriber.Delivery, any Error>.Continuation

    init(capacity: Int, continuation: AsyncThrowingStream<RoadSaveSubscriber.Delivery, any Error>.Continuation) {
        self.capacity = capacity
        self.continuation = continuation
    }

    /// On the engine thread: hands `delivery` over, then waits while `capacity` are not taken yet. False when the
    /// consumer has gone (the engine stops).
    func push(_ delivery: RoadSaveSubscriber.Delivery) -> Bool {
        let open = state.withLock { state -> Bool in
            guard !state.cancelled else { return false }
            state.outstanding += 1
            return true
        }
        guard open else { return false }
        continuation.yield(delivery)
        return state.wait(until: { $0.outstanding < capacity || $0.cancelled }) { !$0.cancelled }
    }

    /// The consumer took one.
    func taken() {
        state.withLock(notify: true) { $0.outstanding -= 1 }
    }

    /// The consumer has gone: the engine stops at its next look.
    func cancel() {
        state.withLock(notify: true) { $0.cancelled = true }
    }

    var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// The engine ended: normally (nil) or with an error, which the consumer's next call throws.
    func finish(throwing error: RoadSaveClientError?) {
        if let error {
            continuation.finish(throwing: error)
        } else {
            continuation.finish()
        }
    }
}
