import RoadSaveModel

/// Everything a `DeviceFleet` knows about one device: its session, its reorder stage, the records waiting for its
/// application's settings, and the link between its event time and the shell's clock. Codable: a checkpoint is one
/// of these per device plus the `FleetSharedState`.
public struct FleetDeviceState: Sendable, Codable {
    public internal(set) var session: DeviceSession
    public internal(set) var ordering: RecordOrdering
    /// Records that arrived before the application's settings were known (auto-monitor), in arrival order.
    public internal(set) var waitingForSettings: [SensorRecord] = []
    /// The latest event time applied (or the time a control command was given).
    public internal(set) var lastEventTime: Double?
    /// The shell's clock when the last record arrived (or a control command was given); nil without a clock.
    public internal(set) var lastArrival: Double?
    /// Candidates sent for evaluation and not answered, in the order they were sent.
    public internal(set) var awaitingEvaluation: [CrashCandidate] = []
    /// `deviceNotMonitored` was said for this device (once until it is monitored).
    public internal(set) var notMonitoredReported = false
    /// Auto-monitor could not configure the device (its IDs are not a valid configuration): not tried again.
    public internal(set) var autoMonitorRefused = false
    /// The gateway's stream its latest records came through (`FleetStreamState`); nil when their batch had no
    /// header: the window and the clock then order its records.
    public internal(set) var stream: String?

    init(device: DeviceID, ordering options: RecordOrdering.Options) {
        session = DeviceSession(device: device)
        ordering = RecordOrdering(options: options)
    }

    public var device: DeviceID { session.device }

    /// Something is under way whose outcome may depend on the device's quiet time: a record buffered for ordering
    /// or waiting for its application's settings, a candidate waiting for the platform's verdict, a trip in
    /// progress or a timer (stop delay, crash decision).
    var hasWorkInFlight: Bool {
        ordering.bufferedCount > 0 || !waitingForSettings.isEmpty || !awaitingEvaluation.isEmpty
            || session.isTripInProgress || session.nextDeadline != nil
    }

    /// `hasWorkInFlight`, asked through in-place access: the fleet asks it of the devices it wakes on its clock's
    /// ticks, and reading the getter through an array element copied the whole state first (a retain per reference
    /// in it: a fifth of a tick's time at half load).
    mutating func hasWorkInFlightInPlace() -> Bool { hasWorkInFlight }

    /// The device's event time on the shell's clock: its last event time run on by the time passed since its last
    /// arrival. A device never seen has none: the clock itself is used.
    func eventTime(now: Double) -> Double {
        guard let lastEventTime else { return now }
        return lastEventTime + max(0, now - (lastArrival ?? now))
    }

    /// How far the clock may run the device's timers at `now`: its event time, but never past a record still held
    /// for ordering. Replay applies that record before any later deadline fires; a timer fired past it would decide
    /// (end a trip, close a crash's follow-up) without it.
    func timerTime(now: Double) -> Double {
        let eventNow = eventTime(now: now)
        guard let held = ordering.oldestBufferedTime else { return eventNow }
        return min(eventNow, held)
    }
}

/// What a fleet knows about an application's settings, for auto-monitor.
public struct FleetApplicationState: Sendable, Equatable, Codable {
    public var app: String
    /// The settings last fetched; once known they are used for every device of the application started later.
    public var settings: DetectionSettings?
    /// A fetch was asked for (`fetchSettings`) and not answered.
    public var fetchInFlight = false
    /// After a failed fetch: records of the application's new devices are not monitored until this time (the
    /// shell's clock, or record time without one); then the next record asks again.
    public var retryAt: Double?

    public init(app: String) {
        self.app = app
    }
}

/// Everything in a fleet that is not per device: applications' settings and fetches in flight, the order the
/// devices were met in, and the statistics. Lists, not dictionaries, so that the encoded bytes are stable.
public struct FleetSharedState: Sendable, Equatable, Codable {
    /// Sorted by application.
    public var applications: [FleetApplicationState]
    /// Devices in the order they were met (the order `tick` visits them).
    public var deviceOrder: [DeviceID]
    public var statistics: FleetStatistics
    /// The newest record time received (the retry base of a failed settings fetch without a clock).
    public var newestRecordTime: Double?
    /// The gateways' streams, sorted by name (nil in checkpoints written before watermarks).
    public var streams: [FleetStreamState]?

    public init(
        applications: [FleetApplicationState] = [], deviceOrder: [DeviceID] = [],
        statistics: FleetStatistics = .init(), newestRecordTime: Double? = nil,
        streams: [FleetStreamState]? = nil
    ) {
        self.applications = applications
        self.deviceOrder = deviceOrder
        self.statistics = statistics
        self.newestRecordTime = newestRecordTime
        self.streams = streams
    }
}
