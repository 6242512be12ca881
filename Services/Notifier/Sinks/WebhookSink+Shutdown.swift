import Foundation
import Logging

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Shutdown: how long held events may still be delivered, and what is abandoned (left to the caller) when the deadline
/// passes or everything is settled.
extension WebhookSink {
    /// Stops accepting events, keeps delivering (with retries) what is held until all of it is settled or `deadline`
    /// seconds passed, then abandons what is left (requests on the wire included) and returns how many events were left
    /// unsettled (the caller still has them).
    public func shutdown(deadline: Double) async -> Int {
        if stopped { return abandonedCount }
        closing = true
        if held > 0 {
            if deadlineTask == nil {
                let seconds = max(0, deadline)
                deadlineTask = Task {
                    try? await Task.sleep(for: .seconds(seconds))
                    self.deadlineReached()
                }
            }
            await withCheckedContinuation { continuation in
                drainWaiters.append(continuation)
            }
        }
        if !stopped { stop() }
        return abandonedCount
    }

    func checkDrained() {
        if closing && held == 0 { resumeWaiters() }
    }

    private func deadlineReached() {
        resumeWaiters()
    }

    private func resumeWaiters() {
        let waiters = drainWaiters
        drainWaiters.removeAll()
        for waiter in waiters { waiter.resume() }
    }

    private func stop() {
        stopped = true
        deadlineTask?.cancel()
        for outcome in attempts.values { outcome.offer(.retry(reason: "shut down", retryAfter: nil)) }
        attempts.removeAll()
        let onTheWire = Array(network.values)
        for (_, queue) in devices { queue.timer?.task.cancel() }
        devices.removeAll()
        ready.removeAll()
        heldIDs.removeAll()
        abandonedCount = held
        held = 0
        inFlight = 0
        if abandonedCount > 0 {
            log.info(
                "shutdown: events left undelivered, kept by the caller",
                ["sink": name, "events": String(abandonedCount)])
        }
        // Requests on the wire are not cancelled (see `FirstOutcome`): they end by themselves within URLSession's
        // timeout, and may still reach the receiver (which drops duplicates by eventID). The session is invalidated once
        // they have: swift-corelibs-foundation traps (`fatalError("Session invalidated")`) on a `data(for:)` after
        // invalidation, and a request task may have been created but not yet reached that call. Every such task is in
        // `onTheWire` (none start once `stopped` is set).
        let session = session
        Task.detached {
            for task in onTheWire { await task.value }
            session.finishTasksAndInvalidate()
        }
        resumeWaiters()
    }
}
