// Renders records as NDJSON lines (CONTRACT §2). Written by hand rather than with JSONSerialization so numbers have a
// fixed, readable precision (t to the millisecond, positions to about 1 cm) and the output is byte-for-byte stable.

import GatewayKit

public enum NDJSONWriter {
    /// One device's records in the order they are sent: the capabilities record first, then by time (stable, so
    /// records with equal times keep the order the converter produced them in). `seq` is the index in this order.
    public static func deviceOrder(_ records: [SensorRecord]) -> [SensorRecord] {
        let indexed = records.enumerated().map { (offset: $0.offset, record: $0.element) }
        return indexed.sorted { a, b in
            let aFirst = a.record.kind == "capabilities", bFirst = b.record.kind == "capabilities"
            if aFirst != bFirst { return aFirst }
            if a.record.t != b.record.t { return a.record.t < b.record.t }
            return a.offset < b.offset
        }.map(\.record)
    }

    /// Lines for one device, records already in device order; `seq` runs 0, 1, 2, …
    public static func lines(_ records: [SensorRecord], app: String, user: String) -> [String] {
        records.enumerated().map { line(for: $0.element, app: app, user: user, seq: $0.offset) }
    }

    /// Several devices in one stream, merged by time (each device keeps its own seq numbering and order).
    public static func merged(_ recordings: [ConvertedRecording]) -> [String] {
        var entries: [(t: Double, device: Int, index: Int, line: String)] = []
        for (device, recording) in recordings.enumerated() {
            for (index, record) in recording.records.enumerated() {
                entries.append((record.t, device, index, recording.lines[index]))
            }
        }
        entries.sort { a, b in
            if a.t != b.t { return a.t < b.t }
            if a.device != b.device { return a.device < b.device }
            return a.index < b.index
        }
        return entries.map(\.line)
    }

    /// One JSON object: kind, app, user, seq, t, then the kind's fields.
    public static func line(for record: SensorRecord, app: String, user: String, seq: Int?) -> String {
        var out = "{\"kind\":\"\(record.kind)\",\"app\":\(string(app)),\"user\":\(string(user))"
        if let seq { out += ",\"seq\":\(seq)" }
        out += ",\"t\":\(number(record.t, decimals: 3, trimZeros: false))"
        switch record.body {
        case let .capabilities(activityAvailable, pedometerAvailable):
            out += ",\"activityAvailable\":\(activityAvailable),\"pedometerAvailable\":\(pedometerAvailable)"
        case let .location(lat, lon, speed, course, hacc):
            out += ",\"lat\":\(number(lat, decimals: 7)),\"lon\":\(number(lon, decimals: 7))"
            out += ",\"speed\":\(number(speed, decimals: 2))"
            if let course { out += ",\"course\":\(number(course, decimals: 1))" }
            if let hacc { out += ",\"hacc\":\(number(hacc, decimals: 1))" }
        case let .activity(activity, confidence):
            out += ",\"activity\":\"\(activity.rawValue)\",\"confidence\":\"\(confidence.rawValue)\""
        case let .steps(steps):
            out += ",\"steps\":\(steps)"
        case let .impact(impact):
            out += ",\"peakG\":\(number(impact.peakG, decimals: 3)),\"durationMs\":\(number(impact.durationMs, decimals: 1))"
            out += ",\"samples\":["
            out += impact.samples.map { sample in
                "[\(number(sample.t, decimals: 4)),\(number(sample.x, decimals: 4)),"
                    + "\(number(sample.y, decimals: 4)),\(number(sample.z, decimals: 4))]"
            }.joined(separator: ",")
            out += "]"
        }
        return out + "}"
    }

    /// A JSON string literal.
    public static func string(_ value: String) -> String {
        var out = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    private static let powersOfTen: [Double] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000]

    /// A JSON number with at most `decimals` decimals (rounded half away from zero); trailing zeros are dropped
    /// unless `trimZeros` is false. Non-finite values (which the converters never produce) are written as 0.
    public static func number(_ value: Double, decimals: Int, trimZeros: Bool = true) -> String {
        precondition((0..<powersOfTen.count).contains(decimals))
        guard value.isFinite else { return "0" }
        let scaled = (value * powersOfTen[decimals]).rounded()
        guard abs(scaled) < 9e15 else { return String(value) }
        var units = Int64(scaled)
        let negative = units < 0
        units = abs(units)
        let scale = Int64(powersOfTen[decimals])
        var text = (negative ? "-" : "") + String(units / scale)
        if decimals > 0 {
            var fraction = String(units % scale)
            fraction = String(repeating: "0", count: decimals - fraction.count) + fraction
            if trimZeros {
                while fraction.last == "0" { fraction.removeLast() }
            }
            if !fraction.isEmpty { text += "." + fraction }
        }
        return text == "-0" ? "0" : text
    }
}
