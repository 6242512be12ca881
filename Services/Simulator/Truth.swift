// Ground truth per device: what really happened, taken from the simulated kinematics rather than from the plan, so
// that it stays exact when a phase is cut short by the end of the simulation. All times are Unix seconds rounded to
// the millisecond, exactly as the records carry them.

/// One leg of travel: a car drive, a bus ride, a walk, a run or a bike ride.
public struct TravelTruth: Sendable, Codable, Equatable {
    /// `car`, `bus`, `walking`, `running` or `cycling`.
    public var mode: String
    /// First movement.
    public var start: Double
    /// Last movement (the moment the vehicle or person came to rest for good).
    public var end: Double
    public var distanceMetres: Double
    /// Highest true speed, m/s.
    public var maxSpeed: Double
    /// `arrived`, `crash` or `simulationEnd`.
    public var endReason: String
    public var startLatitude: Double
    public var startLongitude: Double
    public var endLatitude: Double
    public var endLongitude: Double
}

public struct CrashTruth: Sendable, Codable, Equatable {
    /// Time of the primary impact's peak (the impact record's `t`).
    public var t: Double
    /// True position at impact.
    public var latitude: Double
    public var longitude: Double
    /// True speed just before impact, m/s.
    public var speedBefore: Double
    /// The primary impact record's peak and duration.
    public var peakG: Double
    public var durationMs: Double
    /// Time of a secondary hit, if there was one.
    public var secondaryHitT: Double?
    /// Whether the secondary hit produced its own impact record (it does when it is more than 2 s after the primary).
    public var secondaryRecorded: Bool
    /// When the vehicle was at rest after the impact.
    public var standstillAt: Double
}

public struct DropTruth: Sendable, Codable, Equatable {
    /// Time of the impact on the ground (the impact record's `t`).
    public var t: Double
    public var freeFallStart: Double
    public var freeFallSeconds: Double
    public var peakG: Double
    /// True when dropped while walking, false when standing.
    public var whileWalking: Bool
}

/// A pothole or speed bump hit at speed.
public struct BumpTruth: Sendable, Codable, Equatable {
    public var t: Double
    public var peakG: Double
    public var durationMs: Double
    /// True speed at the bump, m/s (unchanged after it).
    public var speed: Double
}

/// An emergency stop (0.8–0.9 g) that must not produce an impact record.
public struct HardBrakeTruth: Sendable, Codable, Equatable {
    public var start: Double
    /// When the vehicle came to rest.
    public var end: Double
    public var fromSpeed: Double
    /// Deceleration, m/s².
    public var deceleration: Double
}

/// Every impact record the device emitted, with its cause.
public struct ImpactTruth: Sendable, Codable, Equatable {
    public var t: Double
    public var peakG: Double
    public var durationMs: Double
    /// `bump`, `pothole`, `crash`, `crashSecondary`, `drop` or `hardBrake`.
    public var cause: String
}

public struct ScenarioTruth: Sendable, Codable, Equatable {
    public var app: String
    public var user: String
    /// 0-based device index (user-001 is 0).
    public var device: Int
    public var scenario: String
    /// How the device's owner drives (`DrivingStyle`): calm, normal or aggressive.
    public var drivingStyle: String
    public var activityAvailable: Bool
    public var pedometerAvailable: Bool
    /// Time of the device's first and last record.
    public var firstRecordT: Double
    public var lastRecordT: Double
    /// Car drives with the user at the wheel: the trips a detector should find.
    public var drives: [TravelTruth]
    /// Every other leg: walks, runs, bike rides and bus rides (as a passenger).
    public var otherLegs: [TravelTruth]
    public var crashes: [CrashTruth]
    public var drops: [DropTruth]
    public var bumps: [BumpTruth]
    public var hardBrakes: [HardBrakeTruth]
    /// The car's manoeuvres beyond the published harsh thresholds, from its true speed (the emergency stops too).
    public var manoeuvres: [ManoeuvreTruth]
    public var impacts: [ImpactTruth]
    /// Times of the deliberately broken fixes: ~300 m outliers that still claim a good `hacc`, and invalid fixes
    /// (`hacc` -1, stale position).
    public var gpsOutliers: [Double]
    public var invalidFixes: [Double]
    /// Final cumulative step count (0 without a pedometer).
    public var totalSteps: Int

    init(
        app: String, user: String, device: Int, scenario: String, drivingStyle: DrivingStyle = .normal,
        activityAvailable: Bool, pedometerAvailable: Bool
    ) {
        self.app = app
        self.user = user
        self.device = device
        self.scenario = scenario
        self.drivingStyle = drivingStyle.rawValue
        self.activityAvailable = activityAvailable
        self.pedometerAvailable = pedometerAvailable
        firstRecordT = 0
        lastRecordT = 0
        drives = []
        otherLegs = []
        crashes = []
        drops = []
        bumps = []
        hardBrakes = []
        manoeuvres = []
        impacts = []
        gpsOutliers = []
        invalidFixes = []
        totalSteps = 0
    }
}

/// Unix seconds for a millisecond time, as the records carry it.
func seconds(_ ms: Int64) -> Double { Double(ms) / 1000 }
