import RecordCodecs

/// `JSONValue` ⇄ JSON text.
///
/// Writing is deterministic: members in their order, no white space, strings escaped as `JSONObjectWriter` escapes
/// them, numbers in their shortest round-trip form (integral values up to 2^53 without a fraction, e.g. `42`; others
/// as Swift prints a `Double`, e.g. `0.1`, `1e-07`, `1e+16`, each of which parses back to the same `Double`).
/// NaN and the infinities, which JSON cannot hold, are written as `null`.
public enum JSONText {
    public static func encode(_ value: JSONValue) -> String {
        var text = ""
        append(value, to: &text)
        return text
    }

    /// The UTF-8 bytes of `encode(_:)`.
    public static func bytes(_ value: JSONValue) -> [UInt8] {
        Array(encode(value).utf8)
    }

    /// Parses one JSON text (RFC 8259) with the model's `JSONParser`; syntax errors become `WireError`s with the
    /// byte offset.
    public static func decode(_ bytes: some Collection<UInt8>) throws(WireError) -> JSONValue {
        do throws(JSONParser.SyntaxError) {
            return try JSONParser.parse(bytes)
        } catch {
            let code: WireError.Code =
                error.reason.hasPrefix("nested deeper")
                ? .tooDeep
                : error.reason.contains("end of input") || error.reason.hasPrefix("unterminated")
                    ? .truncated
                    : error.reason.contains("UTF-8")
                        ? .invalidUTF8
                        : error.reason.contains("after the JSON value")
                            ? .trailingBytes
                            : .malformed
            throw WireError(code, "not valid JSON: \(error.reason)", offset: error.column - 1)
        }
    }

    /// The shortest text that parses back to `value`.
    public static func number(_ value: Double) -> String {
        guard value.isFinite else { return "null" }
        if value == value.rounded(.towardZero), abs(value) <= 9_007_199_254_740_992 {
            return String(Int64(value))
        }
        return value.description
    }

    static func append(_ value: JSONValue, to text: inout String) {
        switch value {
        case .null: text += "null"
        case .bool(let flag): text += flag ? "true" : "false"
        case .number(let number): text += Self.number(number)
        case .string(let string): JSONObjectWriter.appendQuoted(string, to: &text)
        case .array(let elements):
            text += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { text += "," }
                append(element, to: &text)
            }
            text += "]"
        case .object(let members):
            text += "{"
            for (index, (key, member)) in members.enumerated() {
                if index > 0 { text += "," }
                JSONObjectWriter.appendQuoted(key, to: &text)
                text += ":"
                append(member, to: &text)
            }
            text += "}"
        }
    }
}
