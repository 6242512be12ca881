/// The thresholds of detection, as the platform's settings endpoint serves them (PROTOCOL §5). Every field has a
/// default, so a settings document (or `--settings` file) need only name what it changes. Times in seconds,
/// distances in metres, speeds in m/s.
public struct DetectionSettings: Sendable, Equatable, Codable {
    // Which detections the platform enables for the application (on top of the device's detection mode).
    public var tripDetectionEnabled = true
    public var crashDetectionEnabled = true

    // Trip start: GPS movement evidence behind a distance/duration hysteresis.
    /// A fix at or above this speed is movement (walking pace is below it).
    public var movementSpeed = 2.0
    /// A movement run must reach this speed at least once to count as driving evidence.
    public var startSpeed = 4.0
    /// Net displacement a movement run needs before a trip starts (jitter stays within its accuracy radius).
    public var startDistance = 200.0
    /// Duration a movement run needs before a trip starts.
    public var startDuration = 30.0
    /// A stop longer than this breaks a movement run before a trip has started.
    public var startRunBreak = 60.0
    /// Without an activity classifier, trips start on sustained GPS movement alone, with stricter thresholds
    /// that walking, running and cycling cannot meet.
    public var gpsOnlyStartSpeed = 7.0
    public var gpsOnlyStartDistance = 500.0
    public var gpsOnlyStartDuration = 60.0
    /// Instead of that average, a speed held over two fixes that no bicycle holds (43 km/h) may start a trip too:
    /// city driving averages less than `gpsOnlyStartSpeed` between its lights.
    public var gpsOnlyStartPeakSpeed = 12.0
    /// Or, for city traffic that never reaches that between its lights: this speed (30 km/h) held at every fix for
    /// `gpsOnlyStartHeldDuration`, with `gpsOnlyStartHeldDistance` of net displacement. On the real recordings a
    /// bicycle or a walk rarely holds it for a quarter of a minute (docs/detection.md "Trips").
    public var gpsOnlyStartHeldSpeed = 8.3
    public var gpsOnlyStartHeldDuration = 15.0
    public var gpsOnlyStartHeldDistance = 200.0

    // Trip end.
    /// No movement for this long ends a trip.
    public var stopDelay = 240.0
    /// While an in-vehicle activity (automotive, medium or high) is reported after the last movement, the stop
    /// delay runs from that report instead, up to this long after the last movement (long queues, car parks).
    public var maximumStandstillInVehicle = 900.0
    /// More steps than this since the last movement end a trip at once.
    public var stepThreshold = 25
    /// A silence longer than this splits trips: a record after it ends the trip in progress first.
    public var dataGap = 180.0
    /// A trip whose device sends nothing for this long ends then (`deviceSilent`, at its last movement), on the
    /// gateway's watermark or detection's clock. Until then only the device's own records may end it: a phone that
    /// lost its connection keeps recording and uploads later, and what it recorded, not the other devices' time,
    /// says whether it stopped. Half an hour: tunnels, car parks and rural dead zones last minutes to tens of minutes,
    /// and a trip's end comes at most this late for a phone that falls silent for good (Traccar waits an hour).
    public var tripOfflineGrace = 1800.0

    // GPS filtering.
    /// Fixes less accurate than this (horizontal accuracy radius) are not used.
    public var maximumHorizontalAccuracy = 50.0
    /// A jump implying a faster speed than this is a bad fix.
    public var maximumPlausibleSpeed = 90.0

    // Crash detection.
    /// Impacts with a lower peak are dismissed as weak.
    public var crashMinimumPeakG = 4.0
    /// The device must have moved at least this fast in the window before the impact.
    public var crashMinimumSpeedBefore = 4.2
    public var crashSpeedWindowBefore = 20.0
    /// After the impact, speeds from `crashSettleTime` to `crashDecisionDelay` show whether the vehicle stopped.
    public var crashSettleTime = 3.0
    public var crashDecisionDelay = 20.0
    /// A median speed after the impact at or above this (and above half the speed before) is "speed kept".
    public var crashSpeedKeptAfter = 4.0
    /// Impacts within this time of a crash's first impact are the same crash.
    public var crashClusterWindow = 30.0
    /// Free fall: |a| below this (g) for at least `freeFallMinimumDuration` in the second before the peak.
    public var freeFallMaximumG = 0.35
    public var freeFallMinimumDuration = 0.25
    /// A fix older or newer than this around the impact is too far away to give the crash position.
    public var crashPositionWindow = 120.0
    /// A crash position is trusted (`positionTrusted`) when its fix is at most this old (or new) at the impact and
    /// at least this accurate: near enough in time and place to send help to without looking further.
    public var crashPositionTrustedAge = 30.0
    public var crashPositionTrustedAccuracy = 30.0

