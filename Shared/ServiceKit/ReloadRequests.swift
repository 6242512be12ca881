import Foundation

/// What a service re-reads on SIGHUP (its allow-lists), registered by the service and run on the signal thread by
/// `ShutdownSignals`. A handler must only hand the work over (post it to the reactor that owns the state).
public enum ReloadRequests {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var handlers: [@Sendable () -> Void] = []

    public static func onReload(_ handler: @escaping @Sendable () -> Void) {
        lock.lock()
        handlers.append(handler)
        lock.unlock()
    }

    /// Runs every handler (what SIGHUP does).
    public static func fire() {
        lock.lock()
        let current = handlers
        lock.unlock()
        for handler in current { handler() }
    }
}
