import RoadSaveModel

/// Validation of sensor records against PROTOCOL §2: one validator (`record(from: RecordFields)`) for every input
/// format. The readers only find the members (`RecordFields`); the rules and the errors (naming the field and
/// saying why, for error lines and acks) live here once.
public enum RecordDecoding {
    /// Observation times accepted: after 2000-01-01 and before 2100-01-01. Anything else is a broken clock.
    public static let earliestTime = 946_684_800.0
    public static let latestTime = 4_102_444_800.0
    /// Largest sample window accepted in one impact record (10 s at 1 kHz).
    public static let maximumSamples = 10_000

    /// Decodes one JSON text (one NDJSON line) into a record: the zero-copy scanner first; a text it does not
    /// handle (escapes, non-ASCII, unknown nested members, bad syntax) goes through `JSONParser`, which also gives the
    /// syntax error.
    public static func record(fromJSON bytes: some Collection<UInt8>) throws(RecordError) -> SensorRecord {
        let scanned =
            bytes.withContiguousStorageIfAvailable { JSONRecordScanner.scan($0, identifiers: nil) }
            ?? Array(bytes).withUnsafeBufferPointer { JSONRecordScanner.scan($0, identifiers: nil) }
        if let fields = scanned { return try record(from: fields) }
        return try recordThroughParser(fromJSON: bytes)
    }

