import Logging
import Testing

/// The budget of the connection log lines: a flood is logged in `limit` lines a window, the rest counted once.
@Suite("LogBudget")
struct LogBudgetTests {
    @Test func theFirstLinesOfAWindowAreWrittenAndTheRestCountedOnce() {
        var budget = LogBudget(limit: 3, window: 60)
        let first = (0..<10).map { budget.admit(at: 100 + Double($0)) }
        #expect(first.map(\.write) == [true, true, true] + Array(repeating: false, count: 7))
        #expect(first.allSatisfy { $0.heldBack == 0 })
        #expect(budget.roll(at: 159) == 0, "the window is not over yet")
        // The next window: the count of the last one comes first, once.
        let next = budget.admit(at: 161)
        #expect(next.write && next.heldBack == 7)
        #expect(budget.admit(at: 162).heldBack == 0)
        // A timer reports a count even when the flood has stopped.
        // This window wrote 161 and 162; of five more, one is written and four are held back.
        #expect((0..<5).map { _ in budget.admit(at: 163).write } == [true, false, false, false, false])
        #expect(budget.roll(at: 221) == 4)
        #expect(budget.roll(at: 300) == 0)
    }
}
