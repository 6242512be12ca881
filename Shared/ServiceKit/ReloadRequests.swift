import SystemKit

/// What a service re-reads on SIGHUP (its allow-lists), registered by the service and run on the signal thread by
/// `ShutdownSignals`. A handler must only hand the work over (post it to the reactor that owns the state).
public enum ReloadRequests {
    private static let handlers = Locked<[@Sendable () -> Void]>([])

    public static func onReload(_ handler: @escaping @Sendable () -> Void) {
        handlers.withLock { $0.append(handler) }
    }

    /// Runs every handler (what SIGHUP does).
    public static func fire() {
        let current = handlers.withLock { $0 }
        for handler in current { handler() }
    }
}
