import CMessagePack
import RoadSaveModel

// MARK: - Topics

/// Topic frames between the services. A topic is ASCII-dotted text that always ends in the delimiter `.`, because
/// ZeroMQ subscriptions match prefixes: with the trailing delimiter, a subscription to `record.3.` cannot also take
/// `record.31.`, nor `event.crashDetected.app-1.` the application `app-10`.
///
/// | topic | carries | subscribe to |
/// | --- | --- | --- |
/// | `record.<shard>.` | records of the devices hashed to `shard` (`Envelope.shard(of:shards:)`, decimal) | `record.` for all, `record.3.` for one shard |
/// | `event.<name>.<app>.<user>.` | one device's events (`name` = `tripDidStart`, `tripDidEnd`, `crashDetected`) | `event.`, `event.crashDetected.`, `Topic.event(name:app:)` |
/// | `heartbeat.` | heartbeats of producers with nothing else to say (or a heartbeat on a data topic; see `Envelope.heartbeat`) | `heartbeat.` |
///
/// `app` and `user` are escaped (`Topic.escape`: `%` → `%25`, `.` → `%2E`), so an identifier holding a dot cannot pose
/// as another device or application. Topics route; the authoritative device is the one in the body.
public enum Topic {
    public static let delimiter = UInt8(ascii: ".")

    /// Every record topic starts with this.
    public static let records: [UInt8] = Array("record.".utf8)
    /// Every event topic starts with this.
    public static let events: [UInt8] = Array("event.".utf8)
    /// The topic of stand-alone heartbeats.
    public static let heartbeat: [UInt8] = Array("heartbeat.".utf8)

    /// `record.<shard>.`
    public static func record(shard: Int) -> [UInt8] {
        Array("record.\(shard).".utf8)
    }

    /// `event.<name>.<app>.<user>.` for the event's device.
    public static func event(_ event: RoadSaveEvent) -> [UInt8] {
        Self.event(name: event.name, app: event.device.app, user: event.device.user)
    }

    /// A prefix to subscribe to (or, with all three parts, a full topic): `event.<name>.`, `event.<name>.<app>.` or
    /// `event.<name>.<app>.<user>.`. A `user` without an `app` is ignored.
    public static func event(name: String, app: String? = nil, user: String? = nil) -> [UInt8] {
        var text = "event." + escape(name) + "."
        if let app {
            text += escape(app) + "."
            if let user { text += escape(user) + "." }
        }
        return Array(text.utf8)
    }

    /// Percent-escapes the delimiter and the escape character, so that one component never spans two.
    public static func escape(_ component: String) -> String {
        guard component.utf8.contains(where: { $0 == delimiter || $0 == UInt8(ascii: "%") }) else { return component }
        var text = ""
        for scalar in component.unicodeScalars {
            switch scalar {
            case ".": text += "%2E"
            case "%": text += "%25"
            default: text.unicodeScalars.append(scalar)
            }
        }
        return text
    }

    /// The inverse of `escape` (`%2E` → `.`, `%25` → `%`; any other `%` is kept as it is).
    public static func unescape(_ component: String) -> String {
        let bytes = Array(component.utf8)
        guard bytes.contains(UInt8(ascii: "%")) else { return component }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count, bytes[index + 1] == UInt8(ascii: "2") {
                switch bytes[index + 2] {
                case UInt8(ascii: "E"), UInt8(ascii: "e"):
                    output.append(delimiter)
                    index += 3
                    continue
                case UInt8(ascii: "5"):
                    output.append(UInt8(ascii: "%"))
                    index += 3
                    continue
                default: break
                }
            }
            output.append(bytes[index])
            index += 1
        }
        return String(decoding: output, as: UTF8.self)
    }
}

// MARK: - Header

/// The second frame of every envelope: a MessagePack map `{v, p, s, k, t}`, written in that order.
///
/// | key | field | type |
/// | --- | --- | --- |
/// | `v` | format version | integer, `1` |
/// | `p` | producer ID | string, 1…256 bytes of UTF-8 |
/// | `s` | sequence | unsigned integer; ≥ 1 for records and events, counted per producer from 1; a heartbeat carries the producer's last sequence (0 before its first message) |
/// | `k` | kind | `"record"`, `"event"` or `"heartbeat"` |
/// | `t` | sent at | float64, Unix seconds on the producer's clock (for liveness, never for the engines) |
///
/// A reader checks `v` before anything else and refuses versions it does not know; it ignores keys it does not know,
/// so a later version 1 producer may add some.
///
/// One producer ID is one sequence, and a consumer can only see gaps in a sequence it receives whole. A process that
/// publishes on several shard topics therefore uses one producer ID per shard (`producerID(process:shard:)`), so that
/// the subscriber of shard 3 sees every number of `ingest-1#3`.
public struct EnvelopeHeader: Sendable, Equatable {
    public static let formatVersion = 1
    /// Largest header frame accepted.
    public static let maximumBytes = 1024

