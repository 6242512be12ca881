/// One observation of one device (PROTOCOL §2), validated.
public struct SensorRecord: Sendable, Equatable, Codable {
    public var device: DeviceID
    /// The gateway's per-device sequence number; a repeated one is a duplicate.
    public var seq: UInt64?
    /// When it was observed on the device, in seconds since the Unix epoch.
    public var t: Double
    public var payload: Payload

    public init(device: DeviceID, seq: UInt64? = nil, t: Double, payload: Payload) {
        self.device = device
        self.seq = seq
        self.t = t
        self.payload = payload
    }

    public enum Payload: Sendable, Equatable, Codable {
        case location(LocationFix)
        case activity(ActivityObservation)
        /// Cumulative pedometer count since the pedometer started; a decrease is a reset.
        case steps(Int)
        case impact(ImpactObservation)
        case capabilities(DeviceCapabilities)
    }

    public var kind: RecordKind {
        switch payload {
        case .location: .location
        case .activity: .activity
        case .steps: .steps
        case .impact: .impact
        case .capabilities: .capabilities
        }
    }
}

public enum RecordKind: String, Sendable, Codable, CaseIterable {
    case location, activity, steps, impact, capabilities
}

public struct LocationFix: Sendable, Equatable, Codable {
    public var latitude: Double
    public var longitude: Double
    /// GPS speed in m/s; `nil` when unknown (negative or missing in the record).
    public var speed: Double?
    /// Heading in degrees; `nil` when unknown.
    public var course: Double?
    /// Horizontal accuracy radius in metres; negative means an invalid fix; `nil` when not reported.
    public var horizontalAccuracy: Double?

    public init(
        latitude: Double, longitude: Double, speed: Double? = nil, course: Double? = nil,
        horizontalAccuracy: Double? = nil
    ) {
        self.latitude = latitude
        self.longitude = longitude
        self.speed = speed
        self.course = course
        self.horizontalAccuracy = horizontalAccuracy
    }
}

public struct ActivityObservation: Sendable, Equatable, Codable {
    public var activity: ActivityType
    public var confidence: ActivityConfidence

    public init(_ activity: ActivityType, _ confidence: ActivityConfidence) {
        self.activity = activity
        self.confidence = confidence
    }
}

public struct ImpactObservation: Sendable, Equatable, Codable {
    /// Peak acceleration magnitude, in g.
    public var peakG: Double
    /// How long the acceleration stayed above 2 g, in milliseconds.
    public var durationMs: Double?
    /// Raw window around the peak: dt in seconds from the peak, x/y/z in g.
    public var samples: [ImpactSample]

    public init(peakG: Double, durationMs: Double? = nil, samples: [ImpactSample] = []) {
        self.peakG = peakG
        self.durationMs = durationMs
        self.samples = samples
    }
}

public struct ImpactSample: Sendable, Equatable, Codable {
    public var dt: Double
    public var x: Double
    public var y: Double
    public var z: Double

    public init(dt: Double, x: Double, y: Double, z: Double) {
        self.dt = dt
        self.x = x
        self.y = y
        self.z = z
    }

    public var magnitude: Double { (x * x + y * y + z * z).squareRoot() }

    /// Written as `[dt, x, y, z]`: an impact carries hundreds of samples, and keys would triple their size in a
    /// checkpoint.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.unkeyedContainer()
        try container.encode(dt)
        try container.encode(x)
        try container.encode(y)
        try container.encode(z)
    }

    public init(from decoder: any Decoder) throws {
        var container = try decoder.unkeyedContainer()
        dt = try container.decode(Double.self)
        x = try container.decode(Double.self)
        y = try container.decode(Double.self)
        z = try container.decode(Double.self)
    }
}

public struct DeviceCapabilities: Sendable, Equatable, Codable {
    public var activityAvailable: Bool
    public var pedometerAvailable: Bool

    /// A device that has sent no `capabilities` record is taken to have both.
    public static let full = DeviceCapabilities(activityAvailable: true, pedometerAvailable: true)

    public init(activityAvailable: Bool, pedometerAvailable: Bool) {
        self.activityAvailable = activityAvailable
        self.pedometerAvailable = pedometerAvailable
    }
}
