import Foundation
import SystemKit

/// Seconds on the project's monotonic clock.
public func now() -> Double { MonotonicClock.now() }

/// Waits until `condition` holds or `timeout` seconds have passed, checking every `interval`; true when it held.
/// The timeout is a bound on a hang, not a timing: a test waits for the condition, never for the clock. It sleeps
/// with `Task.sleep`, so no thread of Swift's cooperative pool is held while it polls.
public func eventually(timeout: Double = 60, interval: Double = 0.05, _ condition: () async throws -> Bool)
    async rethrows -> Bool
{
    let deadline = now() + timeout
    while true {
        if try await condition() { return true }
        if now() >= deadline { return false }
        try? await Task.sleep(nanoseconds: UInt64(interval * 1e9))
    }
}
