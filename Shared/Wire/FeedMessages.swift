import RecordCodecs
import RoadSaveModel

/// The pull protocol between the services (ingest's journal → detection, detection's outbox → notifier): a consumer
/// asks for the items after a position, and the server answers with at most what was asked. Nothing is pushed, so a
/// slow consumer falls behind on the server's disk, never in anybody's memory, and nothing can be dropped between
/// them. Requests are idempotent: a lost request or reply is simply asked again.
///
/// Frames: request `["fetch", FeedRequest]`, reply `["feed", FeedReplyHeader, item, item, …]`, or, for a request
/// with `pack` to a server that knows it, `["feed", FeedReplyHeader, items]` with the header's `packed` set and the
/// items in one frame (`FeedItems`); both maps are MessagePack with the keys below. Positions count from 1; 0
/// means "before the first item". A reply header's keys: `id`, `feed`, `after`, `to`, `head`, and when they apply
/// `error`, `watched`, `deletedThrough`, `packed`.
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
    /// The items wanted in one frame (`FeedItems`), not a frame each: a reply of hundreds of small items is then
    /// one message to encrypt, send and receive, read in a few system calls instead of one per 8 KiB (key `pack`;
    /// a server that does not know it answers a frame an item, which the client reads as ever). A client that asks
    /// must accept a frame of `maxBytes` plus 5 bytes an item and 5 (`FeedItems.fitsPacked`); a server may answer a
    /// larger reply a frame an item all the same (ours: above `FeedServer.maximumPackedBytes`).
    public var pack: Bool

    public init(
        id: UInt64, feed: String?, after: UInt64, through: UInt64? = nil, maxItems: Int = 256,
        maxBytes: Int = 4 << 20, acknowledged: UInt64, consumer: String, shard: Int? = nil, shards: Int? = nil,
        waitMilliseconds: Int = 1000, watch: [DeviceID] = [], pack: Bool = false
    ) {
        self.pack = pack
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
        if pack { members.append(("pack", .bool(true))) }
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
        pack = try map.flag("pack")
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
    /// The items follow in one frame (`FeedItems`), as the request asked (`FeedRequest.pack`); set only when there
    /// are items (key `packed`).
    public var packed: Bool

    public init(
        id: UInt64, feed: String, after: UInt64, to: UInt64, head: UInt64, error: String? = nil,
        watched: [UInt64] = [], deletedThrough: UInt64? = nil, packed: Bool = false
    ) {
        self.packed = packed
        self.id = id
        self.feed = feed
        self.after = after
        self.to = to
        self.head = head
        self.error = error
        self.watched = watched
        self.deletedThrough = deletedThrough
    }

    /// The reply's frames: this header, then one frame per item (the header must not say `packed`: a packed
    /// reply's items go in one frame, `FeedItems.packedFrame`).
    public func frames(items: [[UInt8]]) -> [[UInt8]] {
        [Self.frame, encoded] + items
    }

    /// The header's map.
    public var encoded: [UInt8] {
        var members: [(String, JSONValue)] = [
            ("id", .number(Double(id))), ("feed", .string(feed)), ("after", .number(Double(after))),
            ("to", .number(Double(to))), ("head", .number(Double(head))),
        ]
        if let error { members.append(("error", .string(error))) }
        if !watched.isEmpty { members.append(("watched", .array(watched.map { .number(Double($0)) }))) }
        if let deletedThrough { members.append(("deletedThrough", .number(Double(deletedThrough)))) }
        if packed { members.append(("packed", .bool(true))) }
        return MessagePack.encode(.object(members))
    }

    /// Reads a reply (after the routing prefix): the header and the items, a frame each or packed in one.
    public static func parse(_ frames: [[UInt8]]) throws(WireError) -> (header: FeedReplyHeader, items: FeedItems) {
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
            deletedThrough: try map.optionalPosition("deletedThrough"), packed: try map.flag("packed"))
        guard header.packed else { return (header, FeedItems(frames: frames[2...])) }
        guard frames.count == 3 else {
            throw WireError(
                .frameCount, "a packed feed reply is the frames [\"feed\", header, items]; got \(frames.count) frames")
        }
        return (header, try FeedItems(packed: frames[2]))
    }
}

/// A feed reply's items: a frame each, or packed in one frame (`FeedRequest.pack`): a MessagePack array of `bin`
/// objects, one an item, so that any bytes can be an item and each is found by measuring, not copying. Each item
/// is a slice of the frame it came in.
public struct FeedItems: RandomAccessCollection, Sendable {
    private let frames: ArraySlice<[UInt8]>
    private let packed: [UInt8]
    private let ranges: [Range<Int>]
    private let isPacked: Bool

    /// Items a frame each.
    public init(frames: ArraySlice<[UInt8]>) {
        self.frames = frames
        packed = []
        ranges = []
        isPacked = false
    }

