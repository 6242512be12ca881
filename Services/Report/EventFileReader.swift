import RecordCodecs
import RoadSaveModel

/// Reads a file of events as NDJSON: what `roadsave replay` prints, what the notifier's NDJSON sink writes, or what
/// `roadsave tail` prints (with `--show-position` too: `{"position":P,"event":{…}}`). The events must be in the
/// current format (`--format current`, the default): the legacy one has no trip ID on `tripDidStart` and no end
/// reason. Each event is read by `EventJSONReader` (RecordCodecs); an error names the line and the field.
public enum EventFileReader {
    static let legacy = "events in the legacy format cannot be reported: write them with --format current"

    public static func read(path: String) throws(ReportInputError) -> [RoadSaveEvent] {
        var reader: NDJSONLineReader
        do {
            reader = try NDJSONLineReader(path: path)
        } catch {
            throw ReportInputError(path: path, reason: "cannot be read: \(error.reason)")
        }
        var events: [RoadSaveEvent] = []
        var failure: ReportInputError?
        reader.forEachLineUntil(
            { line, number in
                do throws(ReportInputError) {
                    events.append(try event(fromJSON: line, path: path, line: number))
                    return true
                } catch {
                    failure = error
                    return false
                }
            }, ended: { _ in })
        if let failure { throw failure }
        return events
    }

    /// One line's event.
    public static func event(fromJSON line: some Collection<UInt8>, path: String, line number: Int)
        throws(ReportInputError) -> RoadSaveEvent
    {
        func fail(_ field: String?, _ reason: String) -> ReportInputError {
            ReportInputError(path: path, number: number, field: field, reason: reason)
        }
        var value: JSONValue
        do {
            value = try JSONParser.parse(line)
        } catch {
            throw fail(nil, "not JSON (\(error))")
        }
        guard case .object = value else { throw fail(nil, "an event must be a JSON object, found \(value.typeName)") }
        // `roadsave tail --show-position` wraps each event.
        if value["event"].map({ if case .object = $0 { true } else { false } }) == true, value["position"] != nil {
            value = value["event"]!
        }
        do {
            return try EventJSONReader.event(from: value, legacy: Self.legacy)
        } catch {
            throw fail(error.field, error.reason)
        }
    }
}
