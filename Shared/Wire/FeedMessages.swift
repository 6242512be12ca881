import RecordCodecs
import RoadSaveModel

/// The pull protocol between the services (ingest's journal → detection, detection's outbox → notifier): a consumer
/// asks for the items after a position, and the server answers with at most what was asked. Nothing is pushed, so a
/// slow consumer falls behind on the server's disk, never in anybody's memory, and nothing can be dropped between
/// them. Requests are idempotent: a lost request or reply is simply asked again.
///
/// Frames: request `["fetch", FeedRequest]`, reply `["feed", FeedReplyHeader, item, item, …]`; both maps are
/// MessagePack with the keys below. Positions count from 1; 0 means "before the first item".
/// A reply header's keys: `id`, `feed`, `after`, `to`, `head`, and when they apply `error`, `watched`, `deletedThrough`.
public struct FeedRequest: Sendable, Equatable {
    public static let frame: [UInt8] = Array("fetch".utf8)

    /// Echoed in the reply, so the consumer can tell the answer to this request from a late one.
    public var id: UInt64
    /// The feed the consumer believes it is reading (nil on first contact). A server whose feed has another ID
    /// answers with no items and its ID, so the consumer can look up its position in that feed.
    public var feed: String?
    /// Items after this position are wanted.
    public var after: UInt64
    /// The last position wanted (a consumer re-reading an exact range after a restart); nil for "as many as allowed".
    public var through: UInt64?
    /// Most items, and about the most bytes, in one reply.
    public var maxItems: Int
    public var maxBytes: Int
    /// The consumer's durable position: everything up to here is safe on the consumer's side (checkpointed or
    /// stored), so the server may let it go.
    public var acknowledged: UInt64
    /// Who asks, for logs and for keeping what each consumer still needs (`detection shard 0/2`).
    public var consumer: String
    /// Only the items of shard `shard` of `shards` (ingest's journal; nil: every shard).
    public var shard: Int?
    public var shards: Int?
    /// How long the server may hold the request when it has nothing new, in milliseconds (0: answer at once).
    public var waitMilliseconds: Int
    /// Devices whose last position the consumer wants to know (`FeedReplyHeader.watched`): detection, behind on
    /// its journal, asks which devices with a decision due have all their records read already, so their deadlines
    /// need not wait for the rest of the backlog.
    public var watch: [DeviceID]
    /// Most devices in `watch`.
    public static let maximumWatched = 1024

    public init(
        id: UInt64, feed: String?, after: UInt64, through: UInt64? = nil, maxItems: Int = 256,
        maxBytes: Int = 4 << 20, acknowledged: UInt64, consumer: String, shard: Int? = nil, shards: Int? = nil,
        waitMilliseconds: Int = 1000, watch: [DeviceID] = []
    ) {
        self.id = id
        self.feed = feed
        self.after = after
        self.through = through
        self.maxItems = maxItems
        self.maxBytes = maxBytes
        self.acknowledged = acknowledged
        self.consumer = consumer
        self.shard = shard
        self.shards = shards
        self.waitMilliseconds = waitMilliseconds
        self.watch = watch
    }

    public func frames() -> [[UInt8]] {
        var members: [(String, JSONValue)] = [
            ("id", .number(Double(id))), ("after", .number(Double(after))), ("max", .number(Double(maxItems))),
            ("maxBytes", .number(Double(maxBytes))), ("ack", .number(Double(acknowledged))),
            ("consumer", .string(consumer)), ("wait", .number(Double(waitMilliseconds))),
        ]
        if let feed { members.append(("feed", .string(feed))) }
        if let through { members.append(("through", .number(Double(through)))) }
        if let shard, let shards {
            members.append(("shard", .number(Double(shard))))
            members.append(("shards", .number(Double(shards))))
        }
        if !watch.isEmpty {
            members.append(("watch", .array(watch.map { .array([.string($0.app), .string($0.user)]) })))
        }
        return [Self.frame, MessagePack.encode(.object(members))]
    }

