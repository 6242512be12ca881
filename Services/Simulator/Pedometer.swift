// A CMPedometer-like step counter: the count is cumulative since the pedometer started and is delivered in batches
// every 2–5 s, only when it has grown.

struct Pedometer {
    private(set) var count = 0.0
    private var reported = 0
    private var nextPoll: Double

    init(start: Double) {
        nextPoll = start
    }

    mutating func add(_ steps: Double) {
        count += steps
    }

    /// The cumulative count to report at `t`, if a delivery is due and the count has grown.
    mutating func poll(at t: Double, rng: inout RandomSource) -> Int? {
        guard t >= nextPoll else { return nil }
        nextPoll = t + rng.uniform(2, 5)
        let whole = Int(count)
        guard whole > reported else { return nil }
        reported = whole
        return whole
    }
}