    public enum Kind: String, Sendable, CaseIterable {
        case record, event, heartbeat
    }

    public var version: Int
    public var producer: String
    public var sequence: UInt64
    public var kind: Kind
    public var sentAt: Double

    public init(producer: String, sequence: UInt64, kind: Kind, sentAt: Double, version: Int = formatVersion) {
        self.version = version
        self.producer = producer
        self.sequence = sequence
        self.kind = kind
        self.sentAt = sentAt
    }

    /// `<process>#<shard>`: the producer ID of one shard's stream.
    public static func producerID(process: String, shard: Int) -> String {
        "\(process)#\(shard)"
    }

    public func encode() -> [UInt8] {
        MessagePack.withPacker(capacity: 32 + producer.utf8.count) { packer in
            packer.packMapHeader(5)
            packer.pack("v")
            packer.pack(Int64(version))
            packer.pack("p")
            packer.pack(producer)
            packer.pack("s")
            packer.pack(sequence)
            packer.pack("k")
            packer.pack(kind.rawValue)
            packer.pack("t")
            packer.pack(double: sentAt)
        }
    }

    /// Reads a header frame. Errors: `invalidHeader` (not a map, a field missing or mistyped, with the key in
    /// `path`), `unsupportedVersion`.
    public init(bytes: some Collection<UInt8>) throws(WireError) {
        guard bytes.count <= Self.maximumBytes else {
            throw WireError(.invalidHeader, "a header of \(bytes.count) bytes; at most \(Self.maximumBytes) are accepted")
        }
        let result = Array(bytes).withUnsafeBytes { Self.decode($0) }
        self = try result.get()
    }

    private static func decode(_ buffer: UnsafeRawBufferPointer) -> Result<EnvelopeHeader, WireError> {
        let document: Document
        do throws(WireError) {
            document = try Document(buffer)
        } catch {
            return .failure(WireError(.invalidHeader, "the header is not MessagePack: \(error.reason)",
                                      offset: error.offset))
        }
        defer { document.free() }
        let root = document.root
        guard root.type == MSGPACK_OBJECT_MAP else {
            return .failure(WireError(.invalidHeader, "the header must be a map, found \(MessagePack.typeName(root))"))
        }
        // Keys are strings (the scan checked); only the one-letter keys of version 1 matter, matched by their byte
        // (the first of duplicates wins).
        var v: msgpack_object?, p: msgpack_object?, s: msgpack_object?, k: msgpack_object?, t: msgpack_object?
        if let pairs = root.via.map.ptr {
            for index in 0..<Int(root.via.map.size) {
                let key = pairs[index].key
                guard key.type == MSGPACK_OBJECT_STR, key.via.str.size == 1, let name = key.via.str.ptr else { continue }
                let value = pairs[index].val
                switch UInt8(bitPattern: name.pointee) {
                case UInt8(ascii: "v"): v = v ?? value
                case UInt8(ascii: "p"): p = p ?? value
                case UInt8(ascii: "s"): s = s ?? value
                case UInt8(ascii: "k"): k = k ?? value
                case UInt8(ascii: "t"): t = t ?? value
                default: break
                }
            }
        }
        func failure(_ key: String, _ reason: String) -> Result<EnvelopeHeader, WireError> {
            .failure(WireError(.invalidHeader, reason, path: key))
        }
        // The version first: another version may mean other fields.
        guard let v else { return failure("v", "missing the format version") }
        guard v.type == MSGPACK_OBJECT_POSITIVE_INTEGER else {
            return failure("v", "the format version must be a positive integer, found \(MessagePack.typeName(v))")
        }
        guard v.via.u64 == UInt64(formatVersion) else {
            return .failure(WireError(.unsupportedVersion, "format version \(v.via.u64); this build reads version "
                                      + "\(formatVersion) only", path: "v"))
        }
        guard let p else { return failure("p", "missing the producer ID") }
        guard p.type == MSGPACK_OBJECT_STR, let producer = try? document.walker.string(p.via.str.ptr, p.via.str.size),
              !producer.isEmpty, producer.utf8.count <= DeviceID.maximumLength else {
            return failure("p", "the producer ID must be a string of 1…\(DeviceID.maximumLength) bytes of UTF-8")
        }
        guard let k else { return failure("k", "missing the kind") }
        guard k.type == MSGPACK_OBJECT_STR, let kindName = try? document.walker.string(k.via.str.ptr, k.via.str.size),
              let kind = Kind(rawValue: kindName) else {
            return failure("k", "the kind must be one of " + Kind.allCases.map(\.rawValue).joined(separator: ", "))
        }
        guard let s else { return failure("s", "missing the sequence number") }
        guard s.type == MSGPACK_OBJECT_POSITIVE_INTEGER else {
            return failure("s", "the sequence must be an unsigned integer, found \(MessagePack.typeName(s))")
        }
        guard s.via.u64 >= 1 || kind == .heartbeat else {
            return failure("s", "sequences start at 1 (0 is for a heartbeat before the first message)")
        }
        guard let t else { return failure("t", "missing the time it was sent") }
        let sentAt: Double
        switch t.type {
        case MSGPACK_OBJECT_FLOAT64, MSGPACK_OBJECT_FLOAT32: sentAt = t.via.f64
        case MSGPACK_OBJECT_POSITIVE_INTEGER: sentAt = Double(t.via.u64)
        default: return failure("t", "the time must be a number of seconds, found \(MessagePack.typeName(t))")
        }
        guard sentAt.isFinite, sentAt >= 0 else { return failure("t", "the time must be a finite number ≥ 0") }
        return .success(EnvelopeHeader(producer: producer, sequence: s.via.u64, kind: kind, sentAt: sentAt))
    }
}

