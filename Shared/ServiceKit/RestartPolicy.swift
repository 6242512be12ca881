/// When a supervisor (`roadsave up`) starts a service again after it ended: a value of that service's history,
/// deciding on the times it is told, with no clock of its own, so the rule is tested without processes or sleeps.
///
/// A service that ends on its own soon after its first start (a port in use, a bad setting) failed to start:
/// restarting cannot help, and the supervisor gives up. Anything else (a crash, a kill) is restarted after a
/// pause that doubles from `firstPause` up to `maximumPause`, and goes back to `firstPause` once a run has lasted
/// `stableAfter`: a service that crashes now and then is back at once, one that crashes in a loop is not restarted
/// in a tight loop.
public struct RestartPolicy: Sendable, Equatable {
    /// A first start that ends sooner than this is a failure to start, not a crash to recover from.
    public static let startGrace = 3.0
    public static let firstPause = 1.0
    public static let maximumPause = 30.0
    /// Running this long resets the pause.
    public static let stableAfter = 60.0

    public enum Decision: Sendable, Equatable {
        /// Ended by itself within `startGrace` of its first start, with this exit code: do not restart.
        case failedAtStart(exitCode: Int32)
        /// Start it again this many seconds from now.
        case restart(after: Double)
    }

    /// The pause before the next restart.
    public private(set) var nextPause = RestartPolicy.firstPause

    public init() {}

    /// The service ended unexpectedly after running `ranFor` seconds; `starts` counts its starts so far, this one
    /// included; `exitCode` is nil when a signal ended it.
    public mutating func ended(exitCode: Int32?, ranFor: Double, starts: Int) -> Decision {
        // Being killed (by the OOM killer, by someone testing the supervisor) is a crash like any other.
        if starts == 1, let exitCode, ranFor < Self.startGrace { return .failedAtStart(exitCode: exitCode) }
        if ranFor >= Self.stableAfter { nextPause = Self.firstPause }
        return .restart(after: takePause())
    }

    /// A restart that could not even spawn the process: the next try waits longer.
    public mutating func spawnFailed() -> Double {
        takePause()
    }

    private mutating func takePause() -> Double {
        let pause = nextPause
        nextPause = min(Self.maximumPause, nextPause * 2)
        return pause
    }
}