    /// The general path: `JSONParser` to a `JSONValue`, then the validator.
    public static func recordThroughParser(fromJSON bytes: some Collection<UInt8>) throws(RecordError) -> SensorRecord {
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            throw RecordError(field: "(json)", reason: "not valid JSON at \(error)")
        }
        return try record(from: value)
    }

    public static func record(from value: JSONValue) throws(RecordError) -> SensorRecord {
        guard case .object(let members) = value else {
            throw RecordError(field: "(record)", reason: "expected a JSON object, found \(value.typeName)")
        }
        return try record(from: RecordFields(members: members))
    }

    /// The validator: the members in the order PROTOCOL §2 lists them, the first fault found is the error.
    public static func record(from fields: RecordFields) throws(RecordError) -> SensorRecord {
        let kind = try recordKind(fields.kind)
        let app = try identifier(fields.app, "app")
        let user = try identifier(fields.user, "user")
        var seq: UInt64?
        if let value = try optionalNumber(fields.seq, "seq") {
            guard value >= 0, value == value.rounded(), value <= 9_007_199_254_740_992 else {
                throw RecordError(field: "seq", reason: "must be an integer ≥ 0, got \(value)")
            }
            seq = UInt64(value)
        }
        let t = try number(fields.t, "t")
        // Checked as `json()` writes it, to the millisecond: 4102444799.9996 would be written as 4102444800.000, a time
        // this decoder refuses (found by Fuzz/Targets/record_json.swift).
        guard t >= earliestTime, (t * 1000).rounded() < latestTime * 1000 else {
            throw RecordError(field: "t", reason: "\(t) is not a time between 2000 and 2100 in seconds since 1970")
        }
        let payload: SensorRecord.Payload
        switch kind {
        case .location: payload = .location(try location(fields))
        case .activity: payload = .activity(try activity(fields))
        case .steps:
            let steps = try number(fields.steps, "steps")
            guard steps >= 0, steps == steps.rounded(), steps < 1e12 else {
                throw RecordError(field: "steps", reason: "must be an integer ≥ 0, got \(steps)")
            }
            payload = .steps(Int(steps))
        case .impact: payload = .impact(try impact(fields))
        case .capabilities:
            payload = .capabilities(
                DeviceCapabilities(
                    activityAvailable: try bool(fields.activityAvailable, "activityAvailable"),
                    pedometerAvailable: try bool(fields.pedometerAvailable, "pedometerAvailable")))
        }
        return SensorRecord(device: DeviceID(app: app, user: user), seq: seq, t: t, payload: payload)
    }

    private static func recordKind(_ member: RecordFields.Member) throws(RecordError) -> RecordKind {
        let name = try string(member, "kind")
        // A switch over small literal strings compares their bits; `RecordKind(rawValue:)` searches a table.
        switch name {
        case "location": return .location
        case "activity": return .activity
        case "steps": return .steps
        case "impact": return .impact
        case "capabilities": return .capabilities
        default:
            throw RecordError(
                field: "kind",
                reason: "unknown kind \"\(name)\"; expected one of "
                    + RecordKind.allCases.map(\.rawValue).joined(separator: ", "))
        }
    }

    private static func location(_ fields: RecordFields) throws(RecordError) -> LocationFix {
        let lat = try number(fields.lat, "lat")
        guard (-90...90).contains(lat) else { throw RecordError(field: "lat", reason: "\(lat) is outside -90…90") }
        let lon = try number(fields.lon, "lon")
        guard (-180...180).contains(lon) else { throw RecordError(field: "lon", reason: "\(lon) is outside -180…180") }
        // Negative speed and course mean "unknown" (as in Core Location); negative accuracy marks an invalid fix.
        let speed = try optionalNumber(fields.speed, "speed").flatMap { $0 < 0 ? nil : $0 }
        let course = try optionalNumber(fields.course, "course").flatMap { $0 < 0 ? nil : $0 }
        if let course, course > 360 {
            throw RecordError(field: "course", reason: "\(course) is outside 0…360 (negative means unknown)")
        }
        let hacc = try optionalNumber(fields.hacc, "hacc")
        return LocationFix(latitude: lat, longitude: lon, speed: speed, course: course, horizontalAccuracy: hacc)
    }

    private static func activity(_ fields: RecordFields) throws(RecordError) -> ActivityObservation {
        let name = try string(fields.activity, "activity")
        let activity: ActivityType
        switch name {
        case "automotive": activity = .automotive
        case "walking": activity = .walking
        case "running": activity = .running
        case "cycling": activity = .cycling
        case "stationary": activity = .stationary
        case "unknown": activity = .unknown
        default:
            guard let other = ActivityType(rawValue: name) else {
                throw RecordError(
                    field: "activity",
                    reason: "unknown activity \"\(name)\"; expected one of "
                        + ActivityType.allCases.map(\.rawValue).joined(separator: ", "))
            }
            activity = other
        }
        let confidenceName = try string(fields.confidence, "confidence")
        let confidence: ActivityConfidence
        switch confidenceName {
        case "high": confidence = .high
        case "medium": confidence = .medium
        case "low": confidence = .low
        default:
            guard let other = ActivityConfidence(rawValue: confidenceName) else {
                throw RecordError(
                    field: "confidence",
                    reason: "unknown confidence \"\(confidenceName)\"; expected low, medium or high")
            }
            confidence = other
        }
        return ActivityObservation(activity, confidence)
    }

    private static func impact(_ fields: RecordFields) throws(RecordError) -> ImpactObservation {
        let peak = try number(fields.peakG, "peakG")
        // Below 1000 also at the 4 decimals `json()` writes (999.99996 would be written as 1000).
        guard peak >= 0, (peak * 10_000).rounded() < 10_000_000 else {
            throw RecordError(field: "peakG", reason: "\(peak) is outside 0…1000 g")
        }
        let duration = try optionalNumber(fields.durationMs, "durationMs")
        if let duration, duration < 0 || duration > 60_000 {
            throw RecordError(field: "durationMs", reason: "\(duration) is outside 0…60000 ms")
        }
        switch fields.samples {
        case .absent: return ImpactObservation(peakG: peak, durationMs: duration, samples: [])
        case .rows(let samples): return ImpactObservation(peakG: peak, durationMs: duration, samples: samples)
        case .invalid(let error): throw error
        }
    }

    // MARK: Members by type, with errors that name the member

    private static func string(_ member: RecordFields.Member, _ name: String) throws(RecordError) -> String {
        switch member {
        case .string(let text): return text
        case .missing: throw RecordError(field: name, reason: "missing")
        default: throw RecordError(field: name, reason: "expected a string, found \(member.typeName)")
        }
    }

    private static func identifier(_ member: RecordFields.Member, _ name: String) throws(RecordError) -> String {
        let text = try string(member, name)
        guard !text.isEmpty else { throw RecordError(field: name, reason: "must not be empty") }
        guard text.utf8.count <= DeviceID.maximumLength else {
            throw RecordError(field: name, reason: "longer than \(DeviceID.maximumLength) bytes")
        }
        return text
    }

    private static func number(_ member: RecordFields.Member, _ name: String) throws(RecordError) -> Double {
        guard let value = try optionalNumber(member, name) else { throw RecordError(field: name, reason: "missing") }
        return value
    }

    private static func optionalNumber(_ member: RecordFields.Member, _ name: String) throws(RecordError) -> Double? {
        switch member {
        case .number(let number): return number
        case .missing, .null: return nil
        default: throw RecordError(field: name, reason: "expected a number, found \(member.typeName)")
        }
    }

    private static func bool(_ member: RecordFields.Member, _ name: String) throws(RecordError) -> Bool {
        switch member {
        case .bool(let flag): return flag
        case .missing: throw RecordError(field: name, reason: "missing")
        default: throw RecordError(field: name, reason: "expected true or false, found \(member.typeName)")
        }
    }
}
