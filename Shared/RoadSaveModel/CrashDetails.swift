/// A position with its time: eCall's "recent vehicle locations".
public struct TimedPosition: Sendable, Equatable, Codable {
    public var latitude: Double
    public var longitude: Double
    /// Seconds since the Unix epoch.
    public var time: Double

    public init(latitude: Double, longitude: Double, time: Double) {
        self.latitude = latitude
        self.longitude = longitude
        self.time = time
    }
}

/// What the records show of a crash beyond its place and time, for the person dispatching help: the impact's
/// strength, the vehicle's speed and direction, how far the position can be trusted and where the vehicle came from
/// (docs/detection.md "Crash alerts", with the EN 15722 mapping). Computed by the crash engine from the crash's own records.
public struct CrashDetails: Sendable, Equatable, Codable {
    /// The fastest accepted fix in the seconds before the impact (`crashSpeedWindowBefore`), m/s.
    public var speedBeforeImpact: Double?
    /// The median speed after the impact settled, m/s.
    public var speedAfterImpact: Double?
    /// The change of velocity in the impact, m/s: from the impact's samples when it has them, else the drop in
    /// GPS speed; nil when neither is known.
    public var deltaV: Double?
    /// The strongest impact's peak acceleration, g.
    public var peakG: Double
    /// How long the strongest impact stayed above 2 g, ms.
    public var impactDurationMs: Double?
    /// Impact records merged into this crash.
    public var impacts: Int
    /// The direction of travel, degrees clockwise from north: the fix's course, else the bearing of the last
    /// movement before the impact.
    public var heading: Double?
    /// Horizontal accuracy of the crash position, m.
    public var positionAccuracy: Double?
    /// Seconds between the fix that gave the position and the impact (never negative).
    public var positionAge: Double?
    /// The position is recent and accurate enough to send help to (`crashPositionTrustedAge`,
    /// `crashPositionTrustedAccuracy`); false without a position.
    public var positionTrusted: Bool
    /// Up to two positions before the crash position, newest first, with their times.
    public var recentPositions: [TimedPosition]
    /// A trip was in progress at the first impact, and which.
    public var inTrip: Bool
    public var tripID: String?

    public init(
        speedBeforeImpact: Double? = nil, speedAfterImpact: Double? = nil, deltaV: Double? = nil,
        peakG: Double, impactDurationMs: Double? = nil, impacts: Int = 1, heading: Double? = nil,
        positionAccuracy: Double? = nil, positionAge: Double? = nil, positionTrusted: Bool = false,
        recentPositions: [TimedPosition] = [], inTrip: Bool = false, tripID: String? = nil
    ) {
        self.speedBeforeImpact = speedBeforeImpact
        self.speedAfterImpact = speedAfterImpact
        self.deltaV = deltaV
        self.peakG = peakG
        self.impactDurationMs = impactDurationMs
        self.impacts = impacts
        self.heading = heading
        self.positionAccuracy = positionAccuracy
        self.positionAge = positionAge
        self.positionTrusted = positionTrusted
        self.recentPositions = recentPositions
        self.inTrip = inTrip
        self.tripID = tripID
    }
}
