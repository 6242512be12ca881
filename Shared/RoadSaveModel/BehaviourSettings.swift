/// The thresholds of driving behaviour (issue 31, README "How they drove"). Where a figure is published it says
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

    public init() {}
}
