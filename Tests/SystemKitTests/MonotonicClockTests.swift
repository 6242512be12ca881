import SystemKit
import Testing

@Suite struct MonotonicClockTests {
    @Test func neverGoesBackwards() {
        var previous = MonotonicClock.now()
        for _ in 0..<100_000 {
            let now = MonotonicClock.now()
            #expect(now >= previous)
            previous = now
        }
    }

    @Test func advances() {
        let start = MonotonicClock.now()
        while MonotonicClock.now() == start {}
        #expect(MonotonicClock.now() > start)
    }
}
