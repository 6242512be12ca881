// The records a converter produces (CONTRACT §2), before they are written as NDJSON lines. The converters build these
// values; `NDJSONWriter` orders them, numbers them and renders them.

import GatewayKit

public enum ActivityKind: String, Sendable, CaseIterable {
    case automotive, walking, running, cycling, stationary, unknown
}

public enum ActivityConfidence: String, Sendable, CaseIterable {
    case low, medium, high
}

public struct SensorRecord: Sendable, Equatable {
    public enum Body: Sendable, Equatable {
        case capabilities(activityAvailable: Bool, pedometerAvailable: Bool)
        /// `speed` in m/s, negative = unknown; `course` and `hacc` are left out of the line when nil.
        case location(lat: Double, lon: Double, speed: Double, course: Double?, hacc: Double?)
        case activity(ActivityKind, ActivityConfidence)
        /// Cumulative pedometer count.
        case steps(Int)
        /// One trigger of the gateway's impact trigger; its samples' times are relative to the peak.
        case impact(TriggeredImpact)
    }

    /// Unix seconds.
    public var t: Double
    public var body: Body

    public init(t: Double, body: Body) {
        self.t = t
        self.body = body
    }

    /// The record's `kind` field.
    public var kind: String {
        switch body {
        case .capabilities: return "capabilities"
        case .location: return "location"
        case .activity: return "activity"
        case .steps: return "steps"
        case .impact: return "impact"
        }
    }

    public static let kinds = ["capabilities", "location", "activity", "steps", "impact"]
}