    /// Reads the frames after the routing prefix. Errors name the field.
    public init(frames: [[UInt8]]) throws(WireError) {
        guard frames.count == 2, frames[0] == Self.frame else {
            throw WireError(
                .frameCount, "a feed request is the frames [\"fetch\", request]; got \(frames.count) frames")
        }
        let map = try FeedFields(frames[1], what: "feed request")
        id = try map.position("id")
        feed = try map.optionalString("feed")
        after = try map.position("after")
        through = try map.optionalPosition("through")
        maxItems = try map.count("max", range: 1...1_000_000)
        maxBytes = try map.optionalCount("maxBytes", range: 1...(64 << 20)) ?? (4 << 20)
        acknowledged = try map.optionalPosition("ack") ?? 0
        consumer = try map.optionalString("consumer") ?? "?"
        waitMilliseconds = try map.optionalCount("wait", range: 0...60_000) ?? 0
        shards = try map.optionalCount("shards", range: 1...65_536)
        shard = try map.optionalCount("shard", range: 0...65_535)
        if (shard == nil) != (shards == nil) {
            throw WireError(.unexpectedShape, "shard and shards go together", path: shard == nil ? "shard" : "shards")
        }
        if let shard, let shards, shard >= shards {
            throw WireError(.unexpectedShape, "shard \(shard) is not below shards \(shards)", path: "shard")
        }
        watch = try map.devices("watch", maximum: Self.maximumWatched)
    }
}

/// The second frame of a feed reply.
public struct FeedReplyHeader: Sendable, Equatable {
    public static let frame: [UInt8] = Array("feed".utf8)

    /// The request answered.
    public var id: UInt64
    /// The feed's identity: a new store is a new feed, whose positions start again.
    public var feed: String
    /// The request's `after`.
    public var after: UInt64
    /// The consumer's next `after`: the position of the last item in this reply (`after` when there is none), or a
    /// later position when the read covered everything up to it (a journal's reply not cut short reaches the head).
    public var to: UInt64
    /// The newest position in the feed (of any shard), for the consumer's lag.
    public var head: UInt64
    /// Set when the request could not be served (another feed, a shard count that does not match, a position
    /// ahead of the feed); the reply then holds no items.
    public var error: String?
    /// For each device of the request's `watch`, in order: the position of the last item holding its records (0
    /// for none), or a position at least that late when the server cannot tell exactly. A device whose position
    /// is at most `to` has all its records so far in what the consumer has read with this reply.
    public var watched: [UInt64]
    /// Set when the server's retention has deleted items the request asked for: the highest position deleted of the
    /// requested shard (of any shard when the request names none), when it is above the request's `after`. Items
    /// after `after` that the consumer never read are gone, and it should say so; absent otherwise (key
    /// `deletedThrough`).
    public var deletedThrough: UInt64?

    public init(
        id: UInt64, feed: String, after: UInt64, to: UInt64, head: UInt64, error: String? = nil,
        watched: [UInt64] = [], deletedThrough: UInt64? = nil
    ) {
        self.id = id
        self.feed = feed
        self.after = after
        self.to = to
        self.head = head
        self.error = error
        self.watched = watched
        self.deletedThrough = deletedThrough
    }

    /// The reply's frames: this header, then one frame per item.
    public func frames(items: [[UInt8]]) -> [[UInt8]] {
        var members: [(String, JSONValue)] = [
            ("id", .number(Double(id))), ("feed", .string(feed)), ("after", .number(Double(after))),
            ("to", .number(Double(to))), ("head", .number(Double(head))),
        ]
        if let error { members.append(("error", .string(error))) }
        if !watched.isEmpty { members.append(("watched", .array(watched.map { .number(Double($0)) }))) }
        if let deletedThrough { members.append(("deletedThrough", .number(Double(deletedThrough)))) }
        return [Self.frame, MessagePack.encode(.object(members))] + items
    }

    /// Reads a reply (after the routing prefix): the header and the items.
    public static func parse(_ frames: [[UInt8]]) throws(WireError) -> (
        header: FeedReplyHeader, items: ArraySlice<[UInt8]>
    ) {
        guard frames.count >= 2, frames[0] == frame else {
            throw WireError(
                .frameCount, "a feed reply is the frames [\"feed\", header, items…]; got \(frames.count) frames")
        }
        let map = try FeedFields(frames[1], what: "feed reply")
        let header = FeedReplyHeader(
            id: try map.position("id"), feed: try map.string("feed"), after: try map.position("after"),
            to: try map.position("to"), head: try map.position("head"),
            error: try map.optionalString("error"),
            watched: try map.positions("watched", maximum: FeedRequest.maximumWatched),
            deletedThrough: try map.optionalPosition("deletedThrough"))
        return (header, frames[2...])
    }
}

