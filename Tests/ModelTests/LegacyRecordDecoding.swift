// The record decoder as it was before issue 9 (JSONValue → validation), kept frozen as the reference that the
// shared validator (RecordDecoding over RecordFields) and the fast scanners are compared with.
import RecordCodecs
import RoadSaveModel

/// Validation of sensor records against PROTOCOL §2. The same rules serve JSON and (later) MessagePack, since
/// both decode to a `JSONValue` tree first; errors name the field and say why, for error lines and acks.
enum LegacyRecordDecoding {
    /// Observation times accepted: after 2000-01-01 and before 2100-01-01. Anything else is a broken clock.
    static let earliestTime = 946_684_800.0
    static let latestTime = 4_102_444_800.0
    /// Largest sample window accepted in one impact record (10 s at 1 kHz).
    static let maximumSamples = 10_000

    /// Decodes one JSON text (one NDJSON line) into a record.
    static func record(fromJSON bytes: some Collection<UInt8>) throws(RecordError) -> SensorRecord {
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            throw RecordError(field: "(json)", reason: "not valid JSON at \(error)")
        }
        return try record(from: value)
    }

    static func record(from value: JSONValue) throws(RecordError) -> SensorRecord {
        guard case .object(let members) = value else {
            throw RecordError(field: "(record)", reason: "expected a JSON object, found \(value.typeName)")
        }
        var fields = LegacyFields(members: members)
        let kindName = try fields.string("kind")
        guard let kind = RecordKind(rawValue: kindName) else {
            throw RecordError(
                field: "kind",
                reason: "unknown kind \"\(kindName)\"; expected one of "
                    + RecordKind.allCases.map(\.rawValue).joined(separator: ", "))
        }
        let app = try fields.identifier("app")
        let user = try fields.identifier("user")
        let seq = try fields.optionalNumber("seq").map { (value) throws(RecordError) -> UInt64 in
            guard value >= 0, value == value.rounded(), value <= 9_007_199_254_740_992 else {
                throw RecordError(field: "seq", reason: "must be an integer ≥ 0, got \(value)")
            }
            return UInt64(value)
        }
        let t = try fields.number("t")
        // Checked as `json()` writes it, to the millisecond: 4102444799.9996 would be written as 4102444800.000, a time
        // this decoder refuses (found by Fuzz/Targets/record_json.swift).
        guard t >= earliestTime, (t * 1000).rounded() < latestTime * 1000 else {
            throw RecordError(field: "t", reason: "\(t) is not a time between 2000 and 2100 in seconds since 1970")
        }
        let payload: SensorRecord.Payload
        switch kind {
        case .location: payload = .location(try location(&fields))
        case .activity: payload = .activity(try activity(&fields))
        case .steps:
            let steps = try fields.number("steps")
            guard steps >= 0, steps == steps.rounded(), steps < 1e12 else {
                throw RecordError(field: "steps", reason: "must be an integer ≥ 0, got \(steps)")
            }
            payload = .steps(Int(steps))
        case .impact: payload = .impact(try impact(&fields))
        case .capabilities:
            payload = .capabilities(
                DeviceCapabilities(
                    activityAvailable: try fields.bool("activityAvailable"),
                    pedometerAvailable: try fields.bool("pedometerAvailable")))
        }
        return SensorRecord(device: DeviceID(app: app, user: user), seq: seq, t: t, payload: payload)
    }

    private static func location(_ fields: inout LegacyFields) throws(RecordError) -> LocationFix {
        let lat = try fields.number("lat")
        guard (-90...90).contains(lat) else { throw RecordError(field: "lat", reason: "\(lat) is outside -90…90") }
        let lon = try fields.number("lon")
        guard (-180...180).contains(lon) else { throw RecordError(field: "lon", reason: "\(lon) is outside -180…180") }
        // Negative speed and course mean "unknown" (as in Core Location); negative accuracy marks an invalid fix.
        let speed = try fields.optionalNumber("speed").flatMap { $0 < 0 ? nil : $0 }
        let course = try fields.optionalNumber("course").flatMap { $0 < 0 ? nil : $0 }
        if let course, course > 360 {
            throw RecordError(field: "course", reason: "\(course) is outside 0…360 (negative means unknown)")
        }
        let hacc = try fields.optionalNumber("hacc")
        return LocationFix(latitude: lat, longitude: lon, speed: speed, course: course, horizontalAccuracy: hacc)
    }

    private static func activity(_ fields: inout LegacyFields) throws(RecordError) -> ActivityObservation {
        let name = try fields.string("activity")
        guard let activity = ActivityType(rawValue: name) else {
            throw RecordError(
                field: "activity",
                reason: "unknown activity \"\(name)\"; expected one of "
                    + ActivityType.allCases.map(\.rawValue).joined(separator: ", "))
        }
        let confidenceName = try fields.string("confidence")
        guard let confidence = ActivityConfidence(rawValue: confidenceName) else {
            throw RecordError(
                field: "confidence", reason: "unknown confidence \"\(confidenceName)\"; expected low, medium or high")
        }
        return ActivityObservation(activity, confidence)
    }

    private static func impact(_ fields: inout LegacyFields) throws(RecordError) -> ImpactObservation {
        let peak = try fields.number("peakG")
        // Below 1000 also at the 4 decimals `json()` writes (999.99996 would be written as 1000).
        guard peak >= 0, (peak * 10_000).rounded() < 10_000_000 else {
            throw RecordError(field: "peakG", reason: "\(peak) is outside 0…1000 g")
        }
        let duration = try fields.optionalNumber("durationMs")
        if let duration, duration < 0 || duration > 60_000 {
            throw RecordError(field: "durationMs", reason: "\(duration) is outside 0…60000 ms")
        }
        var samples: [ImpactSample] = []
        if let raw = fields.value("samples"), raw != .null {
            guard case .array(let rows) = raw else {
                throw RecordError(field: "samples", reason: "expected an array of [dt, x, y, z], found \(raw.typeName)")
            }
            guard rows.count <= maximumSamples else {
                throw RecordError(
                    field: "samples", reason: "\(rows.count) samples; at most \(maximumSamples) are accepted")
            }
            samples.reserveCapacity(rows.count)
            for (index, row) in rows.enumerated() {
                guard case .array(let values) = row, values.count == 4 else {
                    throw RecordError(field: "samples[\(index)]", reason: "expected [dt, x, y, z]")
                }
                var numbers: [Double] = []
                for value in values {
                    guard case .number(let number) = value else {
                        throw RecordError(
                            field: "samples[\(index)]", reason: "expected numbers, found \(value.typeName)")
                    }
                    numbers.append(number)
                }
                samples.append(ImpactSample(dt: numbers[0], x: numbers[1], y: numbers[2], z: numbers[3]))
            }
        }
        return ImpactObservation(peakG: peak, durationMs: duration, samples: samples)
    }
}

