import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// SIGTERM and SIGINT as a graceful-shutdown request. The signals are blocked first thing (DESIGN-NOTES pitfall 6:
/// a SIGTERM before a handler exists would kill the process) and then taken synchronously by one thread with
/// `sigwait`, which calls `handler` once per signal on that thread. Threads started later inherit the mask, so no
/// other thread is interrupted. SIGHUP is taken the same way but does not stop: it runs the `ReloadRequests` (a
/// service re-reads its allow-lists).
public enum ShutdownSignals {
    /// Blocks SIGTERM, SIGINT and SIGHUP in the calling thread (call from `main` before starting any thread).
    public static func block() {
        var set = signalSet()
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// Starts the waiting thread. `handler` gets the signal's name ("SIGTERM" or "SIGINT").
    public static func onSignal(_ handler: @escaping @Sendable (String) -> Void) {
        let thread = Thread {
            var set = signalSet()
            while true {
                var signal: Int32 = 0
                guard sigwait(&set, &signal) == 0 else { continue }
                if signal == SIGHUP {
                    ReloadRequests.fire()
                    continue
                }
                handler(signal == SIGTERM ? "SIGTERM" : "SIGINT")
            }
        }
        thread.name = "signals"
        thread.start()
    }

    private static func signalSet() -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGTERM)
        sigaddset(&set, SIGINT)
        sigaddset(&set, SIGHUP)
        return set
    }
}
