import RoadSaveModel

/// Sensor records as PROTOCOL §2 JSON: the inverse of `RecordDecoding`, built on `JSONObjectWriter` so lines are
/// byte-for-byte repeatable (members in a fixed order, numbers at a fixed precision).
///
/// Precision (rounded half away from zero, written in their shortest form unless said otherwise). Each is at or
/// below the resolution the sources carry, and a value already at that precision decodes to the same `Double`:
///
/// | field | decimals | resolution | why |
/// | --- | --- | --- | --- |
/// | `t` | 3, always all three (`…242.500`) | 1 ms | device clocks and every recording time-stamp in ms |
/// | `lat`, `lon` | 7 | ≈ 1 cm | finer than any GPS fix |
/// | `speed` | 2 | 1 cm/s | GPS speed is good to ~0.1 m/s |
/// | `course` | 1 | 0.1° | |
/// | `hacc` | 1 | 10 cm | |
/// | `peakG` | 4 | 0.1 mg | the same as the samples it is the peak of |
/// | `durationMs` | 1 | 0.1 ms | |
/// | samples `dt` | 4 | 0.1 ms | windows are sampled at ≤ 1 kHz |
/// | samples `x`, `y`, `z` | 4 | 0.1 mg ≈ 1 mm/s² | the finest accelerometer resolution in the data (mm/s²) |
///
/// `speed` and `course` are left out when nil (unknown); `hacc` is written as given (negative = invalid fix) and left
/// out when nil; `durationMs` is left out when nil and `samples` when empty. `seq` is written when present. A
/// non-finite number is written as `null`, which the decoder rejects (required) or reads as absent (optional): records
/// never hold one after decoding.
extension SensorRecord {
    public enum Precision {
        public static let time = 3
        public static let degrees = 7
        public static let speed = 2
        public static let course = 1
        public static let accuracy = 1
        public static let g = 4
        public static let durationMs = 1
        public static let sampleTime = 4
    }

    /// One PROTOCOL §2 JSON object (one NDJSON line, without the newline): `kind`, `app`, `user`, `seq` (if any),
    /// `t`, then the kind's fields.
    public func json() -> String {
        var writer = JSONObjectWriter()
        writer.add("kind", kind.rawValue)
        writer.add("app", device.app)
        writer.add("user", device.user)
        if let seq { writer.add("seq", raw: String(seq)) }
        writer.add("t", t, fixedDecimals: Precision.time)
        switch payload {
        case .location(let fix):
            writer.add("lat", fix.latitude, decimals: Precision.degrees)
            writer.add("lon", fix.longitude, decimals: Precision.degrees)
            if let speed = fix.speed { writer.add("speed", speed, decimals: Precision.speed) }
            if let course = fix.course { writer.add("course", course, decimals: Precision.course) }
            if let hacc = fix.horizontalAccuracy { writer.add("hacc", hacc, decimals: Precision.accuracy) }
        case .activity(let observation):
            writer.add("activity", observation.activity.rawValue)
            writer.add("confidence", observation.confidence.rawValue)
        case .steps(let steps):
            writer.add("steps", steps)
        case .impact(let impact):
            writer.add("peakG", impact.peakG, decimals: Precision.g)
            if let duration = impact.durationMs { writer.add("durationMs", duration, decimals: Precision.durationMs) }
            if !impact.samples.isEmpty { writer.add("samples", raw: Self.samplesJSON(impact.samples)) }
        case .capabilities(let capabilities):
            writer.add("activityAvailable", capabilities.activityAvailable)
            writer.add("pedometerAvailable", capabilities.pedometerAvailable)
        }
        return writer.finish()
    }

    /// `[[dt,x,y,z],…]`.
    static func samplesJSON(_ samples: [ImpactSample]) -> String {
        var text = "["
        text.reserveCapacity(samples.count * 32)
        for (index, sample) in samples.enumerated() {
            if index > 0 { text += "," }
            text += "["
            text += JSONObjectWriter.number(sample.dt, decimals: Precision.sampleTime)
            text += ","
            text += JSONObjectWriter.number(sample.x, decimals: Precision.g)
            text += ","
            text += JSONObjectWriter.number(sample.y, decimals: Precision.g)
            text += ","
            text += JSONObjectWriter.number(sample.z, decimals: Precision.g)
            text += "]"
        }
        return text + "]"
    }
}
