/// Writes a flat JSON object with members in the order they are added: event lines are byte-for-byte repeatable,
/// which replay fixtures and deduplicating receivers rely on.
public struct JSONObjectWriter {
    private var text = "{"
    private var empty = true

    public init() {}

    public mutating func add(_ key: String, _ value: String) {
        separate(key)
        JSONObjectWriter.appendQuoted(value, to: &text)
    }

    public mutating func add(_ key: String, _ value: Bool) {
        separate(key)
        text += value ? "true" : "false"
    }

    /// Numbers are rounded to `decimals` places and written in their shortest form.
    public mutating func add(_ key: String, _ value: Double, decimals: Int) {
        separate(key)
        text += JSONObjectWriter.number(value, decimals: decimals)
    }

    /// Numbers rounded to `decimals` places and written with exactly that many (trailing zeros kept), e.g. times to
    /// the millisecond as `1718708242.500`.
    public mutating func add(_ key: String, _ value: Double, fixedDecimals decimals: Int) {
        separate(key)
        text += JSONObjectWriter.fixedNumber(value, decimals: decimals)
    }

    /// An optional number: `null` when absent (a receiver must see that it is unknown, not zero).
    public mutating func add(_ key: String, _ value: Double?, decimals: Int) {
        separate(key)
        text += value.map { JSONObjectWriter.number($0, decimals: decimals) } ?? "null"
    }

    public mutating func add(_ key: String, _ value: Int) {
        separate(key)
        text += String(value)
    }

    /// A value that is already JSON.
    public mutating func add(_ key: String, raw json: String) {
        separate(key)
        text += json
    }

    public func finish() -> String { text + "}" }

    private mutating func separate(_ key: String) {
        if !empty { text += "," }
        empty = false
        JSONObjectWriter.appendQuoted(key, to: &text)
        text += ":"
    }

    public static func number(_ value: Double, decimals: Int) -> String {
        guard value.isFinite else { return "null" }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        // Values so large that scaling overflows have no fractional digits left to round.
        let scaled = value * scale
        let rounded = scaled.isFinite ? scaled.rounded() / scale : value
        if rounded == rounded.rounded(.towardZero), abs(rounded) < 1e15 {
            return String(Int64(rounded))
        }
        return String(rounded)
    }

    /// `value` rounded to `decimals` (0…15) places, written with exactly that many; the same number as
    /// `number(_:decimals:)` once parsed. Values whose scaled form exceeds 2^53 fall back to `number(_:decimals:)`.
    public static func fixedNumber(_ value: Double, decimals: Int) -> String {
        precondition((0...15).contains(decimals), "fixedNumber: decimals must be 0…15")
        guard value.isFinite else { return "null" }
        var divisor: UInt64 = 1
        for _ in 0..<decimals { divisor *= 10 }
        let scaled = (value * Double(divisor)).rounded()
        guard abs(scaled) <= 9_007_199_254_740_992 else { return number(value, decimals: decimals) }
        let units = Int64(scaled)
        var text = units < 0 ? "-" : ""
        text += String(units.magnitude / divisor)
        if decimals > 0 {
            let fraction = String(units.magnitude % divisor)
            text += "." + String(repeating: "0", count: decimals - fraction.count) + fraction
        }
        return text
    }

    public static func quoted(_ value: String) -> String {
        var text = ""
        appendQuoted(value, to: &text)
        return text
    }

    public static func appendQuoted(_ value: String, to text: inout String) {
        text += "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case _ where scalar.value < 0x20:
                let digits = String(scalar.value, radix: 16)
                text += "\\u" + String(repeating: "0", count: 4 - digits.count) + digits
            default: text.unicodeScalars.append(scalar)
            }
        }
        text += "\""
    }
}
