// A value of a parsed JSON recording together with the path that leads to it (`features[3].properties.time`), so the
// JSON converters can say which field of which file is wrong instead of "the data couldn't be read".

import RecordCodecs

struct JSONField {
    let value: JSONValue
    /// Where the value sits in the document; empty for the top level.
    let path: String
    /// The recording's file name, for the errors.
    let file: String

    /// Parses a whole recording. A syntax error names its line and column (the tracks are pretty-printed JSON, so a
    /// byte offset alone would be hard to find).
    static func document(_ bytes: [UInt8], file: String) throws -> JSONField {
        do throws(JSONParser.SyntaxError) {
            return JSONField(value: try JSONParser.parse(bytes), path: "", file: file)
        } catch {
            let offset = min(max(error.column - 1, 0), bytes.count)
            var line = 1
            var lineStart = 0
            for index in 0..<offset where bytes[index] == UInt8(ascii: "\n") {
                line += 1
                lineStart = index + 1
            }
            throw RecordingError.malformed(
                file: file,
                reason: "not valid JSON at line \(line), column \(offset - lineStart + 1): \(error.reason)")
        }
    }

    /// How the path reads in a message.
    var name: String { path.isEmpty ? "the top level" : "field \(path)" }

    func mismatch(_ reason: String) -> RecordingError {
        .malformed(file: file, reason: "\(name): \(reason)")
    }

    private func child(_ key: String) -> String {
        // Keys such as "GPS Speed" are quoted so the path stays readable.
        let plain = key.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" }
        let part = plain ? key : "\"\(key)\""
        return path.isEmpty ? part : "\(path).\(part)"
    }

    /// The member `key`; nil when it is absent or null (the recordings leave out what they did not measure). Asking a
    /// value that is not an object for a member is a format error.
    func member(_ key: String) throws -> JSONField? {
        guard case .object(let members) = value else { throw mismatch("expected an object, found \(value.typeName)") }
        guard let found = members.first(where: { $0.0 == key })?.1, found != .null else { return nil }
        return JSONField(value: found, path: child(key), file: file)
    }

    /// The member `key`, which must be there.
    func required(_ key: String) throws -> JSONField {
        guard let found = try member(key) else {
            throw RecordingError.malformed(file: file, reason: "field \(child(key)) is missing")
        }
        return found
    }

    func elements() throws -> [JSONField] {
        guard case .array(let items) = value else { throw mismatch("expected an array, found \(value.typeName)") }
        return items.enumerated().map { JSONField(value: $0.element, path: "\(path)[\($0.offset)]", file: file) }
    }

    func number() throws -> Double {
        guard case .number(let number) = value else { throw mismatch("expected a number, found \(value.typeName)") }
        return number
    }

    func string() throws -> String {
        guard case .string(let text) = value else { throw mismatch("expected a string, found \(value.typeName)") }
        return text
    }

    /// A member that may be absent but must be a number when present.
    func number(_ key: String) throws -> Double? { try member(key)?.number() }

    /// A member that may be absent but must be a string when present.
    func string(_ key: String) throws -> String? { try member(key)?.string() }
}