    // Crash follow-up (docs/detection.md "Crash alerts").
    /// `crashFollowUp` is sent this long (event time) after a reported crash was decided; 0 sends none.
    public var crashFollowUpDelay = 120.0
    /// Steps after the impact from which the person counts as walking.
    public var crashFollowUpWalkingSteps = 10
    /// Distance from the crash position from which, with a vehicle's speed held, the vehicle has moved on.
    public var crashFollowUpMovedDistance = 200.0

    // Monitoring.
    /// How long cached settings may be used while the platform cannot be reached.
    public var offlineGrace = 72.0 * 3600

    /// How driving behaviour is judged (docs/detection.md "How they drove"): a nested object, `"behaviour": {…}`.
    public var behaviour = BehaviourSettings()

    public init() {}

    public init(from decoder: any Decoder) throws {
        // Decoded member by member so that a document may leave any of them out.
        let container = try decoder.container(keyedBy: CodingKeys.self)
        var settings = DetectionSettings()
        func take<T: Decodable>(_ key: CodingKeys, _ path: WritableKeyPath<DetectionSettings, T>) throws {
            if let value = try container.decodeIfPresent(T.self, forKey: key) { settings[keyPath: path] = value }
        }
        try take(.tripDetectionEnabled, \.tripDetectionEnabled)
        try take(.crashDetectionEnabled, \.crashDetectionEnabled)
        try take(.movementSpeed, \.movementSpeed)
        try take(.startSpeed, \.startSpeed)
        try take(.startDistance, \.startDistance)
        try take(.startDuration, \.startDuration)
        try take(.startRunBreak, \.startRunBreak)
        try take(.gpsOnlyStartSpeed, \.gpsOnlyStartSpeed)
        try take(.gpsOnlyStartDistance, \.gpsOnlyStartDistance)
        try take(.gpsOnlyStartDuration, \.gpsOnlyStartDuration)
        try take(.gpsOnlyStartPeakSpeed, \.gpsOnlyStartPeakSpeed)
        try take(.gpsOnlyStartHeldSpeed, \.gpsOnlyStartHeldSpeed)
        try take(.gpsOnlyStartHeldDuration, \.gpsOnlyStartHeldDuration)
        try take(.gpsOnlyStartHeldDistance, \.gpsOnlyStartHeldDistance)
        try take(.stopDelay, \.stopDelay)
        try take(.maximumStandstillInVehicle, \.maximumStandstillInVehicle)
        try take(.stepThreshold, \.stepThreshold)
        try take(.dataGap, \.dataGap)
        try take(.tripOfflineGrace, \.tripOfflineGrace)
        try take(.maximumHorizontalAccuracy, \.maximumHorizontalAccuracy)
        try take(.maximumPlausibleSpeed, \.maximumPlausibleSpeed)
        try take(.crashMinimumPeakG, \.crashMinimumPeakG)
        try take(.crashMinimumSpeedBefore, \.crashMinimumSpeedBefore)
        try take(.crashSpeedWindowBefore, \.crashSpeedWindowBefore)
        try take(.crashSettleTime, \.crashSettleTime)
        try take(.crashDecisionDelay, \.crashDecisionDelay)
        try take(.crashSpeedKeptAfter, \.crashSpeedKeptAfter)
        try take(.crashClusterWindow, \.crashClusterWindow)
        try take(.freeFallMaximumG, \.freeFallMaximumG)
        try take(.freeFallMinimumDuration, \.freeFallMinimumDuration)
        try take(.crashPositionWindow, \.crashPositionWindow)
        try take(.crashPositionTrustedAge, \.crashPositionTrustedAge)
        try take(.crashPositionTrustedAccuracy, \.crashPositionTrustedAccuracy)
        try take(.crashFollowUpDelay, \.crashFollowUpDelay)
        try take(.crashFollowUpWalkingSteps, \.crashFollowUpWalkingSteps)
        try take(.crashFollowUpMovedDistance, \.crashFollowUpMovedDistance)
        try take(.offlineGrace, \.offlineGrace)
        try take(.behaviour, \.behaviour)
        self = settings
        try validate()
    }

