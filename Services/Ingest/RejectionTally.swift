import Metrics
import Wire

/// Rejected records counted by field and kind of reason, for /metrics. A reason's text names the value that was
/// wrong ("91 is outside -90…90"), so it is reduced to a few fixed kinds; the field is kept with any index taken out
/// (`samples[3]` → `samples[]`). Past `maximumSeries` pairs, new ones are counted under the field "other", so a
/// gateway sending odd fields cannot grow the scrape without bound.
struct RejectionTally {
    static let maximumSeries = 200
    private(set) var counts: [Key: Int] = [:]

    struct Key: Hashable {
        var field: String
        var reason: String
    }

    mutating func count(_ rejection: Rejection) {
        var key = Key(field: Self.field(rejection.field), reason: Self.kind(of: rejection.reason))
        if counts[key] == nil, counts.count >= Self.maximumSeries { key.field = "other" }
        counts[key, default: 0] += 1
    }

    /// `field` with every `[n]` made `[]`, and no longer than 40 characters.
    static func field(_ field: String) -> String {
        var result = ""
        var inIndex = false
        for character in field {
            switch character {
            case "[":
                inIndex = true
                result.append(character)
            case "]":
                inIndex = false
                result.append(character)
            default: if !inIndex { result.append(character) }
            }
        }
        return String(result.prefix(40))
    }

    /// The kind of a rejection's reason: missing, wrong_type, out_of_range, unknown_value, malformed,
    /// unknown_application, not_allowed (a gateway key outside its applications), device_limit or invalid.
    static func kind(of reason: String) -> String {
        let text = reason.lowercased()
        if text.hasPrefix("missing") { return "missing" }
        if text.hasPrefix("unknown application") { return "unknown_application" }
        if text.contains("is not allowed") { return "not_allowed" }
        if text.contains("devices") && (text.contains("limit") || text.contains("at most")) { return "device_limit" }
        if text.hasPrefix("expected") { return "wrong_type" }
        if text.hasPrefix("unknown") { return "unknown_value" }
        if text.contains("outside") || text.hasPrefix("must be") || text.contains("at most")
            || text.contains("longer than")
            || text.contains("is not a time") || text.contains("must not be empty")
        {
            return "out_of_range"
        }
        if text.contains("utf-8") || text.contains("control characters") || text.contains("not valid json")
            || text.contains("not messagepack") || text.contains("out of memory")
        {
            return "malformed"
        }
        return "invalid"
    }

    var family: MetricFamily {
        MetricFamily(
            name: "roadsave_ingest_records_rejected_total",
            help: "Records rejected in acknowledgements, by field and kind of reason.",
            kind: .counter,
            samples: counts.sorted { ($0.key.field, $0.key.reason) < ($1.key.field, $1.key.reason) }.map {
                MetricFamily.Sample(
                    labels: [("field", $0.key.field), ("reason", $0.key.reason)], value: Double($0.value))
            })
    }
}
