import Foundation
import SystemKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One HTTP attempt: the timeout URLSession is given, the request, and what its answer means (delivered, retried or
/// permanent); `FirstOutcome` races it against the sink's own timer.
extension WebhookSink {
    /// The timeout given to URLSession itself: whole seconds, longer than `timeout`. swift-corelibs-foundation truncates
    /// it to whole seconds (`Int(timeoutInterval) * 1000` ms), so 0.3 s would time every request out at once; the
    /// sink's own timer (in `pump`) enforces the real `timeout`.
    nonisolated static func libraryTimeout(_ timeout: Double) -> Double {
        guard timeout.isFinite else { return 3600 }
        return max(1, timeout.rounded(.up)) + 1
    }

    /// One request, classified. Runs to its end: it is never cancelled (see `FirstOutcome`), and URLSession's own
    /// timeout (`libraryTimeout`) bounds it; the sink's `timeout` is enforced by a timer racing it.
    nonisolated static func send(session: URLSession, request: URLRequest) async -> Outcome {
        do {
            let (_, response) = try await session.data(for: request)
            guard let http = response as? HTTPURLResponse else {
                return .retry(reason: "not an HTTP response", retryAfter: nil)
            }
            return classify(status: http.statusCode, retryAfter: http.value(forHTTPHeaderField: "Retry-After"))
        } catch let error as URLError {
            // The code and its text, not the error's description: that carries the full URL.
            return .retry(
                reason: "network error \(error.code.rawValue): \(error.localizedDescription)", retryAfter: nil)
        } catch {
            return .retry(reason: "network error: \(type(of: error))", retryAfter: nil)
        }
    }

    /// 2xx: delivered; 408, 429, 5xx (and anything unexpected): retried; other 4xx and 3xx: permanent.
    nonisolated static func classify(status: Int, retryAfter: String?) -> Outcome {
        switch status {
        case 200..<300:
            return .delivered(status: status)
        case 408, 429, 500..<600:
            let seconds = retryAfter.flatMap { Double($0.trimmingCharacters(in: .whitespaces)) }
            return .retry(reason: "HTTP \(status)", retryAfter: seconds)
        case 300..<400:
            return .permanent(reason: "HTTP \(status) (redirects are not followed)")
        case 400..<500:
            return .permanent(reason: "HTTP \(status)")
        default:
            return .retry(reason: "HTTP \(status)", retryAfter: nil)
        }
    }
}

/// The first of several offered outcomes (the request's, its timer's, or shutdown's); later offers are ignored.
///
/// Why not a task group racing `data(for:)` against a timer and cancelling the loser: cancelling a Swift task inside
/// swift-corelibs-foundation's `URLSession.data(for:)` while that request completes deadlocks (seen with gdb: the
/// cancellation handler holds the task's status lock and waits for the session's work queue in
/// `URLSessionTask.cancel()`, while the completion holds the work queue and waits for the status lock to resume the
/// continuation). With 2 cores that stalls every thread of the cooperative pool, and with it the whole service. So the
/// task running `data(for:)` is never cancelled; a timed-out request is abandoned (it ends by URLSession's own timeout).
final class FirstOutcome: Sendable {
    private struct State {
        var result: WebhookSink.Outcome?
        var waiter: CheckedContinuation<WebhookSink.Outcome, Never>?
    }

    private let state = Locked(State())

    func offer(_ outcome: WebhookSink.Outcome) {
        let waiter: CheckedContinuation<WebhookSink.Outcome, Never>? = state.withLock { state in
            guard state.result == nil else { return nil }
            state.result = outcome
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: outcome)
    }

    /// Waits for the first outcome (one waiter only).
    func wait() async -> WebhookSink.Outcome {
        await withCheckedContinuation { continuation in
            let ready: WebhookSink.Outcome? = state.withLock { state in
                if let result = state.result { return result }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
