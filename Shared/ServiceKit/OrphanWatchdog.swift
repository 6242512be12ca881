import Foundation
import Logging
import SystemKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Ends a process whose graceful stop takes too long after its supervisor died. While `roadsave up` lives, it kills
/// a service that does not stop in time; once it is gone nobody would, and a hung stop would keep the data
/// directory locked against the next `up` forever.
enum OrphanWatchdog {
    private static let running = Locked(false)

    /// Starts the countdown once per process (later calls do nothing).
    static func start(limit: Double, log: Log) {
        let first = running.withLock { running in
            defer { running = true }
            return !running
        }
        guard first else { return }
        let thread = Thread {
            Thread.sleep(forTimeInterval: limit)
            log.error("supervisor gone and the stop is taking too long: exiting", ["limit": String(limit)])
            FileHandle.standardError.write(
                Data("stop did not finish within \(limit) s of the supervisor's end; exiting\n".utf8))
            _exit(1)
        }
        thread.name = "orphan-watchdog"
        thread.start()
    }
}
