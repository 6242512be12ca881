/// Steps counted since the last GPS movement, from the pedometer's cumulative count (a decrease is a reset).
struct StepCounter: Sendable, Equatable, Codable {
    private var lastCount: Int?
    private(set) var sinceMovement = 0

    mutating func update(cumulative count: Int) {
        if let lastCount {
            sinceMovement += count >= lastCount ? count - lastCount : count
        }
        lastCount = count
    }

    mutating func movementSeen() {
        sinceMovement = 0
    }
}
