import RoadSaveModel

/// What a `DeviceFleet` asks its shell to do.
public enum FleetAction: Sendable, Equatable {
    /// Deliver a delegate-equivalent event.
    case emit(RoadSaveEvent)
    /// Fetch the application's settings from the platform, then call `DeviceFleet.settingsFetched`.
    case fetchSettings(app: String)
    /// Ask the platform to evaluate this candidate, then call `DeviceFleet.crashEvaluated`.
    case evaluateCrash(device: DeviceID, candidate: CrashCandidate)
    /// A suspected crash was dismissed, with the reason (for logs and tuning; not an event).
    case crashDismissed(device: DeviceID, candidate: CrashCandidate, reason: FalsePositiveReason)
    /// A record was not applied (duplicate, too late, far in the future); counted in the statistics.
    case recordRejected(SensorRecord, RecordOrdering.Rejection)
    /// Monitoring could not start for a device met in the records (e.g. `offlineLimitExceeded`: settings could not
    /// be fetched and none were ever known). Said once per device until it is monitored; its records are counted
    /// as `notMonitored`.
    case deviceNotMonitored(DeviceID, RoadSaveError)
    /// A gateway's watermark has not moved since `stillSince` (the shell's clock) for `watermarkHold`, and the
    /// clock now releases its devices' records and decisions; records the gateway delivers afterwards may be too
    /// late. Said once until the watermark moves again; each device so released is counted (`forcedReleases`).
    case watermarkHoldExpired(stream: String, stillSince: Double)
}

extension Array where Element == FleetAction {
    /// The events among the actions.
    public var events: [RoadSaveEvent] {
        compactMap { if case .emit(let event) = $0 { event } else { nil } }
    }
}

/// What a fleet has counted since it started (carried across checkpoints).
public struct FleetStatistics: Sendable, Equatable, Codable {
    /// Records received.
    public var records = 0
    /// Records applied to a monitored device's session.
    public var applied = 0
    public var duplicates = 0
    public var late = 0
    public var farInFuture = 0
    /// Records of devices not monitored (never started, settings unavailable, stopped): not applied.
    public var notMonitored = 0
    /// Of `notMonitored`: records beyond `maximumWaitingRecords` while a device's settings were fetched.
    public var waitingOverflow = 0
    /// Devices known.
    public var devices = 0
    /// Events emitted.
    public var events = 0
    public var crashesDismissed = 0
    /// Devices of a gateway's stream released by the clock because its watermark stood still for `watermarkHold`.
    public var forcedReleases = 0
    /// Impact records too late for ordering that were screened anyway (`DeviceSession.lateImpact`).
    public var lateImpactsScreened = 0

    public init() {}

    private enum CodingKeys: String, CodingKey {
        case records, applied, duplicates, late, farInFuture, notMonitored, waitingOverflow, devices, events
        case crashesDismissed, forcedReleases, lateImpactsScreened
    }

    /// Counts missing from a checkpoint written before they existed read as 0.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func count(_ key: CodingKeys) throws -> Int { try container.decodeIfPresent(Int.self, forKey: key) ?? 0 }
        records = try count(.records)
        applied = try count(.applied)
        duplicates = try count(.duplicates)
        late = try count(.late)
        farInFuture = try count(.farInFuture)
        notMonitored = try count(.notMonitored)
        waitingOverflow = try count(.waitingOverflow)
        devices = try count(.devices)
        events = try count(.events)
        crashesDismissed = try count(.crashesDismissed)
        forcedReleases = try count(.forcedReleases)
        lateImpactsScreened = try count(.lateImpactsScreened)
    }
}
