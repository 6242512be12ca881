import RecordCodecs
import RoadSaveModel

/// Text into HTML and SVG: everything that comes from the input (device IDs, trip and crash IDs, reasons) goes
/// through `escape`, in element text and in attribute values alike.
public enum Markup {
    /// `&`, `<`, `>`, `"` and `'` as character references; control characters other than tab, line feed and
    /// carriage return (not allowed in HTML) as U+FFFD.
    public static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            case "\t", "\n", "\r": escaped.unicodeScalars.append(scalar)
            case _ where scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value):
                escaped += "\u{FFFD}"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    /// A coordinate in pixels, to a tenth: enough for any screen, and short.
    public static func number(_ value: Double) -> String { JSONObjectWriter.number(value, decimals: 1) }

    /// `x,y x,y …` for a `points` attribute.
    public static func points(_ points: [(x: Double, y: Double)]) -> String {
        points.map { number($0.x) + "," + number($0.y) }.joined(separator: " ")
    }

    /// A time of day in UTC, `HH:MM` (or `HH:MM:SS` when `seconds`).
    public static func clock(_ t: Double, seconds: Bool = false) -> String {
        let iso = ISO8601.string(fromSeconds: t)
        // 2026-03-02T06:31:05.123Z
        let time = iso.dropFirst(11)
        return String(time.prefix(seconds ? 8 : 5))
    }

    /// `2026-03-02 06:31:05` (UTC).
    public static func dateTime(_ t: Double) -> String {
        let iso = ISO8601.string(fromSeconds: t)
        return String(iso.prefix(10)) + " " + String(iso.dropFirst(11).prefix(8))
    }

    /// A duration as `1 h 05 min`, `12 min 30 s` or `45 s`.
    public static func duration(_ seconds: Double) -> String {
        let total = Int(max(0, seconds).rounded())
        let hours = total / 3600
        let minutes = total / 60 % 60
        let rest = total % 60
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        if hours > 0 { return "\(hours) h \(two(minutes)) min" }
        if minutes > 0 { return "\(minutes) min \(two(rest)) s" }
        return "\(rest) s"
    }
}
