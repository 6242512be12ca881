/// Steps counted since the last GPS movement, from the pedometer's cumulative count (a decrease is a reset).
struct StepCounter: Sendable, Equatable, Codable {
    private var lastCount: Int?
    private(set) var sinceMovement = 0

    /// Takes the pedometer's cumulative count; returns the steps it adds.
    @discardableResult
    mutating func update(cumulative count: Int) -> Int {
        defer { lastCount = count }
        guard let lastCount else { return 0 }
        let added = count >= lastCount ? count - lastCount : count
        sinceMovement += added
        return added
    }

    mutating func movementSeen() {
        sinceMovement = 0
    }
}
