import RecordCodecs

/// A catch-up request: a subscriber that was away asks the notifier for the events it missed.
///
/// The notifier's catch-up endpoint (`--catch-up-endpoint`, a ROUTER; default `tcp://*:5555`) takes one JSON frame
/// from a REQ or DEALER client (a DEALER may send the empty delimiter frame first, or not; the reply mirrors it):
///
///     request = { "after": POSITION }            events after this position (0: from the oldest kept)
///             | { "afterEventID": "EVENT-ID" }   events after this event
///       with optional members
///         "max": N          most events in the reply, 1…10000 (default 1000)
///         "prefix": "TEXT"  only events whose topic starts with it, as a SUB subscription would match
///                           (topics are <event>.<app>.<user>, e.g. "crashDetected.app-1.")
///         "waitMs": N       long-poll, 0…30000: when nothing after the position is for this key (and prefix), the
///                           request is held until such an event is stored (answered at once then) or N ms have
///                           passed (answered with no events, as without waitMs). At most 1000 requests are held
///                           at once; past that the request is refused with an error naming waitMs
///
///     reply   = { "events": [ { "position": P, "topic": "…", "event": { …the event's JSON… } }, … ],
///                 "head": H,  the newest position in the notifier's stream
///                 "next": N } the "after" of the next request: the last position examined (H when the reply
///                             reached the head; with a prefix, events skipped by it are examined too)
///             | { "error": "…" }  naming the field: bad JSON or member, a position ahead of the head, an unknown
///                                 eventID, or a position other than 0 older than the retention window (its
///                                 events are gone)
///
/// A client follows live by catch-up alone (what `roadsave tail --via-catch-up` does, and what a subscriber key limited
/// to applications must do on libzmq before 4.3.5, whose live socket refuses it): ask with waitMs from `next`, again
/// and again.
///
/// Positions are those of the third frame on the PUB socket. A subscriber resumes without gaps by subscribing first,
/// then asking from its last position until `next` reaches `head`, dropping positions it has seen (what
/// `roadsave tail --since` does). Events are in the PUB socket's format (`--publish-format`).
public struct CatchUpRequest: Sendable, Equatable {
    public enum Start: Sendable, Equatable {
        case position(UInt64)
        case eventID(String)
    }

    public static let defaultMax = 1000
    public static let maximumMax = 10_000
    /// The longest long-poll, in milliseconds.
    public static let maximumWait = 30_000

    public var start: Start
    public var max: Int
    public var prefix: String?
    /// Milliseconds to hold the request when it finds nothing (`waitMs`); nil or 0: answered at once.
    public var waitMilliseconds: Int?

    public init(start: Start, max: Int = CatchUpRequest.defaultMax, prefix: String? = nil, waitMilliseconds: Int? = nil)
    {
        self.start = start
        self.max = max
        self.prefix = prefix
        self.waitMilliseconds = waitMilliseconds
    }

    /// A request's problem, in words that name the member; sent back as `{"error": …}`.
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public var message: String
        /// The request asked for events already deleted (older than the retention window): a gap it cannot fill.
        public var isGap = false
        public init(_ message: String, isGap: Bool = false) {
            self.message = message
            self.isGap = isGap
        }
        public var description: String { message }
    }

    /// Reads one request frame.
    public init(json bytes: [UInt8]) throws(Problem) {
        let value: JSONValue
        do {
            value = try JSONText.decode(bytes)
        } catch {
            throw Problem("a catch-up request is one JSON object: \(error.reason)")
        }
        guard case .object(let members) = value else {
            throw Problem("a catch-up request is a JSON object, found \(value.typeName)")
        }
        let known = ["after", "afterEventID", "max", "prefix", "waitMs"]
        if let unknown = members.first(where: { !known.contains($0.0) }) {
            throw Problem(
                "\(unknown.0): unknown member; expected after or afterEventID, and optionally max, prefix and waitMs")
        }
        switch (value["after"], value["afterEventID"]) {
        case (nil, nil):
            throw Problem("after: missing; give after (a position) or afterEventID")
        case (.some, .some):
            throw Problem("after and afterEventID: give one of them, not both")
        case (.some(let after), nil):
            start = .position(try Self.whole(after, "after", range: 0...9_007_199_254_740_992))
        case (nil, .some(let eventID)):
            guard case .string(let text) = eventID, !text.isEmpty else {
                throw Problem("afterEventID must be a non-empty string, found \(eventID.typeName)")
            }
            start = .eventID(text)
        }
        if let max = value["max"] {
            self.max = Int(try Self.whole(max, "max", range: 1...Double(Self.maximumMax)))
        } else {
            self.max = Self.defaultMax
        }
        if let prefix = value["prefix"] {
            guard case .string(let text) = prefix else {
                throw Problem("prefix must be a string, found \(prefix.typeName)")
            }
            self.prefix = text.isEmpty ? nil : text
        } else {
            prefix = nil
        }
        if let wait = value["waitMs"] {
            waitMilliseconds = Int(try Self.whole(wait, "waitMs", range: 0...Double(Self.maximumWait)))
        } else {
            waitMilliseconds = nil
        }
    }

    private static func whole(_ value: JSONValue, _ name: String, range: ClosedRange<Double>) throws(Problem) -> UInt64
    {
        guard case .number(let number) = value, number == number.rounded(), range.contains(number) else {
            throw Problem(
                "\(name) must be a whole number from \(JSONText.number(range.lowerBound)) to "
                    + "\(JSONText.number(range.upperBound)), found \(JSONText.encode(value))")
        }
        return UInt64(number)
    }

    /// The request as one JSON frame.
    public func json() -> [UInt8] {
        var members: [(String, JSONValue)] = []
        switch start {
        case .position(let position): members.append(("after", .number(Double(position))))
        case .eventID(let eventID): members.append(("afterEventID", .string(eventID)))
        }
        members.append(("max", .number(Double(max))))
        if let prefix { members.append(("prefix", .string(prefix))) }
        if let waitMilliseconds { members.append(("waitMs", .number(Double(waitMilliseconds)))) }
        return JSONText.bytes(.object(members))
    }
}
