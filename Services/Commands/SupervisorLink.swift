import CProcessControl
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Ties a service to the `roadsave up` that started it, so that no service outlives its supervisor, even one killed
/// with SIGKILL (which it cannot catch to stop its children). `up` puts its pid in `ROADSAVE_SUPERVISOR_PID`.
///
/// How: the kernel's parent-death signal (Linux `PR_SET_PDEATHSIG`), set to SIGTERM, so the service stops gracefully
/// (journal committed, sinks flushed) rather than being cut off. The service blocks SIGTERM in every thread and takes
/// it with `sigwait` on its signal thread; a blocked process-directed signal stays pending until that thread takes
/// it, so the parent-death signal ends in the same graceful stop as a `kill -TERM` (CommandTests check this). A stop
/// that then hangs is ended by `OrphanWatchdog`.
///
/// The parent may die before the request is made: hence the `getppid()` check after it (the order matters: checked
/// first, a death in between would go unnoticed).
///
/// Why not a pipe whose write end only `up` holds (EOF when it dies): it would need an inherited descriptor at a
/// known number in every child (and kept out of everything else the children start), plus a thread per service to
/// watch it, for what the kernel already guarantees on Linux, the only system the services are built for. Where the
/// parent-death signal is missing (not Linux) or refused, a thread polls `getppid()` twice a second instead and sends
/// this process the same SIGTERM: no inheritance needed, at worst half a second late. (Neither covers a process in
/// between, such as a wrapper script: its pid would not be the supervisor's, and the service refuses to start.)
enum SupervisorLink {
    static let environmentVariable = "ROADSAVE_SUPERVISOR_PID"

    /// The supervisor's pid, nil when the service runs on its own. Call with SIGTERM already blocked.
    /// Throws (exit 1) if the supervisor is already gone, (exit 2) if the variable is not a pid.
    static func attach(environment: [String: String]) throws(CommandExit) -> Int32? {
        guard let text = environment[environmentVariable] else { return nil }
        guard let supervisor = Int32(text.trimmingCharacters(in: .whitespaces)), supervisor > 1 else {
            throw .usage("\(environmentVariable) must be the pid of the supervising roadsave up, got \"\(text)\"")
        }
        if roadsave_set_parent_death_signal(SIGTERM) != 0 {
            pollParent(supervisor)
        }
        let parent = getppid()
        guard parent == supervisor else {
            throw CommandExit(
                1,
                "the supervising roadsave up (pid \(supervisor), from \(environmentVariable)) is gone or is not this process's parent (pid \(parent)); not starting"
            )
        }
        return supervisor
    }

    /// The fallback: SIGTERM to this process once the parent is no longer `supervisor`.
    static func pollParent(_ supervisor: Int32) {
        let thread = Thread {
            while getppid() == supervisor { usleep(500_000) }
            kill(getpid(), SIGTERM)
        }
        thread.name = "supervisor-watch"
        thread.start()
    }
}
