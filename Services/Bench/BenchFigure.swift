import Foundation

/// One figure of `make bench`, as printed and as written to `--json FILE` (a list of these objects), so runs can be
/// put in one table and compared.
struct BenchFigure {
    var figure: String
    var value: Double
    var unit: String
    var baseline: String?
    var baselineValue: Double?
    /// The target, as text; nil when the figure has none.
    var target: String?

    var json: String {
        func text(_ string: String?) -> String {
            guard let string else { return "null" }
            var escaped = ""
            for scalar in string.unicodeScalars {
                switch scalar {
                case "\"": escaped += "\\\""
                case "\\": escaped += "\\\\"
                case "\n": escaped += "\\n"
                default: escaped.unicodeScalars.append(scalar)
                }
            }
            return "\"\(escaped)\""
        }
        func number(_ value: Double?) -> String {
            guard let value, value.isFinite else { return "null" }
            return String(format: "%.1f", value)
        }
        return "{\"figure\": \(text(figure)), \"value\": \(number(value)), \"unit\": \(text(unit)), "
            + "\"baseline\": \(text(baseline)), \"baselineValue\": \(number(baselineValue)), \"target\": \(text(target))}"
    }

    static func write(_ figures: [BenchFigure], to path: String) throws {
        let body = "[\n" + figures.map { "  " + $0.json }.joined(separator: ",\n") + "\n]\n"
        try Data(body.utf8).write(to: URL(fileURLWithPath: path))
    }
}
