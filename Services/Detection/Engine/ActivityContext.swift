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
    /// How many automotive reports the in-vehicle episode has had (they come in a row: any other mode ends the
    /// episode). A byte that fits beside `mode` in the state's padding, as `cyclingLast` does.
    private(set) var automotiveReports: UInt8 = 0
    /// Cycling was reported since the last sure (`high`) walking or running: a cyclist's phone says "walking,
    /// medium" now and then, and "stationary" at lights. Only those reports change it, and they end an in-vehicle
    /// episode, so during one it says whether the episode came after cycling.
    private(set) var cyclingLast = false
    private(set) var lastAutomotive: Double?
    /// The latest report of anything but automotive (stationary included), at `medium` or better.
    private(set) var lastOther: Double?

    mutating func update(_ observation: ActivityObservation, at t: Double) {
        // `low` is unreliable and `unknown` says nothing: both are ignored.
        guard observation.confidence >= .medium else { return }
        switch observation.activity {
        case .automotive:
            if mode != .inVehicle {
                highAutomotiveSeen = false
                automotiveReports = 0
            }
            mode = .inVehicle
            automotiveReports = automotiveReports == .max ? .max : automotiveReports + 1
            highAutomotiveSeen = highAutomotiveSeen || observation.confidence == .high
            lastAutomotive = t
        case .walking, .running:
            mode = .onFoot
            lastOther = t
            cyclingLast = cyclingLast && observation.confidence < .high
        case .cycling:
            mode = .cycling
            lastOther = t
            cyclingLast = true
        case .stationary:
            // At a red light phones report stationary together with automotive: it doesn't leave the vehicle (nor
            // the bicycle: `cyclingLast` stays).
            lastOther = t
        case .unknown:
            return
        }
    }

    /// A lone automotive report among a cyclist's is the classifier's noise (on MobilityNet's Android phones one
    /// came every few minutes of a bicycle ride, the next report saying cycling again): after cycling, an episode
    /// counts from its second automotive report, or once its first has stood this long uncontradicted (iOS
    /// reports only changes).
    static let afterCyclingConfirmation = 30.0

    /// Only `high` automotive, in the current in-vehicle episode, can start a trip (at `t`), and after cycling only
    /// a confirmed episode.
    func allowsTripStart(at t: Double) -> Bool {
        guard mode == .inVehicle, highAutomotiveSeen else { return false }
        guard cyclingLast, automotiveReports < 2, let lastAutomotive else { return true }
        return t - lastAutomotive >= Self.afterCyclingConfirmation
    }

    /// The classifier's latest word is automotive (reports at the same time as a stationary one count).
    var currentlyAutomotive: Bool {
        guard mode == .inVehicle, let lastAutomotive else { return false }
        return lastAutomotive >= (lastOther ?? -.infinity)
    }
}

// Checkpoints written before episodes after cycling were told apart have none of their fields: such an episode counts as
// not after cycling, as it did then.
extension ActivityContext {
    private enum CodingKeys: String, CodingKey {
        case mode, highAutomotiveSeen, automotiveReports, cyclingLast, lastAutomotive, lastOther
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        mode = try container.decode(Mode.self, forKey: .mode)
        highAutomotiveSeen = try container.decode(Bool.self, forKey: .highAutomotiveSeen)
        automotiveReports = try container.decodeIfPresent(UInt8.self, forKey: .automotiveReports) ?? 0
        cyclingLast = try container.decodeIfPresent(Bool.self, forKey: .cyclingLast) ?? false
        lastAutomotive = try container.decodeIfPresent(Double.self, forKey: .lastAutomotive)
        lastOther = try container.decodeIfPresent(Double.self, forKey: .lastOther)
    }
}
