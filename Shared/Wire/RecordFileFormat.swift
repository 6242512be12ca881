/// How a file of records is written: NDJSON (one PROTOCOL §2 JSON object a line) or MessagePack (the same records as
/// maps, concatenated: the map shape of a gateway batch's elements, PROTOCOL §7).
public enum RecordFileFormat: String, Sendable, CaseIterable {
    case ndjson
    case msgpack

    /// The format a file name implies: `.msgpack` (or `.mpk`) is MessagePack, anything else NDJSON.
    public init(path: String) {
        let lowered = path.lowercased()
        self = lowered.hasSuffix(".msgpack") || lowered.hasSuffix(".mpk") ? .msgpack : .ndjson
    }

    /// From `--input-format`/`--output-format` if given, else from the file name.
    public init(option: String?, path: String?) throws(UnknownFormat) {
        if let option {
            guard let format = RecordFileFormat(rawValue: option.lowercased()) else {
                throw UnknownFormat(text: option)
            }
            self = format
        } else {
            self.init(path: path ?? "-")
        }
    }

    public struct UnknownFormat: Error, Sendable, CustomStringConvertible {
        public var text: String
        public var description: String { "\"\(text)\" is not a record format; expected ndjson or msgpack" }
    }
}
