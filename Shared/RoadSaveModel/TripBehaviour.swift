/// How a trip was driven (issue 31): the manoeuvres that crossed a threshold, a continuous measure of how smoothly
/// the car was driven, and a 0–100 score; or why the trip was not scored. What `tripBehaviour` carries, after the
/// trip's `tripDidEnd`.
public struct TripBehaviour: Sendable, Equatable, Codable {
    public var tripID: String
    /// The trip's end (its `tripDidEnd`'s `endDate`): the event's time.
    public var endDate: Double
    /// Nil when scored.
    public var unscored: UnscoredReason?
    public var events: [DrivingEvent]
    /// The distance the score was judged over (the trip's).
    public var distanceMetres: Double
    /// Threshold events per 100 km (the distance floored at `BehaviourSettings.scoreFloorDistance`).
    public var eventsPer100Kilometres: Double?
    /// The root mean square of the longitudinal and lateral acceleration over the usable pairs (m/s²): how hard
    /// the car was driven between events too, so drives without a single event still differ.
    public var longitudinalRMS: Double?
    public var lateralRMS: Double?
    /// 0–100, 100 the smoothest: the events subscore times the smoothness subscore, over 100.
    public var eventsScore: Double?
    public var smoothnessScore: Double?
    public var score: Double?

    public init(
        tripID: String, endDate: Double, unscored: UnscoredReason? = nil, events: [DrivingEvent] = [],
        distanceMetres: Double,
        eventsPer100Kilometres: Double? = nil, longitudinalRMS: Double? = nil, lateralRMS: Double? = nil,
        eventsScore: Double? = nil, smoothnessScore: Double? = nil, score: Double? = nil
    ) {
        self.tripID = tripID
        self.endDate = endDate
        self.unscored = unscored
        self.events = events
        self.distanceMetres = distanceMetres
        self.eventsPer100Kilometres = eventsPer100Kilometres
        self.longitudinalRMS = longitudinalRMS
        self.lateralRMS = lateralRMS
        self.eventsScore = eventsScore
        self.smoothnessScore = smoothnessScore
        self.score = score
    }

    /// How many events of `kind` (and `severity`, if given) the trip had.
    public func count(of kind: DrivingEventKind, severity: DrivingEventSeverity? = nil) -> Int {
        events.filter { $0.kind == kind && (severity == nil || $0.severity == severity) }.count
    }
}

/// Why a trip has no score.
public enum UnscoredReason: String, Sendable, Codable, CaseIterable {
    /// Judged public transport: the phone's owner was not driving.
    case notCar
    /// Shorter than `BehaviourSettings.minimumDistance` or `minimumDuration` (also `unknown` trips).
    case tooShort
    /// Fixes further apart than `BehaviourSettings.maximumPairInterval` for most of the trip: brakes of 2–4 s cannot
    /// be seen in them.
    case sparseGPS
    /// A crash was detected in the trip: its last seconds are the crash, not the driving.
    case crash
}

public enum DrivingEventKind: String, Sendable, Codable, CaseIterable {
    case hardBraking, hardAcceleration, sharpCornering, excessiveSpeed
}

public enum DrivingEventSeverity: String, Sendable, Codable, CaseIterable {
    case harsh, severe
}

/// One manoeuvre beyond its threshold.
public struct DrivingEvent: Sendable, Equatable, Codable {
    public var kind: DrivingEventKind
    public var severity: DrivingEventSeverity
    public var start: Double
    public var end: Double
    /// The peak: m/s² for braking (negative), acceleration and cornering; m/s for excessive speed.
    public var peak: Double
    /// Speeds (m/s) at the start and at the end.
    public var startSpeed: Double
    public var endSpeed: Double
    /// Where it began.
    public var latitude: Double
    public var longitude: Double
    /// The fixes it was judged on.
    public var fixes: Int

    public init(
        kind: DrivingEventKind, severity: DrivingEventSeverity, start: Double, end: Double, peak: Double,
        startSpeed: Double, endSpeed: Double, latitude: Double, longitude: Double, fixes: Int
    ) {
        self.kind = kind
        self.severity = severity
        self.start = start
        self.end = end
        self.peak = peak
        self.startSpeed = startSpeed
        self.endSpeed = endSpeed
        self.latitude = latitude
        self.longitude = longitude
        self.fixes = fixes
    }
}