/// Field access with errors that name the field, for the two maps above.
private struct FeedFields {
    let value: JSONValue
    let what: String

    init(_ bytes: [UInt8], what: String) throws(WireError) {
        value = try MessagePack.decode(bytes)
        self.what = what
        guard case .object = value else { throw WireError(.unexpectedShape, "a \(what) must be a map") }
    }

    func string(_ key: String) throws(WireError) -> String {
        guard let text = try optionalString(key) else { throw WireError(.unexpectedShape, "missing \(key)", path: key) }
        return text
    }

    func optionalString(_ key: String) throws(WireError) -> String? {
        guard let member = value[key], member != .null else { return nil }
        guard case .string(let text) = member else {
            throw WireError(.unexpectedShape, "\(key) must be a string, found \(member.typeName)", path: key)
        }
        return text
    }

    func position(_ key: String) throws(WireError) -> UInt64 {
        guard let number = try optionalPosition(key) else {
            throw WireError(.unexpectedShape, "missing \(key)", path: key)
        }
        return number
    }

    func optionalPosition(_ key: String) throws(WireError) -> UInt64? {
        guard let member = value[key], member != .null else { return nil }
        guard case .number(let number) = member, number >= 0, number <= 9.007199254740992e15, number == number.rounded()
        else {
            throw WireError(.unexpectedShape, "\(key) must be a whole number ≥ 0, found \(member)", path: key)
        }
        return UInt64(number)
    }

    /// An optional array of at most `maximum` positions (empty when absent).
    func positions(_ key: String, maximum: Int) throws(WireError) -> [UInt64] {
        try array(key, maximum: maximum).enumerated().map { (index, member) throws(WireError) in
            guard case .number(let number) = member, number >= 0, number <= 9.007199254740992e15,
                number == number.rounded()
            else {
                throw WireError(
                    .unexpectedShape, "\(key)[\(index)] must be a whole number ≥ 0, found \(member)",
                    path: "\(key)[\(index)]")
            }
            return UInt64(number)
        }
    }

    /// An optional array of at most `maximum` devices, each `[app, user]` (empty when absent).
    func devices(_ key: String, maximum: Int) throws(WireError) -> [DeviceID] {
        try array(key, maximum: maximum).enumerated().map { (index, member) throws(WireError) in
            guard case .array(let pair) = member, pair.count == 2, case .string(let app) = pair[0],
                case .string(let user) = pair[1], !app.isEmpty, !user.isEmpty,
                app.utf8.count <= DeviceID.maximumLength, user.utf8.count <= DeviceID.maximumLength
            else {
                throw WireError(
                    .unexpectedShape,
                    "\(key)[\(index)] must be [app, user], two non-empty strings of at most "
                        + "\(DeviceID.maximumLength) bytes", path: "\(key)[\(index)]")
            }
            return DeviceID(app: app, user: user)
        }
    }

    private func array(_ key: String, maximum: Int) throws(WireError) -> [JSONValue] {
        guard let member = value[key], member != .null else { return [] }
        guard case .array(let elements) = member else {
            throw WireError(.unexpectedShape, "\(key) must be an array, found \(member.typeName)", path: key)
        }
        guard elements.count <= maximum else {
            throw WireError(.unexpectedShape, "\(key) holds \(elements.count) entries, at most \(maximum)", path: key)
        }
        return elements
    }

    func count(_ key: String, range: ClosedRange<Int>) throws(WireError) -> Int {
        guard let number = try optionalCount(key, range: range) else {
            throw WireError(.unexpectedShape, "missing \(key)", path: key)
        }
        return number
    }

    func optionalCount(_ key: String, range: ClosedRange<Int>) throws(WireError) -> Int? {
        guard let number = try optionalPosition(key) else { return nil }
        guard number <= UInt64(range.upperBound), Int(number) >= range.lowerBound else {
            throw WireError(
                .unexpectedShape, "\(key) must be from \(range.lowerBound) to \(range.upperBound), found \(number)",
                path: key)
        }
        return Int(number)
    }
}
