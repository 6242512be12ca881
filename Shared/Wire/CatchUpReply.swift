import RecordCodecs

/// A catch-up reply as a client reads it (the grammar is on `CatchUpRequest`).
public struct CatchUpReply: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        public var position: UInt64
        public var topic: String
        public var event: JSONValue
    }

    public var events: [Entry]
    public var head: UInt64
    public var next: UInt64

    /// Reads a reply frame; an `{"error": …}` reply, or one that is not of this shape, throws with its words.
    public init(json bytes: [UInt8]) throws(CatchUpRequest.Problem) {
        let value: JSONValue
        do {
            value = try JSONText.decode(bytes)
        } catch {
            throw CatchUpRequest.Problem("the catch-up reply is not JSON: \(error.reason)")
        }
        if case .string(let message)? = value["error"] { throw CatchUpRequest.Problem(message) }
        guard case .array(let items)? = value["events"], let head = Self.whole(value["head"]),
            let next = Self.whole(value["next"])
        else {
            throw CatchUpRequest.Problem("the catch-up reply lacks events, head or next")
        }
        self.head = head
        self.next = next
        events = []
        for item in items {
            guard let position = Self.whole(item["position"]), case .string(let topic)? = item["topic"],
                let event = item["event"]
            else {
                throw CatchUpRequest.Problem("a catch-up reply entry lacks position, topic or event")
            }
            events.append(Entry(position: position, topic: topic, event: event))
        }
    }

    private static func whole(_ value: JSONValue?) -> UInt64? {
        guard case .number(let number)? = value, number >= 0, number == number.rounded() else { return nil }
        return UInt64(number)
    }
}
