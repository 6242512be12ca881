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
    // What `crashDetected` reports beyond the screening's features (`CrashDetails`); nil in candidates kept from
    // before them.
    /// Estimated change of velocity, m/s (`ImpactReadings.deltaV`).
    public var deltaV: Double?
    /// Direction of travel, degrees clockwise from north.
    public var heading: Double?
    /// The time of the fix that gave the position.
    public var positionTime: Double?
    public var positionTrusted: Bool?
    /// The two positions before the crash position, newest first.
    public var recentPositions: [TimedPosition]?
    /// The trip in progress at the first impact.
    public var tripID: String?

    public var device: DeviceID { DeviceID(app: app, user: user) }

    /// What `crashDetected` carries of this candidate.
    public var details: CrashDetails {
        CrashDetails(
            speedBeforeImpact: speedBefore, speedAfterImpact: speedAfter, deltaV: deltaV, peakG: peakG,
            impactDurationMs: durationMs, impacts: impactCount, heading: heading,
            positionAccuracy: latitude == nil ? nil : positionAccuracy,
            positionAge: positionTime.map { abs(time - $0) }, positionTrusted: positionTrusted ?? false,
            recentPositions: recentPositions ?? [], inTrip: tripInProgress, tripID: tripID)
    }
}

/// How the platform's evaluation ended.
public enum CrashEvaluationOutcome: Sendable, Equatable, Codable {
    case verdict(CrashVerdict)
    /// Unreachable after retries: the crash is reported with confidence `unknown`.
    case unreachable
}
