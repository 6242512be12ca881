/// The thresholds of driving behaviour (issue 31, docs/detection.md "How they drove"). Where a figure is published it says
/// whose; the rest are the project's own engineering choices, said so.
public struct BehaviourSettings: Sendable, Equatable, Codable {
    /// Fixes less accurate than this (metres) are not used: speed and course from them are noise.
    public var maximumAccuracy = 20.0
    /// Pairs of fixes closer than this or further apart (seconds) are not judged: too close, speeds repeat; too far
    /// apart, a brake of 2–4 s falls between them (own choice, from the length of labelled brakes).
    public var minimumPairInterval = 0.5
    public var maximumPairInterval = 2.5
    /// A pair implying more than this (m/s², longitudinal or lateral) is a GPS glitch, never an event (own choice:
    /// cars brake at 8–10 m/s² only in emergencies, which the crash engine judges).
    public var glitchAcceleration = 8.0
    /// Hard braking and acceleration (m/s²): Sentiance's −3.0 braking; acceleration 2.5 and the severe levels as
    /// Teltonika's GPS mode (2.5) and the project's own choice (−4.5, 3.5).
    public var brakingThreshold = -3.0
    public var severeBraking = -4.5
    public var accelerationThreshold = 2.5
    public var severeAcceleration = 3.5
    /// A braking or acceleration must change the speed by this much (m/s) and happen at or above the speed gate
    /// (15 km/h, Teltonika's 10 km/h rounded up for GPS noise at walking speeds).
    public var minimumSpeedChange = 3.0
    public var longitudinalSpeedGate = 4.2
    /// Sharp cornering: both speeds at least 30 km/h (Teltonika), lateral acceleration 3.5 m/s² (Sentiance), severe
    /// 5.0 (own), on consecutive pairs turning at least `minimumTurn` degrees in all (own).
    public var corneringSpeedGate = 8.3
    public var corneringThreshold = 3.5
    public var severeCornering = 5.0
    public var minimumTurn = 30.0
    /// Excessive speed (m/s): off unless an application sets a limit; held `speedingDuration` seconds, episodes less
    /// than `speedingMerge` apart merged; severe `severeSpeedingMargin` above the limit (own choices).
    public var speedLimit: Double?
    public var speedingDuration = 30.0
    public var speedingMerge = 10.0
    public var severeSpeedingMargin = 5.6
    /// The same kind of event within this many seconds counts once (own choice: one manoeuvre, one event).
    public var sameEventWindow = 10.0
    /// Trips shorter than these are not scored.
    public var minimumDistance = 1_000.0
    public var minimumDuration = 180.0
    /// Events per distance are counted over at least this much (metres): one brake on a short trip does not ruin
    /// its score.
    public var scoreFloorDistance = 10_000.0
    /// A trip whose usable pairs cover less than this share of its duration is `sparseGPS`.
    public var minimumUsableShare = 0.5
    /// The score's shape (docs/detection.md "How they drove": fitted on enviroCar drives of nine cars, checked on two others).
    /// Weighted events per 100 km at which the events subscore is 50: GPS events disagree with the car's own speed
    /// often enough that they should move the score less than the spread does.
    public var eventsHalvingRate = 80.0
    /// The longitudinal acceleration spread (RMS, m/s²) at which the smoothness subscore is 50: the fit drives' median
    /// spread then scores 75.
    public var smoothnessHalvingRMS = 0.7
    /// How much of the lateral spread (squared, beside the longitudinal's) enters the smoothness subscore. None by
    /// default: lateral acceleration from GPS course follows the road's bends and the course's noise at speed more
    /// than the driving, and with it the score no longer ranks drives as the car's own speed does.
    public var lateralWeight = 0.0

    public init() {}

