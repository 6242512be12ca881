// The simulator's in-memory form of one PROTOCOL §2 record. Times are whole milliseconds since the Unix epoch:
// the output carries three decimals anyway, and integer times make ordering exact and formatting cheap.

import GatewayKit

enum ActivityKind: String {
    case automotive, walking, running, cycling, stationary, unknown
}

enum Confidence: String {
    case low, medium, high
}

struct ActivityReport: Equatable {
    var activity: ActivityKind
    var confidence: Confidence

    init(_ activity: ActivityKind, _ confidence: Confidence) {
        self.activity = activity
        self.confidence = confidence
    }
}

enum RecordBody {
    case capabilities(activityAvailable: Bool, pedometerAvailable: Bool)
    /// `speed` and `hacc` are -1 when unknown/invalid; `course` is nil when unknown (it is then left out: PROTOCOL §2
    /// reads a negative course as unknown, so writing one would say nothing).
    case location(latitude: Double, longitude: Double, speed: Double, course: Double?, hacc: Double)
    case activity(ActivityReport)
    case steps(Int)
    /// As cut by the gateway trigger; sample times are relative to the peak.
    case impact(TriggeredImpact)
}

struct SimRecord {
    var tMs: Int64
    var body: RecordBody
}
