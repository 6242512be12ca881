import Foundation
import SystemKit
import Testing

@Suite struct LockedTests {
    @Test func incrementsFromManyThreadsAreNotLost() async {
        let counter = Locked(0)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    for _ in 0..<10_000 { counter.withLock { $0 += 1 } }
                }
            }
        }
        #expect(counter.withLock { $0 } == 80_000)
    }

    @Test func waitReturnsOnceANotifyingChangeMakesThePredicateHold() {
        let state = Locked(0)
        let thread = Thread {
            for value in 1...5 { state.withLock(notify: true) { $0 = value } }
        }
        thread.start()
        let seen = state.wait(until: { $0 == 5 }) { $0 }
        #expect(seen == 5)
    }

    @Test func waitReturnsAtOnceWhenThePredicateHoldsAlready() {
        let state = Locked("ready")
        #expect(state.wait(until: { $0 == "ready" }) { $0.count } == 5)
    }

    @Test func thePlainLockRunsItsBodyAndReturnsItsResult() throws {
        let lock = Locked()
        #expect(lock.withLock { 42 } == 42)
        struct Failure: Error {}
        #expect(throws: Failure.self) { try lock.withLock { throw Failure() } }
        // Not left held after a throw.
        #expect(lock.withLock { true })
    }
}
