import ServiceKit
import Testing

/// `roadsave up`'s restart rule, on the times it is told.
struct RestartPolicyTests {
    @Test func aServiceThatEndsByItselfRightAfterItsFirstStartFailedToStart() {
        var policy = RestartPolicy()
        #expect(policy.ended(exitCode: 2, ranFor: 0.4, starts: 1) == .failedAtStart(exitCode: 2))
        // Killed by a signal that soon is a crash, restarted.
        var killed = RestartPolicy()
        #expect(killed.ended(exitCode: nil, ranFor: 0.4, starts: 1) == .restart(after: 1))
        // Past the grace, or after a restart, ending by itself is a crash too.
        var late = RestartPolicy()
        #expect(late.ended(exitCode: 1, ranFor: RestartPolicy.startGrace, starts: 1) == .restart(after: 1))
        var again = RestartPolicy()
        #expect(again.ended(exitCode: 1, ranFor: 0.1, starts: 2) == .restart(after: 1))
    }

    @Test func thePauseDoublesUpToItsMaximumAndAStableRunResetsIt() {
        var policy = RestartPolicy()
        let pauses = (0..<7).map { _ in policy.ended(exitCode: nil, ranFor: 5, starts: 2) }
        #expect(pauses == [1, 2, 4, 8, 16, 30, 30].map { .restart(after: $0) })
        #expect(policy.ended(exitCode: nil, ranFor: RestartPolicy.stableAfter, starts: 9) == .restart(after: 1))
        #expect(policy.ended(exitCode: nil, ranFor: 1, starts: 10) == .restart(after: 2))
    }

    @Test func aSpawnThatFailsWaitsLongerEachTime() {
        var policy = RestartPolicy()
        #expect(policy.ended(exitCode: nil, ranFor: 10, starts: 3) == .restart(after: 1))
        #expect(policy.spawnFailed() == 2)
        #expect(policy.spawnFailed() == 4)
        #expect(policy.nextPause == 8)
    }
}