// MARK: - Envelope

/// A message between the services: the frames `[topic, header, body]` (see `Topic` and `EnvelopeHeader`), the
/// body MessagePack (a record map for `record`, an event map for `event`, an empty map for `heartbeat`).
public struct Envelope: Sendable, Equatable {
    public var topic: [UInt8]
    public var header: EnvelopeHeader
    public var body: [UInt8]

    public init(topic: [UInt8], header: EnvelopeHeader, body: [UInt8]) {
        self.topic = topic
        self.header = header
        self.body = body
    }

    /// The three frames to send, in order.
    public func frames() -> [[UInt8]] {
        [topic, header.encode(), body]
    }

    /// Reads received frames. Errors: `frameCount`, `invalidTopic` (empty, or not ending in the delimiter),
    /// `unsupportedVersion`, `invalidHeader`. The body is read later, by `record()` or `event()`.
    public init(frames: [[UInt8]]) throws(WireError) {
        guard frames.count == 3 else {
            throw WireError(.frameCount, "an envelope has 3 frames [topic, header, body], received \(frames.count)")
        }
        guard let last = frames[0].last, last == Topic.delimiter else {
            throw WireError(.invalidTopic, frames[0].isEmpty ? "the topic frame is empty"
                                : "the topic must end in '.' (prefix subscriptions would collide otherwise)")
        }
        self.init(topic: frames[0], header: try EnvelopeHeader(bytes: frames[1]), body: frames[2])
    }

    // MARK: Building

    /// A record on its shard's topic.
    public static func record(_ record: SensorRecord, shards: Int, producer: String, sequence: UInt64,
                              sentAt: Double) -> Envelope {
        Envelope(topic: Topic.record(shard: shard(of: record.device, shards: shards)),
                 header: EnvelopeHeader(producer: producer, sequence: sequence, kind: .record, sentAt: sentAt),
                 body: recordBody(record))
    }

    /// An event on `event.<name>.<app>.<user>.`.
    public static func event(_ event: RoadSaveEvent, producer: String, sequence: UInt64, sentAt: Double) -> Envelope {
        Envelope(topic: Topic.event(event),
                 header: EnvelopeHeader(producer: producer, sequence: sequence, kind: .event, sentAt: sentAt),
                 body: eventBody(event))
    }