    /// Rejects settings that would make detection meaningless; the error names the field.
    public func validate() throws(RoadSaveError) {
        let positive: [(String, Double)] = [
            ("movementSpeed", movementSpeed), ("startSpeed", startSpeed), ("startDuration", startDuration),
            ("startRunBreak", startRunBreak), ("gpsOnlyStartSpeed", gpsOnlyStartSpeed),
            ("gpsOnlyStartDuration", gpsOnlyStartDuration), ("gpsOnlyStartPeakSpeed", gpsOnlyStartPeakSpeed),
            ("gpsOnlyStartHeldSpeed", gpsOnlyStartHeldSpeed), ("gpsOnlyStartHeldDuration", gpsOnlyStartHeldDuration),
            ("stopDelay", stopDelay), ("dataGap", dataGap), ("tripOfflineGrace", tripOfflineGrace),
            ("maximumHorizontalAccuracy", maximumHorizontalAccuracy), ("maximumPlausibleSpeed", maximumPlausibleSpeed),
            ("crashMinimumPeakG", crashMinimumPeakG), ("crashDecisionDelay", crashDecisionDelay),
            ("crashClusterWindow", crashClusterWindow), ("crashPositionWindow", crashPositionWindow),
            ("crashPositionTrustedAge", crashPositionTrustedAge),
            ("crashPositionTrustedAccuracy", crashPositionTrustedAccuracy), ("offlineGrace", offlineGrace),
        ]
        for (name, value) in positive where !(value > 0 && value.isFinite) {
            throw .invalidConfiguration(field: name, reason: "must be a positive number, got \(value)")
        }
        let nonNegative: [(String, Double)] = [
            ("startDistance", startDistance), ("gpsOnlyStartDistance", gpsOnlyStartDistance),
            ("gpsOnlyStartHeldDistance", gpsOnlyStartHeldDistance),
            ("crashMinimumSpeedBefore", crashMinimumSpeedBefore), ("crashSpeedWindowBefore", crashSpeedWindowBefore),
            ("crashSettleTime", crashSettleTime), ("crashSpeedKeptAfter", crashSpeedKeptAfter),
            ("freeFallMaximumG", freeFallMaximumG), ("freeFallMinimumDuration", freeFallMinimumDuration),
            ("crashFollowUpDelay", crashFollowUpDelay), ("crashFollowUpMovedDistance", crashFollowUpMovedDistance),
        ]
        for (name, value) in nonNegative where !(value >= 0 && value.isFinite) {
            throw .invalidConfiguration(field: name, reason: "must be a number ≥ 0, got \(value)")
        }
        if crashFollowUpWalkingSteps < 1 {
            throw .invalidConfiguration(
                field: "crashFollowUpWalkingSteps",
                reason: "must be at least 1, got \(crashFollowUpWalkingSteps)")
        }
        if stepThreshold < 1 {
            throw .invalidConfiguration(field: "stepThreshold", reason: "must be at least 1, got \(stepThreshold)")
        }
        if tripOfflineGrace < stopDelay {
            throw .invalidConfiguration(field: "tripOfflineGrace", reason: "must be at least stopDelay")
        }
        if maximumStandstillInVehicle < stopDelay {
            throw .invalidConfiguration(field: "maximumStandstillInVehicle", reason: "must be at least stopDelay")
        }
        if crashSettleTime >= crashDecisionDelay {
            throw .invalidConfiguration(field: "crashSettleTime", reason: "must be shorter than crashDecisionDelay")
        }
        if crashClusterWindow < crashDecisionDelay {
            throw .invalidConfiguration(field: "crashClusterWindow", reason: "must be at least crashDecisionDelay")
        }
        try behaviour.validate()
    }
}
