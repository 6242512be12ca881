import RoadSaveModel

/// A record waiting in a device's ordering buffer, as a checkpoint holds it: an array, not SensorRecord's own
/// nested objects (record, device, payload, fix: five objects a record, each an allocation of the checkpoint's
/// encoder, where an array costs none). The device is written once for the whole buffer (`RecordOrdering`).
///
/// `[seq or null, t, "location", latitude, longitude, speed, course, accuracy]` (each of the last three null when
/// unknown), `[seq, t, "activity", activity, confidence]`, or `[seq, t, "payload", payload]` for the other kinds,
/// with the payload as SensorRecord writes it.
struct CheckpointedRecord: Codable, Equatable {
    var seq: UInt64?
    var t: Double
    var payload: SensorRecord.Payload

    init(_ record: SensorRecord) {
        seq = record.seq
        t = record.t
        payload = record.payload
    }

    func record(of device: DeviceID) -> SensorRecord {
        SensorRecord(device: device, seq: seq, t: t, payload: payload)
    }

    private enum Form: String, Codable {
        case location, activity, payload
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.unkeyedContainer()
        if let seq { try container.encode(seq) } else { try container.encodeNil() }
        try container.encode(t)
        switch payload {
        case .location(let fix):
            try container.encode(Form.location)
            try container.encode(fix.latitude)
            try container.encode(fix.longitude)
            // One at a time: an array of the three would be an allocation.
            try container.encodeOptional(fix.speed)
            try container.encodeOptional(fix.course)
            try container.encodeOptional(fix.horizontalAccuracy)
        case .activity(let observation):
            try container.encode(Form.activity)
            try container.encode(observation.activity)
            try container.encode(observation.confidence)
        default:
            try container.encode(Form.payload)
            try container.encode(payload)
        }
    }

    init(from decoder: any Decoder) throws {
        var container = try decoder.unkeyedContainer()
        seq = try container.decodeNil() ? nil : try container.decode(UInt64.self)
        t = try container.decode(Double.self)
        switch try container.decode(Form.self) {
        case .location:
            let latitude = try container.decode(Double.self)
            let longitude = try container.decode(Double.self)
            let speed = try container.decodeOptional()
            let course = try container.decodeOptional()
            let accuracy = try container.decodeOptional()
            payload = .location(
                LocationFix(
                    latitude: latitude, longitude: longitude, speed: speed, course: course,
                    horizontalAccuracy: accuracy))
        case .activity:
            payload = .activity(
                ActivityObservation(
                    try container.decode(ActivityType.self), try container.decode(ActivityConfidence.self)))
        case .payload:
            payload = try container.decode(SensorRecord.Payload.self)
        }
    }
}

extension UnkeyedEncodingContainer {
    /// The value, or null.
    fileprivate mutating func encodeOptional(_ value: Double?) throws {
        if let value { try encode(value) } else { try encodeNil() }
    }
}

extension UnkeyedDecodingContainer {
    /// A number, or nil for null.
    fileprivate mutating func decodeOptional() throws -> Double? {
        try decodeNil() ? nil : try decode(Double.self)
    }
}