    /// A heartbeat: "still here, and the last sequence I sent is `sequence`" (it does not take a number of its
    /// own; 0 before the first message). Send it on the topic whose subscribers must hear it — for a shard's stream,
    /// that shard's topic — or on `Topic.heartbeat`. The body is an empty map.
    public static func heartbeat(producer: String, sequence: UInt64, sentAt: Double,
                                 topic: [UInt8] = Topic.heartbeat) -> Envelope {
        Envelope(topic: topic, header: EnvelopeHeader(producer: producer, sequence: sequence, kind: .heartbeat,
                                                      sentAt: sentAt),
                 body: [0x80])
    }

    // MARK: Reading

    /// The record in a `record` envelope, validated again (CONTRACT §2).
    public func record() throws(WireError) -> SensorRecord {
        guard header.kind == .record else {
            throw WireError(.wrongKind, "expected a record envelope, found \(header.kind.rawValue)")
        }
        return try Self.record(fromBody: body)
    }

    /// The event in an `event` envelope.
    public func event() throws(WireError) -> RoadSaveEvent {
        guard header.kind == .event else {
            throw WireError(.wrongKind, "expected an event envelope, found \(header.kind.rawValue)")
        }
        return try Self.event(fromBody: body)
    }

    // MARK: Bodies

    /// A record as the MessagePack map of its CONTRACT §2 fields (every `Double` exact, as float64).
    public static func recordBody(_ record: SensorRecord) -> [UInt8] {
        MessagePack.withPacker(capacity: 160) { packer in packer.pack(record: record) }
    }

    /// Reads a record body and validates it with `RecordDecoding` (errors: the MessagePack ones, or
    /// `invalidRecord` with the field in `path`).
    public static func record(fromBody body: some Collection<UInt8>) throws(WireError) -> SensorRecord {
        let value = try MessagePack.decode(body)
        do throws(RecordError) {
            return try RecordDecoding.record(from: value)
        } catch {
            throw WireError(.invalidRecord, error.reason, path: error.field)
        }
    }

    /// An event as a MessagePack map: `event` (its name), `app`, `user`, then its fields under the CONTRACT §3
    /// names — `tripID`, `startDate`; `endDate`, `distanceMetres`, `endReason`; `crashID`, `confidence`,
    /// `detectedAt`, `latitude`, `longitude`, `isTest` — dates as float64 Unix seconds, so every field round-trips
    /// exactly. (`eventID`, `duration` and `averageSpeed` are derived, so they are not sent.)
    public static func eventBody(_ event: RoadSaveEvent) -> [UInt8] {
        MessagePack.withPacker(capacity: 200) { packer in
            switch event.body {
            case let .tripDidStart(info):
                packer.packMapHeader(5)
                packEventHead(event, packer)
                packer.pack("tripID")
                packer.pack(info.tripID)
                packer.pack("startDate")
                packer.pack(double: info.startDate)
            case let .tripDidEnd(info):
                packer.packMapHeader(8)
                packEventHead(event, packer)
                packer.pack("tripID")
                packer.pack(info.tripID)
                packer.pack("startDate")
                packer.pack(double: info.startDate)
                packer.pack("endDate")
                packer.pack(double: info.endDate)
                packer.pack("distanceMetres")
                packer.pack(double: info.distanceMetres)
                packer.pack("endReason")
                packer.pack(info.endReason.rawValue)
            case let .crashDetected(info):
                packer.packMapHeader(9)
                packEventHead(event, packer)
                packer.pack("crashID")
                packer.pack(info.crashID)
                packer.pack("confidence")
                packer.pack(info.confidence.rawValue)
                packer.pack("detectedAt")
                packer.pack(double: info.detectedAt)
                // nil when the device never reported a position: unknown, never a made-up 0,0.
                packer.pack("latitude")
                if let latitude = info.latitude { packer.pack(double: latitude) } else { packer.packNil() }
                packer.pack("longitude")
                if let longitude = info.longitude { packer.pack(double: longitude) } else { packer.packNil() }
                packer.pack("isTest")
                packer.pack(info.isTest)
            }
        }
    }

    private static func packEventHead(_ event: RoadSaveEvent, _ packer: Packer) {
        packer.pack("event")
        packer.pack(event.name)
        packer.pack("app")
        packer.pack(event.device.app)
        packer.pack("user")
        packer.pack(event.device.user)
    }

