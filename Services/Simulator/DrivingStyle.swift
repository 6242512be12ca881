// How a simulated driver drives: the same driver on the same road (the same seed) drives calmly, as most do, or
// aggressively, so that a behaviour score can be checked against known styles.

/// A driver's style. `normal` is the driver the simulator always had (its random draws unchanged, so a run without
/// `--driving-style` gives the same bytes as before); `calm` and `aggressive` draw the same numbers from other
/// ranges, so the route, the lights and everything else of a device stay the same and only the driving differs.
public enum DrivingStyle: String, Sendable, CaseIterable {
    case calm, normal, aggressive

    /// The accelerations a style reaches and plans to brake at, m/s² (and how close to the limit it keeps).
    /// Calm: the 1–2 m/s² of everyday driving; aggressive: beyond the published harsh thresholds (Sentiance −3.0
    /// braking, Teltonika +2.5 acceleration) at most lights and corners.
    var maxAccel: ClosedRange<Double> {
        switch self {
        case .calm: 1.4...1.9
        case .normal: 2.3...3.0
        case .aggressive: 3.6...4.2
        }
    }

    var planDecel: ClosedRange<Double> {
        switch self {
        case .calm: 1.1...1.5
        case .normal: 1.6...2.4
        case .aggressive: 3.4...4.2
        }
    }

    var speedFactor: ClosedRange<Double> {
        switch self {
        case .calm: 0.85...0.92
        case .normal: 0.92...1.0
        case .aggressive: 1.05...1.15
        }
    }

    /// Hardest braking the controller uses when something ahead demands it.
    var maxDecel: Double { self == .aggressive ? 6.0 : 4.5 }

    /// Speed through bends over the road's comfortable speed (2.5 m/s² lateral): aggressive 1.3×, so 4.2 m/s².
    var cornerSpeedFactor: Double { self == .aggressive ? 1.3 : 1.0 }
}

/// A manoeuvre of a simulated car beyond a published harsh threshold, from the true speed (not the phone's GPS):
/// what a behaviour engine should find.
public struct ManoeuvreTruth: Sendable, Codable, Equatable {
    /// `hardBraking`, `hardAcceleration` or `sharpCornering`.
    public var kind: String
    public var start: Double
    public var end: Double
    /// The strongest true acceleration in it, m/s² (braking negative; cornering: the lateral, unsigned).
    public var peak: Double
    public var startSpeed: Double
    public var endSpeed: Double

    /// Sentiance's −3.0 m/s² braking and 3.5 m/s² lateral, Teltonika's +2.5 m/s² acceleration, held this long (a
    /// tenth-second spike of the controller is no manoeuvre).
    static let brakingThreshold = -3.0
    static let accelerationThreshold = 2.5
    static let corneringThreshold = 3.5
    /// Teltonika's 30 km/h gate for cornering: slower, a tight turn is parking, not driving.
    static let corneringSpeedGate = 8.3
    static let minimumSeconds = 1.0
}

/// Follows a car's true acceleration tick by tick and notes each stretch beyond a threshold: one tracker for the
/// longitudinal acceleration, another for the lateral (a car may brake in a bend).
struct ManoeuvreTracker {
    private var current: ManoeuvreTruth?
    private(set) var found: [ManoeuvreTruth] = []

    mutating func note(
        acceleration: Double, from speed: Double, to newSpeed: Double, at start: Double, until end: Double
    ) {
        let kind =
            acceleration <= ManoeuvreTruth.brakingThreshold
            ? "hardBraking"
            : acceleration >= ManoeuvreTruth.accelerationThreshold ? "hardAcceleration" : nil
        note(kind, acceleration, from: speed, to: newSpeed, at: start, until: end)
    }

    /// `lateral`: speed × rate of turn, m/s², unsigned.
    mutating func note(lateral: Double, from speed: Double, to newSpeed: Double, at start: Double, until end: Double) {
        let kind =
            lateral >= ManoeuvreTruth.corneringThreshold && min(speed, newSpeed) >= ManoeuvreTruth.corneringSpeedGate
            ? "sharpCornering" : nil
        note(kind, lateral, from: speed, to: newSpeed, at: start, until: end)
    }

    private mutating func note(
        _ kind: String?, _ acceleration: Double, from speed: Double, to newSpeed: Double,
        at start: Double, until end: Double
    ) {
        if var ongoing = current, ongoing.kind == kind {
            ongoing.end = end
            ongoing.endSpeed = newSpeed
            if abs(acceleration) > abs(ongoing.peak) { ongoing.peak = acceleration }
            current = ongoing
            return
        }
        close()
        if let kind {
            current = ManoeuvreTruth(
                kind: kind, start: start, end: end, peak: acceleration, startSpeed: speed,
                endSpeed: newSpeed)
        }
    }

    mutating func close() {
        if let done = current, done.end - done.start >= ManoeuvreTruth.minimumSeconds - 1e-9 {
            found.append(
                ManoeuvreTruth(
                    kind: done.kind, start: done.start, end: done.end,
                    peak: (done.peak * 100).rounded() / 100,
                    startSpeed: (done.startSpeed * 100).rounded() / 100,
                    endSpeed: (done.endSpeed * 100).rounded() / 100))
        }
        current = nil
    }
}
