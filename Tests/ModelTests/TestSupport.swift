import RecordCodecs
import RoadSaveModel
import Testing

// Helpers shared by the model tests.

/// A sensor record as JSON members whose values are raw JSON text, so that a test can change or drop one member
/// and keep the rest valid.
struct RecordJSON: Sendable, CustomTestStringConvertible {
    var members: [(String, String)]

    init(_ members: [(String, String)]) { self.members = members }

    /// The same record with `key` set to `raw` (replaced in place, or appended).
    func with(_ key: String, _ raw: String) -> RecordJSON {
        var copy = self
        if let index = copy.members.firstIndex(where: { $0.0 == key }) {
            copy.members[index].1 = raw
        } else {
            copy.members.append((key, raw))
        }
        return copy
    }

    func without(_ key: String) -> RecordJSON {
        RecordJSON(members.filter { $0.0 != key })
    }

    var text: String { "{" + members.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}" }
    var testDescription: String { text }

    // One valid record of every kind, with every field the kind has.
    static let location = RecordJSON([
        ("kind", #""location""#), ("app", #""app-1""#), ("user", #""user-9""#), ("seq", "7"),
        ("t", "1772433065.123"), ("lat", "-33.9249"), ("lon", "18.4241"), ("speed", "13.5"),
        ("course", "270.5"), ("hacc", "4.8"),
    ])
    static let activity = RecordJSON([
        ("kind", #""activity""#), ("app", #""app-1""#), ("user", #""user-9""#), ("seq", "8"),
        ("t", "1772433066.5"), ("activity", #""automotive""#), ("confidence", #""high""#),
    ])
    static let steps = RecordJSON([
        ("kind", #""steps""#), ("app", #""app-1""#), ("user", #""user-9""#), ("seq", "9"),
        ("t", "1772433067"), ("steps", "1234"),
    ])
    static let impact = RecordJSON([
        ("kind", #""impact""#), ("app", #""app-1""#), ("user", #""user-9""#), ("seq", "10"),
        ("t", "1772433068.25"), ("peakG", "6.5"), ("durationMs", "42"),
        ("samples", "[[-1.0,0.1,0.2,0.98],[0,3.0,-4.0,0.5],[2,0,0,1]]"),
    ])
    static let capabilities = RecordJSON([
        ("kind", #""capabilities""#), ("app", #""app-1""#), ("user", #""user-9""#), ("seq", "11"),
        ("t", "1772433069"), ("activityAvailable", "false"), ("pedometerAvailable", "true"),
    ])

    static func valid(_ kind: String) -> RecordJSON {
        switch kind {
        case "location": location
        case "activity": activity
        case "steps": steps
        case "impact": impact
        case "capabilities": capabilities
        default: fatalError("no fixture for \(kind)")
        }
    }
}

func decodeRecord(_ text: String) throws(RecordError) -> SensorRecord {
    try RecordDecoding.record(fromJSON: Array(text.utf8))
}

/// The error that decoding `text` gives, or nil (with a test failure) if it decodes.
func recordRejection(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> RecordError? {
    do {
        let record = try decodeRecord(text)
        Issue.record("expected a rejection, decoded \(record)", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}

/// Checks that `record` is rejected naming `field`, with a reason that contains every one of `reasonContains`.
func expectRejection(
    _ record: RecordJSON, field: String, reasonContains: [String] = [],
    sourceLocation: SourceLocation = #_sourceLocation
) {
    expectRejection(record.text, field: field, reasonContains: reasonContains, sourceLocation: sourceLocation)
}

func expectRejection(
    _ text: String, field: String, reasonContains: [String] = [],
    sourceLocation: SourceLocation = #_sourceLocation
) {
    guard let error = recordRejection(text, sourceLocation: sourceLocation) else { return }
    #expect(error.field == field, "reason: \(error.reason)", sourceLocation: sourceLocation)
    #expect(!error.reason.isEmpty, sourceLocation: sourceLocation)
    for part in reasonContains {
        #expect(
            error.reason.contains(part), "reason \"\(error.reason)\" should mention \"\(part)\"",
            sourceLocation: sourceLocation)
    }
}

/// The syntax error that parsing `bytes` gives, or nil (with a test failure) if it parses.
func syntaxError(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) -> JSONParser.SyntaxError? {
    do {
        let value = try JSONParser.parse(bytes)
        Issue.record("expected a syntax error, parsed \(value)", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}

func syntaxError(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> JSONParser.SyntaxError? {
    syntaxError(Array(text.utf8), sourceLocation: sourceLocation)
}

/// The keys of a parsed JSON object, in order.
func keys(of value: JSONValue) -> [String] {
    guard case .object(let members) = value else { return [] }
    return members.map(\.0)
}