    /// Items packed in one frame (`packedFrame`); throws when the frame is not an array of `bin`s that ends with it.
    public init(packed frame: [UInt8]) throws(WireError) {
        frames = []
        packed = frame
        isPacked = true
        ranges = try frame.withUnsafeBufferPointer { (bytes) throws(WireError) -> [Range<Int>] in
            func length(at offset: Int, width: Int) throws(WireError) -> Int {
                guard offset + width <= bytes.count else {
                    throw WireError(.truncated, "a packed feed reply ends inside a length", offset: offset)
                }
                var value = 0
                for index in 0..<width { value = value << 8 | Int(bytes[offset + index]) }
                return value
            }
            guard let first = bytes.first else { throw WireError(.truncated, "an empty packed feed reply", offset: 0) }
            var offset: Int
            let count: Int
            switch first {
            case 0x90...0x9F: (count, offset) = (Int(first & 0x0F), 1)
            case 0xDC: (count, offset) = (try length(at: 1, width: 2), 3)
            case 0xDD: (count, offset) = (try length(at: 1, width: 4), 5)
            default: throw WireError(.unexpectedShape, "a packed feed reply must be an array of bins", offset: 0)
            }
            // Every item takes at least two bytes: a count claiming more than the frame holds is not believed.
            guard count <= (bytes.count - offset) / 2 else {
                throw WireError(.truncated, "a packed feed reply claims \(count) items", offset: 0)
            }
            var ranges: [Range<Int>] = []
            ranges.reserveCapacity(count)
            for _ in 0..<count {
                guard offset < bytes.count else {
                    throw WireError(.truncated, "a packed feed reply ends before its items", offset: offset)
                }
                let size: Int
                switch bytes[offset] {
                case 0xC4: (size, offset) = (try length(at: offset + 1, width: 1), offset + 2)
                case 0xC5: (size, offset) = (try length(at: offset + 1, width: 2), offset + 3)
                case 0xC6: (size, offset) = (try length(at: offset + 1, width: 4), offset + 5)
                default:
                    throw WireError(.unexpectedShape, "a packed feed reply's item must be a bin", offset: offset)
                }
                guard size <= bytes.count - offset else {
                    throw WireError(.truncated, "a packed feed reply ends inside an item", offset: offset)
                }
                ranges.append(offset..<offset + size)
                offset += size
            }
            guard offset == bytes.count else {
                throw WireError(.unexpectedShape, "bytes after a packed feed reply's items", offset: offset)
            }
            return ranges
        }
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { isPacked ? ranges.count : frames.count }

    public subscript(position: Int) -> ArraySlice<UInt8> {
        isPacked ? packed[ranges[position]] : frames[frames.startIndex + position][...]
    }

    /// Whether a server packs `items` for a request that asked (`FeedRequest.pack`): when their bytes are within
    /// the request's `maxBytes`. A reply larger than that (one item above it, which a server sends alone) goes a
    /// frame an item, so that a packed frame is never above `maxBytes` plus 5 bytes an item and 5.
    public static func fitsPacked<Item: Collection<UInt8>>(_ items: [Item], maxBytes: Int) -> Bool {
        var bytes = 0
        for item in items {
            bytes += item.count
            if bytes > maxBytes { return false }
        }
        return true
    }

    /// The size of `items` packed in one frame.
    public static func packedSize<Item: Collection<UInt8>>(_ items: [Item]) -> Int {
        var size = 5
        for item in items { size += binHeaderSize(item.count) + item.count }
        return size
    }

    /// Writes `items` packed (an array of `bin`s) into `buffer`, which holds exactly `packedSize(items)` bytes; the
    /// bytes written. Items are arrays of their own or slices of a shared one (the journal's, a statement's chunks).
    @discardableResult
    public static func writePacked<Item: Collection<UInt8>>(
        _ items: [Item], into buffer: UnsafeMutableRawBufferPointer
    ) -> Int {
        var offset = 0
        func put(_ byte: UInt8) {
            buffer[offset] = byte
            offset += 1
        }
        func put(_ value: Int, width: Int) {
            for shift in stride(from: (width - 1) * 8, through: 0, by: -8) {
                put(UInt8(truncatingIfNeeded: value >> shift))
            }
        }
        put(0xDD)
        put(items.count, width: 4)
        for item in items {
            switch item.count {
            case ..<256:
                put(0xC4)
                put(item.count, width: 1)
            case ..<65_536:
                put(0xC5)
                put(item.count, width: 2)
            default:
                put(0xC6)
                put(item.count, width: 4)
            }
            let copied: Void? = item.withContiguousStorageIfAvailable { bytes in
                guard let base = bytes.baseAddress, bytes.count > 0 else { return }
                (buffer.baseAddress! + offset).copyMemory(from: base, byteCount: bytes.count)
                offset += bytes.count
            }
            if copied == nil {
                for byte in item { put(byte) }
            }
        }
        return offset
    }

    /// `items` packed in one frame of their own (what `writePacked` writes, as an array).
    public static func packedFrame<Item: Collection<UInt8>>(_ items: [Item]) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: packedSize(items)) { buffer, count in
            count = writePacked(items, into: UnsafeMutableRawBufferPointer(buffer))
        }
    }

    private static func binHeaderSize(_ count: Int) -> Int {
        switch count {
        case ..<256: 2
        case ..<65_536: 3
        default: 5
        }
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

    /// An optional flag: true only when the member is `true`.
    func flag(_ key: String) throws(WireError) -> Bool {
        guard let member = value[key], member != .null else { return false }
        guard case .bool(let flag) = member else {
            throw WireError(.unexpectedShape, "\(key) must be true or false, found \(member.typeName)", path: key)
        }
        return flag
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
