/// What is wrong with bytes on the wire: a code to branch on, a sentence for people, and where it was found.
///
/// `offset` is the 0-based byte offset of the offending value in the decoded buffer (a MessagePack body or a JSON
/// text) when it is known; `path` names the value inside the document (`[3].lat`, `rejected[0].index`), empty for the
/// document itself.
public struct WireError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable, CaseIterable {
        // MessagePack and JSON documents.
        /// The input ends inside a value.
        case truncated
        /// A complete value is followed by more bytes.
        case trailingBytes
        /// Not MessagePack (or JSON) at all: a reserved byte, a syntax error.
        case malformed
        /// `bin`, `ext` (and timestamps, which are `ext`): types with no JSON equivalent.
        case unsupportedType
        /// A map key that is not a string.
        case nonStringKey
        case invalidUTF8
        /// NaN or an infinity: JSON has no such number and no record field accepts one.
        case nonFinite
        /// Containers nested deeper than `MessagePack.maximumDepth`.
        case tooDeep
        /// Larger than a limit (`MessagePack.Limits`, `RecordBatch.maximumRecords`).
        case tooLarge
        /// The document is valid but not of the expected shape (a batch that is not an array, an ack field of the
        /// wrong type).
        case unexpectedShape
        /// A content type that is neither `application/json` nor `application/msgpack`.
        case unsupportedContentType
        // Feed messages and event bodies.
        /// A multipart message that is not the frames expected: too few or too many, or not led by the `fetch` or
        /// `feed` frame (`FeedRequest`, `FeedReplyHeader`).
        case frameCount
        /// An event body that lacks a field or holds a wrong value (`path` is the field).
        case invalidEvent
    }

    public var code: Code
    public var reason: String
    public var offset: Int?
    public var path: String

    public init(_ code: Code, _ reason: String, offset: Int? = nil, path: String = "") {
        self.code = code
        self.reason = reason
        self.offset = offset
        self.path = path
    }

    public var description: String {
        var text = reason
        if let offset { text += " at byte \(offset)" }
        if !path.isEmpty { text += " (in \(path))" }
        return text
    }

    /// The same error one level further out: `member` is prepended to the path (`"lat"` then `"[3]"` → `[3].lat`).
    func inside(_ member: String) -> WireError {
        var copy = self
        if path.isEmpty {
            copy.path = member
        } else if path.hasPrefix("[") {
            copy.path = member + path
        } else {
            copy.path = member + "." + path
        }
        return copy
    }
}