/// Typed access to an object's members with errors that name the member.
private struct LegacyFields {
    var members: [(String, JSONValue)]

    func value(_ name: String) -> JSONValue? { members.first { $0.0 == name }?.1 }

    func string(_ name: String) throws(RecordError) -> String {
        guard let value = value(name) else { throw RecordError(field: name, reason: "missing") }
        guard case .string(let text) = value else {
            throw RecordError(field: name, reason: "expected a string, found \(value.typeName)")
        }
        return text
    }

    func identifier(_ name: String) throws(RecordError) -> String {
        let text = try string(name)
        guard !text.isEmpty else { throw RecordError(field: name, reason: "must not be empty") }
        guard text.utf8.count <= DeviceID.maximumLength else {
            throw RecordError(field: name, reason: "longer than \(DeviceID.maximumLength) bytes")
        }
        return text
    }

    func number(_ name: String) throws(RecordError) -> Double {
        guard let value = try optionalNumber(name) else { throw RecordError(field: name, reason: "missing") }
        return value
    }

    func optionalNumber(_ name: String) throws(RecordError) -> Double? {
        guard let value = value(name), value != .null else { return nil }
        guard case .number(let number) = value else {
            throw RecordError(field: name, reason: "expected a number, found \(value.typeName)")
        }
        return number
    }

    func bool(_ name: String) throws(RecordError) -> Bool {
        guard let value = value(name) else { throw RecordError(field: name, reason: "missing") }
        guard case .bool(let flag) = value else {
            throw RecordError(field: name, reason: "expected true or false, found \(value.typeName)")
        }
        return flag
    }
}
