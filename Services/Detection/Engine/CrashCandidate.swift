import RoadSaveModel

/// A suspected crash, with the features the platform evaluates (PROTOCOL §5: device, time, position, speeds
/// before and after, peak g, samples when present).
public struct CrashCandidate: Sendable, Equatable, Codable {
    public var crashID: String
    public var app: String
    public var user: String
    /// Time of the first impact, seconds since the Unix epoch.
    public var time: Double
    /// nil when the device never reported a usable position.
    public var latitude: Double?
    public var longitude: Double?
    /// Horizontal accuracy of the position, metres.
    public var positionAccuracy: Double?
    /// Highest GPS speed in the window before the impact, m/s; `nil` when no fix was there.
    public var speedBefore: Double?
    /// Median GPS speed after the impact settled, m/s; `nil` when no fix was there.
    public var speedAfter: Double?
    public var peakG: Double
    public var durationMs: Double?
    /// Impact records merged into this crash.
    public var impactCount: Int
    /// The classifier's view at the impact (`inVehicle`, `onFoot`, `cycling`, `none`).
    public var activity: String
    public var tripInProgress: Bool
    public var isTest: Bool
    /// The raw window of the strongest impact: `[dt, x, y, z]` rows in g.
    public var samples: [[Double]]

    public var device: DeviceID { DeviceID(app: app, user: user) }
}

/// How the platform's evaluation ended.
public enum CrashEvaluationOutcome: Sendable, Equatable, Codable {
    case verdict(CrashVerdict)
    /// Unreachable after retries: the crash is reported with confidence `unknown`.
    case unreachable
}
