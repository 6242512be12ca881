import RoadSaveModel
import Testing
@testable import Wire

@Suite("Envelopes")
struct EnvelopeTests {
    func envelopeError(_ frames: [[UInt8]], sourceLocation: SourceLocation = #_sourceLocation) -> WireError? {
        do {
            let envelope = try Envelope(frames: frames)
            Issue.record("expected an error, read \(envelope)", sourceLocation: sourceLocation)
            return nil
        } catch {
            return error
        }
    }

    func header(_ members: [(String, JSONValue)]) -> [UInt8] {
        MessagePack.encode(.object(members))
    }

    static let validHeader: [(String, JSONValue)] = [
        ("v", .number(1)), ("p", .string("ingest-1#3")), ("s", .number(42)), ("k", .string("record")),
        ("t", .number(1_718_708_242.5)),
    ]

    func replacing(_ key: String, with value: JSONValue?) -> [(String, JSONValue)] {
        var members = Self.validHeader.filter { $0.0 != key }
        if let value { members.append((key, value)) }
        return members
    }

    // MARK: Header

    @Test func headerBytesAreTheDocumentedMap() {
        let header = EnvelopeHeader(producer: "p1", sequence: 7, kind: .record, sentAt: 1.5)
        // fixmap 5: "v" 1, "p" "p1", "s" 7, "k" "record", "t" float64 1.5
        #expect(header.encode() == Fixtures.bytes("""
            85 a1 76 01 a1 70 a2 70 31 a1 73 07 a1 6b a6 72 65 63 6f 72 64 a1 74 cb 3f f8 00 00 00 00 00 00
            """))
    }

    @Test(arguments: EnvelopeHeader.Kind.allCases)
    func headerRoundTrips(_ kind: EnvelopeHeader.Kind) throws {
        // A sequence beyond 2^53 survives: the header is read as integers, not through Double.
        let header = EnvelopeHeader(producer: "detect-2 ✓", sequence: (1 << 60) + 1, kind: kind, sentAt: 1_718_708_242.123_456)
        #expect(try EnvelopeHeader(bytes: header.encode()) == header)
    }

    @Test func headerIgnoresUnknownKeysAndTakesIntegerTimes() throws {
        let bytes = header(Self.validHeader.filter { $0.0 != "t" } + [("t", .number(1_718_708_242)), ("x", .array([]))])
        let header = try EnvelopeHeader(bytes: bytes)
        #expect(header.sentAt == 1_718_708_242)
        #expect(header.producer == "ingest-1#3")
        #expect(header.sequence == 42)
    }

    @Test func unknownVersionIsRefusedBeforeAnythingElse() {
        // Version 2 with otherwise unreadable fields: the version decides.
        let bytes = header([("v", .number(2)), ("p", .number(5))])
        do {
            _ = try EnvelopeHeader(bytes: bytes)
            Issue.record("expected unsupportedVersion")
        } catch {
            #expect(error.code == .unsupportedVersion)
            #expect(error.reason.contains("2"))
        }
        let error = envelopeError([Topic.heartbeat, bytes, [0x80]])
        #expect(error?.code == .unsupportedVersion)
    }

    @Test func malformedHeadersNameTheKey() {
        let cases: [([UInt8], String)] = [
            (header(replacing("v", with: nil)), "v"),
            (header(replacing("v", with: .string("1"))), "v"),
            (header(replacing("p", with: nil)), "p"),
            (header(replacing("p", with: .string(""))), "p"),
            (header(replacing("p", with: .number(3))), "p"),
            (header(replacing("s", with: nil)), "s"),
            (header(replacing("s", with: .number(-1))), "s"),
            (header(replacing("s", with: .number(1.5))), "s"),
            (header(replacing("s", with: .number(0))), "s"), // 0 only for heartbeats
            (header(replacing("k", with: .string("gossip"))), "k"),
            (header(replacing("k", with: nil)), "k"),
            (header(replacing("t", with: .string("now"))), "t"),
            (header(replacing("t", with: nil)), "t"),
            (header(replacing("t", with: .number(-5))), "t"),
        ]
        for (bytes, key) in cases {
            do {
                let header = try EnvelopeHeader(bytes: bytes)
                Issue.record("\(key): read \(header)")
            } catch {
                #expect(error.code == .invalidHeader, "\(key): \(error)")
                #expect(error.path == key, "\(key): \(error)")
            }
        }
        // Not a map, not MessagePack, too long.
        for bytes in [MessagePack.encode(.array([.number(1)])), [0xC1], [], [UInt8](repeating: 0xC0, count: 2000),
                      Fixtures.bytes("85 a1 76 01")] {
            do {
                _ = try EnvelopeHeader(bytes: bytes)
                Issue.record("read a header from \(bytes.prefix(8))")
            } catch {
                #expect(error.code == .invalidHeader, "\(error)")
            }
        }
    }

    @Test func heartbeatMayCarrySequenceZero() throws {
        let envelope = Envelope.heartbeat(producer: "ingest-1", sequence: 0, sentAt: 100)
        let read = try Envelope(frames: envelope.frames())
        #expect(read.header.kind == .heartbeat)
        #expect(read.header.sequence == 0)
        #expect(read.topic == Array("heartbeat.".utf8))
        #expect(read.body == [0x80])
    }

    // MARK: Frames

    @Test func framesRoundTrip() throws {
        for (sequence, record) in Fixtures.records.enumerated() {
            let envelope = Envelope.record(record, shards: 8, producer: "ingest-1#5", sequence: UInt64(sequence + 1),
                                           sentAt: 1_718_708_300.25)
            let frames = envelope.frames()
            #expect(frames.count == 3)
            let read = try Envelope(frames: frames)
            #expect(read == envelope)
            #expect(try read.record() == record)
        }
        for event in Fixtures.events {
            let envelope = Envelope.event(event, producer: "detect-1", sequence: 9, sentAt: 1)
            let read = try Envelope(frames: envelope.frames())
            #expect(read == envelope)
            #expect(try read.event() == event)
        }
    }

    @Test func wrongFrameCountsAndTopics() {
        let good = Envelope.heartbeat(producer: "p", sequence: 1, sentAt: 1).frames()
        #expect(envelopeError(Array(good.prefix(2)))?.code == .frameCount)
        #expect(envelopeError(good + [[]])?.code == .frameCount)
        #expect(envelopeError([])?.code == .frameCount)
        #expect(envelopeError([[]] + good.dropFirst())?.code == .invalidTopic)
        #expect(envelopeError([Array("record.3".utf8)] + good.dropFirst())?.code == .invalidTopic)
        #expect(envelopeError([good[0], [0x01, 0x02], good[2]])?.code == .invalidHeader)
    }

    @Test func readingTheWrongKindFails() throws {
        let envelope = Envelope.event(Fixtures.events[0], producer: "d", sequence: 1, sentAt: 1)
        do {
            _ = try envelope.record()
            Issue.record("expected wrongKind")
        } catch {
            #expect(error.code == .wrongKind)
        }
        let heartbeat = Envelope.heartbeat(producer: "d", sequence: 1, sentAt: 1)
        #expect(throws: WireError.self) { try heartbeat.event() }
    }

    // MARK: Bodies

    @Test(arguments: Fixtures.records)
    func recordBodiesRoundTripExactly(_ record: SensorRecord) throws {
        #expect(try Envelope.record(fromBody: Envelope.recordBody(record)) == record)
    }

    @Test func recordBodyIsTheContractMap() throws {
        let record = Fixtures.records[0]
        let value = try MessagePack.decode(Envelope.recordBody(record))
        guard case let .object(members) = value else {
            Issue.record("not a map: \(value)")
            return
        }
        #expect(members.map(\.0) == ["kind", "app", "user", "seq", "t", "lat", "lon", "speed", "course", "hacc"])
        #expect(value["t"] == .number(1_718_708_242.123_456_7))
        #expect(value["seq"] == .number(1))
    }

    @Test func recordBodiesAreValidatedAgain() {
        let body = MessagePack.encode(Fixtures.location(with: "lon", .number(181)))
        do {
            _ = try Envelope.record(fromBody: body)
            Issue.record("expected invalidRecord")
        } catch {
            #expect(error.code == .invalidRecord)
            #expect(error.path == "lon")
        }
        #expect(throws: WireError.self) { try Envelope.record(fromBody: [0x81, 0x01]) }
    }

    @Test(arguments: Fixtures.events)
    func eventBodiesRoundTripEveryField(_ event: RoadSaveEvent) throws {
        let read = try Envelope.event(fromBody: Envelope.eventBody(event))
        #expect(read == event)
        #expect(read.eventID == event.eventID)
        // Field by field, so that a broken Equatable could not hide a loss.
        switch (read.body, event.body) {
        case let (.tripDidStart(a), .tripDidStart(b)):
            #expect(a.tripID == b.tripID && a.startDate == b.startDate)
        case let (.tripDidEnd(a), .tripDidEnd(b)):
            #expect(a.tripID == b.tripID && a.startDate == b.startDate && a.endDate == b.endDate)
            #expect(a.distanceMetres == b.distanceMetres && a.endReason == b.endReason)
        case let (.crashDetected(a), .crashDetected(b)):
            #expect(a.crashID == b.crashID && a.confidence == b.confidence && a.detectedAt == b.detectedAt)
            #expect(a.latitude == b.latitude && a.longitude == b.longitude && a.isTest == b.isTest)
        default:
            Issue.record("kind changed: \(read.name) ≠ \(event.name)")
        }
        #expect(read.device == event.device)
    }

    @Test func fixturesCoverEveryEventVariant() {
        let reasons = Set(Fixtures.events.compactMap { if case let .tripDidEnd(info) = $0.body { info.endReason } else { nil } })
        #expect(reasons == Set(TripEndReason.allCases))
        let crashes = Fixtures.events.compactMap { if case let .crashDetected(info) = $0.body { info } else { nil } }
        #expect(Set(crashes.map(\.confidence)) == Set(CrashConfidence.allCases))
        #expect(Set(crashes.map(\.isTest)) == [false, true])
    }

    @Test func eventBodyErrorsNameTheField() {
        func eventError(_ members: [(String, JSONValue)]) -> WireError? {
            do {
                let event = try Envelope.event(fromBody: MessagePack.encode(.object(members)))
                Issue.record("read \(event)")
                return nil
            } catch {
                return error
            }
        }
        let crash: [(String, JSONValue)] = [
            ("event", .string("crashDetected")), ("app", .string("a")), ("user", .string("u")),
            ("crashID", .string("c")), ("confidence", .string("high")), ("detectedAt", .number(1)),
            ("latitude", .number(1)), ("longitude", .number(2)),
        ]
        let missingIsTest = eventError(crash)
        #expect(missingIsTest?.code == .invalidEvent)
        #expect(missingIsTest?.path == "isTest")
        #expect(eventError(crash + [("isTest", .string("no"))])?.path == "isTest")
        #expect(eventError(crash.map { $0.0 == "confidence" ? ($0.0, .string("none")) : $0 } + [("isTest", .bool(false))])?
            .path == "confidence")
        #expect(eventError([("event", .string("tripDidEnd")), ("app", .string("a")), ("user", .string("u")),
                            ("tripID", .string("t")), ("startDate", .number(1)), ("endDate", .number(2)),
                            ("distanceMetres", .number(3)), ("endReason", .string("boredom"))])?.path == "endReason")
        #expect(eventError([("event", .string("tripDidWobble")), ("app", .string("a")), ("user", .string("u"))])?.path == "event")
        #expect(eventError([("event", .string("tripDidStart")), ("app", .string("")), ("user", .string("u"))])?.path == "app")
        #expect(throws: WireError.self) { try Envelope.event(fromBody: MessagePack.encode(.array([]))) }
    }

    // MARK: Topics

    @Test func topicsEndInTheDelimiterAndEscapeComponents() {
        #expect(Topic.record(shard: 3) == Array("record.3.".utf8))
        let event = RoadSaveEvent(device: DeviceID(app: "a.b", user: "100%"), body: .tripDidStart(
            TripStartInfo(tripID: "t", startDate: 1)))
        #expect(String(decoding: Topic.event(event), as: UTF8.self) == "event.tripDidStart.a%2Eb.100%25.")
        #expect(Envelope.event(event, producer: "d", sequence: 1, sentAt: 1).topic == Topic.event(event))
        for text in ["", "plain", "a.b", "%", "%2E", "%25", "..%%..", "ü.✓", "%2", "a%"] {
            #expect(Topic.unescape(Topic.escape(text)) == text, "\(text)")
            #expect(!Topic.escape(text).contains("."), "\(text)")
        }
    }

    @Test func prefixSubscriptionsCannotCollide() {
        func topic(_ app: String, _ user: String) -> [UInt8] {
            Topic.event(RoadSaveEvent(device: DeviceID(app: app, user: user), body: .crashDetected(
                CrashInfo(crashID: "c", confidence: .high, detectedAt: 1, latitude: 0, longitude: 0, isTest: false))))
        }
        let subscription = Topic.event(name: "crashDetected", app: "a")
        #expect(topic("a", "u").starts(with: subscription))
        #expect(!topic("ab", "u").starts(with: subscription))
        #expect(!topic("a.b", "u").starts(with: subscription))
        #expect(topic("a.b", "u") != topic("a", "b.u"))
        #expect(topic("a", "u").starts(with: Topic.event(name: "crashDetected")))
        #expect(topic("a", "u").starts(with: Topic.events))
        #expect(!Topic.record(shard: 31).starts(with: Topic.record(shard: 3)))
        #expect(Topic.record(shard: 31).starts(with: Topic.records))
    }

    // MARK: Sharding

    @Test func shardIsStable() {
        // Expected values computed independently with Python:
        //   def fnv(app, user):
        //       h = 0xcbf29ce484222325
        //       for b in app.encode() + b'\xff' + user.encode():
        //           h ^= b; h = (h * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
        //       return h
        //   fnv("app-1", "user-9")        = 0x5612c360a6dcee82  % 16 = 2,  % 7 = 3
        //   fnv("app-1", "user-10")       = 0x1eebbf3b89807b5e  % 16 = 14, % 7 = 6
        //   fnv("fleet", "driver-0001")   = 0x71e3c3311eee3396  % 16 = 6,  % 7 = 4
        //   fnv("ab", "c")                = 0xfdf3a083ef9bc024  % 16 = 4
        //   fnv("a", "bc")                = 0xd2b3f5819298d9d6  % 16 = 6
        #expect(Envelope.fnv1a(DeviceID(app: "app-1", user: "user-9")) == 0x5612_C360_A6DC_EE82)
        #expect(Envelope.fnv1a(DeviceID(app: "ab", user: "c")) == 0xFDF3_A083_EF9B_C024)
        #expect(Envelope.shard(of: DeviceID(app: "app-1", user: "user-9"), shards: 16) == 2)
        #expect(Envelope.shard(of: DeviceID(app: "app-1", user: "user-9"), shards: 7) == 3)
        #expect(Envelope.shard(of: DeviceID(app: "app-1", user: "user-10"), shards: 16) == 14)
        #expect(Envelope.shard(of: DeviceID(app: "app-1", user: "user-10"), shards: 7) == 6)
        #expect(Envelope.shard(of: DeviceID(app: "fleet", user: "driver-0001"), shards: 16) == 6)
        #expect(Envelope.shard(of: DeviceID(app: "fleet", user: "driver-0001"), shards: 7) == 4)
        #expect(Envelope.shard(of: DeviceID(app: "ab", user: "c"), shards: 16) == 4)
        #expect(Envelope.shard(of: DeviceID(app: "a", user: "bc"), shards: 16) == 6)
        #expect(Envelope.shard(of: DeviceID(app: "anything", user: "at all"), shards: 1) == 0)
    }

    @Test func shardsSpreadDevicesEvenly() {
        let shards = 16
        let devices = 16_000
        var counts = [Int](repeating: 0, count: shards)
        for index in 0..<devices {
            counts[Envelope.shard(of: DeviceID(app: "app-\(index % 3)", user: "user-\(index)"), shards: shards)] += 1
        }
        // 1000 expected per shard; a fair hash stays well within ±15 % (σ ≈ 31).
        #expect(counts.allSatisfy { (850...1150).contains($0) }, "\(counts)")
        // The record envelope uses the same shard in its topic.
        let record = Fixtures.records[0]
        let envelope = Envelope.record(record, shards: shards, producer: "i", sequence: 1, sentAt: 1)
        #expect(envelope.topic == Topic.record(shard: Envelope.shard(of: record.device, shards: shards)))
    }
}