    /// Reads an event body (errors: the MessagePack ones, or `invalidEvent` with the field in `path`).
    public static func event(fromBody body: some Collection<UInt8>) throws(WireError) -> RoadSaveEvent {
        let value = try MessagePack.decode(body)
        guard case .object = value else {
            throw WireError(.invalidEvent, "an event body must be a map, found \(value.typeName)")
        }
        let fields = EventFields(value: value)
        let name = try fields.string("event")
        let device = DeviceID(app: try fields.identifier("app"), user: try fields.identifier("user"))
        switch name {
        case "tripDidStart":
            return RoadSaveEvent(device: device, body: .tripDidStart(
                TripStartInfo(tripID: try fields.identifier("tripID"), startDate: try fields.number("startDate"))))
        case "tripDidEnd":
            let reasonName = try fields.string("endReason")
            guard let reason = TripEndReason(rawValue: reasonName) else {
                throw WireError(.invalidEvent, "unknown end reason \"\(reasonName)\"", path: "endReason")
            }
            return RoadSaveEvent(device: device, body: .tripDidEnd(
                TripInfo(tripID: try fields.identifier("tripID"), startDate: try fields.number("startDate"),
                         endDate: try fields.number("endDate"), distanceMetres: try fields.number("distanceMetres"),
                         endReason: reason)))
        case "crashDetected":
            let confidenceName = try fields.string("confidence")
            guard let confidence = CrashConfidence(rawValue: confidenceName) else {
                throw WireError(.invalidEvent, "unknown confidence \"\(confidenceName)\"", path: "confidence")
            }
            return RoadSaveEvent(device: device, body: .crashDetected(
                CrashInfo(crashID: try fields.identifier("crashID"), confidence: confidence,
                          detectedAt: try fields.number("detectedAt"), latitude: try fields.optionalNumber("latitude"),
                          longitude: try fields.optionalNumber("longitude"), isTest: try fields.bool("isTest"))))
        default:
            throw WireError(.invalidEvent, "unknown event \"\(name)\"; expected tripDidStart, tripDidEnd or crashDetected",
                            path: "event")
        }
    }

    // MARK: Sharding

    /// The shard (0..<shards) of a device: 64-bit FNV-1a over the app's UTF-8, a 0xFF byte (which UTF-8 never
    /// holds, so ("ab", "c") and ("a", "bc") differ), and the user's UTF-8, modulo `shards`. Stable across processes,
    /// builds and machines — unlike Swift's `Hasher`, which is seeded per process.
    public static func shard(of device: DeviceID, shards: Int) -> Int {
        precondition(shards > 0, "shard(of:shards:) needs at least one shard")
        return Int(fnv1a(device) % UInt64(shards))
    }

    /// The 64-bit FNV-1a hash behind `shard(of:shards:)`.
    public static func fnv1a(_ device: DeviceID) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in device.app.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        hash = (hash ^ 0xFF) &* 0x0000_0100_0000_01B3
        for byte in device.user.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        return hash
    }
}

/// Typed access to an event body's members, with errors that name the member.
private struct EventFields {
    let value: JSONValue

    func required(_ name: String) throws(WireError) -> JSONValue {
        guard let member = value[name], member != .null else { throw WireError(.invalidEvent, "missing", path: name) }
        return member
    }

    func string(_ name: String) throws(WireError) -> String {
        let member = try required(name)
        guard case let .string(text) = member else {
            throw WireError(.invalidEvent, "expected a string, found \(member.typeName)", path: name)
        }
        return text
    }

    /// A non-empty string of at most `DeviceID.maximumLength` bytes.
    func identifier(_ name: String) throws(WireError) -> String {
        let text = try string(name)
        guard !text.isEmpty, text.utf8.count <= DeviceID.maximumLength else {
            throw WireError(.invalidEvent, "must be 1…\(DeviceID.maximumLength) bytes", path: name)
        }
        return text
    }

    func number(_ name: String) throws(WireError) -> Double {
        let member = try required(name)
        guard case let .number(number) = member else {
            throw WireError(.invalidEvent, "expected a number, found \(member.typeName)", path: name)
        }
        return number
    }

    /// A number, or nil for an explicit null.
    func optionalNumber(_ name: String) throws(WireError) -> Double? {
        guard value[name] != JSONValue.null else { return nil }
        return try number(name)
    }

    func bool(_ name: String) throws(WireError) -> Bool {
        let member = try required(name)
        guard case let .bool(flag) = member else {
            throw WireError(.invalidEvent, "expected true or false, found \(member.typeName)", path: name)
        }
        return flag
    }
}
