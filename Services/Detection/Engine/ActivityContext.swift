import RoadSaveModel

/// What the motion classifier says about a device over time, reduced to what detection needs.
struct ActivityContext: Sendable, Equatable, Codable {
    enum Mode: String, Sendable, Equatable, Codable {
        /// Nothing usable reported yet.
        case none
        /// In a vehicle since the last automotive report after another mode; `highSeen` once one was `high`.
        case inVehicle
        /// Walking or running.
        case onFoot
        case cycling
    }

    private(set) var mode: Mode = .none
    /// A `high` automotive report was seen in the current in-vehicle episode: only that can start a trip.
    private(set) var highAutomotiveSeen = false
    private(set) var lastAutomotive: Double?
    /// The latest report of anything but automotive (stationary included), at `medium` or better.
    private(set) var lastOther: Double?

    mutating func update(_ observation: ActivityObservation, at t: Double) {
        // `low` is unreliable and `unknown` says nothing: both are ignored.
        guard observation.confidence >= .medium else { return }
        switch observation.activity {
        case .automotive:
            if mode != .inVehicle { highAutomotiveSeen = false }
            mode = .inVehicle
            highAutomotiveSeen = highAutomotiveSeen || observation.confidence == .high
            lastAutomotive = t
        case .walking, .running:
            mode = .onFoot
            lastOther = t
        case .cycling:
            mode = .cycling
            lastOther = t
        case .stationary:
            // At a red light phones report stationary together with automotive: it doesn't leave the vehicle.
            lastOther = t
        case .unknown:
            return
        }
    }

    /// Only `high` automotive, in the current in-vehicle episode, can start a trip.
    var allowsTripStart: Bool { mode == .inVehicle && highAutomotiveSeen }

    /// The classifier's latest word is automotive (reports at the same time as a stationary one count).
    var currentlyAutomotive: Bool {
        guard mode == .inVehicle, let lastAutomotive else { return false }
        return lastAutomotive >= (lastOther ?? -.infinity)
    }
}