    public init(from decoder: any Decoder) throws {
        // Member by member, as `DetectionSettings`: a document names only what it changes.
        let container = try decoder.container(keyedBy: CodingKeys.self)
        var settings = BehaviourSettings()
        func take<T: Decodable>(_ key: CodingKeys, _ path: WritableKeyPath<BehaviourSettings, T>) throws {
            if let value = try container.decodeIfPresent(T.self, forKey: key) { settings[keyPath: path] = value }
        }
        try take(.maximumAccuracy, \.maximumAccuracy)
        try take(.minimumPairInterval, \.minimumPairInterval)
        try take(.maximumPairInterval, \.maximumPairInterval)
        try take(.glitchAcceleration, \.glitchAcceleration)
        try take(.brakingThreshold, \.brakingThreshold)
        try take(.severeBraking, \.severeBraking)
        try take(.accelerationThreshold, \.accelerationThreshold)
        try take(.severeAcceleration, \.severeAcceleration)
        try take(.minimumSpeedChange, \.minimumSpeedChange)
        try take(.longitudinalSpeedGate, \.longitudinalSpeedGate)
        try take(.corneringSpeedGate, \.corneringSpeedGate)
        try take(.corneringThreshold, \.corneringThreshold)
        try take(.severeCornering, \.severeCornering)
        try take(.minimumTurn, \.minimumTurn)
        settings.speedLimit = try container.decodeIfPresent(Double.self, forKey: .speedLimit)
        try take(.speedingDuration, \.speedingDuration)
        try take(.speedingMerge, \.speedingMerge)
        try take(.severeSpeedingMargin, \.severeSpeedingMargin)
        try take(.sameEventWindow, \.sameEventWindow)
        try take(.minimumDistance, \.minimumDistance)
        try take(.minimumDuration, \.minimumDuration)
        try take(.scoreFloorDistance, \.scoreFloorDistance)
        try take(.minimumUsableShare, \.minimumUsableShare)
        try take(.eventsHalvingRate, \.eventsHalvingRate)
        try take(.smoothnessHalvingRMS, \.smoothnessHalvingRMS)
        try take(.lateralWeight, \.lateralWeight)
        self = settings
        try validate()
    }

    /// Rejects thresholds that could never fire or would fire on everything; the error names the field as a
    /// settings document writes it (`behaviour.brakingThreshold`).
    public func validate() throws(RoadSaveError) {
        func fail(_ field: String, _ reason: String) -> RoadSaveError {
            .invalidConfiguration(field: "behaviour.\(field)", reason: reason)
        }
        let positive: [(String, Double)] = [
            ("maximumAccuracy", maximumAccuracy), ("minimumPairInterval", minimumPairInterval),
            ("glitchAcceleration", glitchAcceleration), ("accelerationThreshold", accelerationThreshold),
            ("corneringThreshold", corneringThreshold), ("scoreFloorDistance", scoreFloorDistance),
            ("eventsHalvingRate", eventsHalvingRate), ("smoothnessHalvingRMS", smoothnessHalvingRMS),
        ]
        for (name, value) in positive where !(value > 0 && value.isFinite) {
            throw fail(name, "must be a positive number, got \(value)")
        }
        let nonNegative: [(String, Double)] = [
            ("minimumSpeedChange", minimumSpeedChange), ("longitudinalSpeedGate", longitudinalSpeedGate),
            ("corneringSpeedGate", corneringSpeedGate), ("speedingDuration", speedingDuration),
            ("speedingMerge", speedingMerge), ("severeSpeedingMargin", severeSpeedingMargin),
            ("sameEventWindow", sameEventWindow), ("minimumDistance", minimumDistance),
            ("minimumDuration", minimumDuration), ("lateralWeight", lateralWeight),
        ]
        for (name, value) in nonNegative where !(value >= 0 && value.isFinite) {
            throw fail(name, "must be a number ≥ 0, got \(value)")
        }
        if !(maximumPairInterval > minimumPairInterval && maximumPairInterval.isFinite) {
            throw fail("maximumPairInterval", "must be finite and longer than minimumPairInterval")
        }
        if !(brakingThreshold < 0 && brakingThreshold > -glitchAcceleration) {
            throw fail("brakingThreshold", "must be negative and above -glitchAcceleration, got \(brakingThreshold)")
        }
        if !(severeBraking <= brakingThreshold && severeBraking > -glitchAcceleration) {
            throw fail(
                "severeBraking", "must lie between -glitchAcceleration and brakingThreshold, got \(severeBraking)")
        }
        let severeAbove: [(String, Double, Double)] = [
            ("severeAcceleration", severeAcceleration, accelerationThreshold),
            ("severeCornering", severeCornering, corneringThreshold),
        ]
        for (name, severe, threshold) in severeAbove where !(severe >= threshold && severe < glitchAcceleration) {
            throw fail(name, "must lie between its threshold (\(threshold)) and glitchAcceleration, got \(severe)")
        }
        if !(0...360).contains(minimumTurn) { throw fail("minimumTurn", "must be 0–360 degrees, got \(minimumTurn)") }
        if let speedLimit, !(speedLimit > 0 && speedLimit.isFinite) {
            throw fail("speedLimit", "must be a positive speed in m/s, or absent, got \(speedLimit)")
        }
        if !(0...1).contains(minimumUsableShare) {
            throw fail("minimumUsableShare", "must be 0–1, got \(minimumUsableShare)")
        }
    }
}
