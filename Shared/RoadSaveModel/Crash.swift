/// The platform's verdict on a suspected crash.
public enum CrashVerdict: String, Sendable, Codable, CaseIterable {
    case high, medium, low, none
}

/// The confidence that `crashDetected` carries: the verdict, or `unknown` when the platform could not be reached.
public enum CrashConfidence: String, Sendable, Codable, CaseIterable {
    case high, medium, low, unknown

    /// `nil` for a verdict of `none`: that crash is not reported at all.
    public init?(verdict: CrashVerdict) {
        switch verdict {
        case .high: self = .high
        case .medium: self = .medium
        case .low: self = .low
        case .none: return nil
        }
    }
}

/// What `crashDetected` carries.
public struct CrashInfo: Sendable, Equatable {
    public var crashID: String
    public var confidence: CrashConfidence
    /// The time of the impact.
    public var detectedAt: Double
    /// The position at (or last known before) the impact; nil when the device never reported a usable one. Never a
    /// made-up 0,0: help would be sent to the wrong place. (4.0 spells it `location?.coordinate`: optional.)
    public var latitude: Double?
    public var longitude: Double?
    /// Raised by `raiseTestCrash`: alerting systems must not send help.
    public var isTest: Bool
    /// What the records show of the impact and the vehicle (an eCall-style minimum set of data); nil only for events
    /// stored before it was computed.
    public var details: CrashDetails?

    public init(
        crashID: String, confidence: CrashConfidence, detectedAt: Double,
        latitude: Double?, longitude: Double?, isTest: Bool, details: CrashDetails? = nil
    ) {
        self.crashID = crashID
        self.confidence = confidence
        self.detectedAt = detectedAt
        self.latitude = latitude
        self.longitude = longitude
        self.isTest = isTest
        self.details = details
    }
}

/// Why a suspected crash was dismissed before (or by) the platform's evaluation.
public enum FalsePositiveReason: String, Sendable, Codable, CaseIterable {
    /// The peak was below the crash threshold (a bump, a knock on the phone).
    case weakImpact
    /// Free fall before the spike: a dropped or thrown phone.
    case freeFallBeforeImpact
    /// The activity before the impact was walking, running or cycling, with no trip in progress.
    case notInVehicle
    /// The device was slower than a vehicle before the impact.
    case tooSlowBeforeImpact
    /// The device kept its speed after the impact (a pothole or speed bump at speed).
    case speedMaintainedAfterImpact
    /// No usable position or speed around the impact, and nothing else showing the device was in a vehicle.
    case unusablePosition
    /// The platform evaluated the candidate and answered `none`.
    case platformVerdictNone
}
