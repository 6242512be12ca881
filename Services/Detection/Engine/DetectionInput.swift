import RoadSaveModel

/// One input to the fleet that is not a pure function of the journal: written to the store before the events it
/// gives leave the process, so that a restart re-runs exactly the same inputs in the same order and so gives the
/// same events with the same IDs, without asking the platform or the clock a second time.
public enum DetectionInput: Sendable, Codable, Equatable {
    /// The records of `feed` (an ingest journal) after position `after` through `to`, applied at `now`.
    case records(feed: String, after: UInt64, to: UInt64, now: Double)
    /// The platform's answer to a settings fetch for an application.
    case settings(app: String, fetch: SettingsFetch, now: Double)
    /// The platform's answer on a suspected crash.
    case verdict(device: DeviceID, crashID: String, outcome: CrashEvaluationOutcome)
    /// A control command (its JSON as received) and the settings fetch it needed, at `now`.
    case control(request: String, fetch: SettingsFetch?, now: Double)
    /// The clock moved on while every journal was read to its end: silent devices' timers may fire.
    case tick(now: Double)
    /// The clock moved on while a journal was behind, for `devices` only: every record of them so far was read
    /// (the journals said where their records end), so their timers may fire without waiting for the backlog.
    case deviceTick(now: Double, devices: [DeviceID])
    /// Detection heard its journals again at `now` (it started, or a journal answered after an outage): the time
    /// it could not is not the devices' silence (`DeviceFleet.resumeClock`).
    case resumed(now: Double)

    public var kind: String {
        switch self {
        case .records: "records"
        case .settings: "settings"
        case .verdict: "verdict"
        case .control: "control"
        case .tick: "tick"
        case .deviceTick: "deviceTick"
        case .resumed: "resumed"
        }
    }
}
