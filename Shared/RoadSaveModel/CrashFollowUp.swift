/// What the records show in the minutes after a crash (docs/detection.md "Crash alerts"). The most urgent first.
public enum CrashFollowUpOutcome: String, Sendable, Codable, CaseIterable {
    /// Nothing received from the device since the impact: the phone may be broken, or the person unable to use it.
    case deviceSilent
    /// Data came, but the phone has neither moved on nor walked.
    case stationary
    /// Steps, or a walking or running activity: the person is mobile.
    case personWalking
    /// Driving resumed (a vehicle's speed held over two fixes, and distance from the crash): likely minor.
    case vehicleMovedOn
}

/// What `crashFollowUp` carries: sent once per reported crash, `crashFollowUpDelay` of event time after the crash was
/// decided, never withdrawing it.
public struct CrashFollowUpInfo: Sendable, Equatable {
    public var crashID: String
    /// The crash's confidence and impact time, as `crashDetected` gave them.
    public var confidence: CrashConfidence
    public var detectedAt: Double
    /// The end of the time watched: the follow-up's own time.
    public var observedUntil: Double
    public var outcome: CrashFollowUpOutcome
    public var isTest: Bool
    /// The evidence: records received after the impact, the seconds they span from it, the farthest distance from
    /// the crash position (nil without a fix), steps counted, the fastest speed held over two fixes (nil without).
    public var records: Int
    public var secondsOfData: Double
    public var distanceMoved: Double?
    public var steps: Int
    public var maxSpeedAfter: Double?
    /// The last position known by `observedUntil`: where the person is now, as far as the records say.
    public var latitude: Double?
    public var longitude: Double?

    public init(
        crashID: String, confidence: CrashConfidence, detectedAt: Double, observedUntil: Double,
        outcome: CrashFollowUpOutcome, isTest: Bool, records: Int, secondsOfData: Double,
        distanceMoved: Double?, steps: Int, maxSpeedAfter: Double?, latitude: Double?, longitude: Double?
    ) {
        self.crashID = crashID
        self.confidence = confidence
        self.detectedAt = detectedAt
        self.observedUntil = observedUntil
        self.outcome = outcome
        self.isTest = isTest
        self.records = records
        self.secondsOfData = secondsOfData
        self.distanceMoved = distanceMoved
        self.steps = steps
        self.maxSpeedAfter = maxSpeedAfter
        self.latitude = latitude
        self.longitude = longitude
    }
}
