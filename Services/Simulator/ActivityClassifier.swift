// What a Core Motion-style activity classifier reports for what the user is really doing. The classifier lags
// reality: it needs a few seconds of walking before it says walking, and in a car it says automotive with medium
// confidence for the first 20–40 s before it is sure. A car waiting at a red light is reported as automotive and
// stationary at once (two records with the same time). Records come on change, plus a refresh every 60–120 s, and
// now and then an `unknown` with low confidence.

/// What the device's owner is doing right now, as the motion coprocessor would sense it.
enum MotionContext: Equatable {
    case still, walking, running, cycling, vehicleMoving, vehicleStopped

    var isVehicle: Bool { self == .vehicleMoving || self == .vehicleStopped }
}

struct ActivityClassifier {
    static let unknownChancePerSecond = 1.0 / 2400

    private var current: [ActivityReport] = []
    private var refreshAt = -Double.infinity
    private var unknownUntil = -Double.infinity
    private var context = MotionContext.still
    private var contextSince = -Double.infinity
    /// When the vehicle first moved since the user got in: confidence grows with time in the vehicle.
    private var vehicleSince: Double?
    private var latency = 0.0
    private var highAfter = 30.0
    private var stationaryAfter = 120.0
    private var stoppedConfidence = Confidence.high

    mutating func contextChanged(to newContext: MotionContext, at t: Double, rng: inout RandomSource) {
        let wasVehicle = context.isVehicle
        context = newContext
        contextSince = t
        switch newContext {
        case .still: latency = rng.uniform(5, 15)
        case .walking: latency = rng.uniform(4, 8)
        case .running: latency = rng.uniform(3, 6)
        case .cycling: latency = rng.uniform(15, 30)
        case .vehicleMoving:
            if wasVehicle, vehicleSince != nil {
                latency = rng.uniform(2, 5)
            } else {
                // Medium after a few seconds, high only after 20–40 s of driving (medium for at least 12 s).
                vehicleSince = t
                latency = rng.uniform(4, 8)
                highAfter = max(latency + 12, rng.uniform(20, 40))
            }
        case .vehicleStopped:
            latency = rng.uniform(5, 8)
            stationaryAfter = rng.uniform(100, 150)
            stoppedConfidence = rng.chance(0.6) ? .high : .medium
        }
        if !newContext.isVehicle { vehicleSince = nil }
    }

    /// Called once a second; the reports to emit now (all with the same time), if any.
    mutating func evaluate(at t: Double, rng: inout RandomSource) -> [ActivityReport]? {
        let elapsed = t - contextSince
        var target: [ActivityReport]?
        switch context {
        case .still:
            if elapsed >= latency { target = [ActivityReport(.stationary, .high)] }
        case .walking:
            if elapsed >= latency { target = [ActivityReport(.walking, .high)] }
        case .running:
            if elapsed >= latency { target = [ActivityReport(.running, .high)] }
        case .cycling:
            if elapsed >= latency { target = [ActivityReport(.cycling, .high)] }
        case .vehicleMoving:
            if elapsed >= latency, let since = vehicleSince {
                target = [ActivityReport(.automotive, t - since >= highAfter ? .high : .medium)]
            }
        case .vehicleStopped:
            if elapsed >= stationaryAfter {
                target = [ActivityReport(.stationary, .high)]
            } else if elapsed >= latency {
                target = [ActivityReport(.automotive, .medium), ActivityReport(.stationary, stoppedConfidence)]
            }
        }
        if t < unknownUntil { return nil }
        if let target, target != current {
            current = target
            refreshAt = t + rng.uniform(60, 120)
            return target
        }
        if !current.isEmpty, rng.chance(Self.unknownChancePerSecond) {
            current = [ActivityReport(.unknown, .low)]
            unknownUntil = t + rng.uniform(5, 20)
            return current
        }
        // No refresh of the old activity while the classifier is still making up its mind about a new one.
        if !current.isEmpty, t >= refreshAt, elapsed >= latency {
            refreshAt = t + rng.uniform(60, 120)
            return current
        }
        return nil
    }
}
