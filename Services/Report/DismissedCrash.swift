import DetectionEngine
import RoadSaveModel

/// A suspected crash that the engines dismissed, with the reason (not an event: the engines say it to their shell).
public struct DismissedCrash: Sendable, Equatable {
    public var crashID: String
    public var time: Double
    public var latitude: Double?
    public var longitude: Double?
    public var reason: FalsePositiveReason
    public var peakG: Double
    /// m/s, when there were fixes.
    public var speedBefore: Double?
    public var speedAfter: Double?

    public init(
        crashID: String, time: Double, latitude: Double?, longitude: Double?, reason: FalsePositiveReason,
        peakG: Double, speedBefore: Double? = nil, speedAfter: Double? = nil
    ) {
        self.crashID = crashID
        self.time = time
        self.latitude = latitude
        self.longitude = longitude
        self.reason = reason
        self.peakG = peakG
        self.speedBefore = speedBefore
        self.speedAfter = speedAfter
    }

    public init(_ candidate: CrashCandidate, reason: FalsePositiveReason) {
        self.init(
            crashID: candidate.crashID, time: candidate.time, latitude: candidate.latitude,
            longitude: candidate.longitude, reason: reason, peakG: candidate.peakG,
            speedBefore: candidate.speedBefore, speedAfter: candidate.speedAfter)
    }
}
