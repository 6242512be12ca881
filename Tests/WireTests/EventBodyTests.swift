import RecordCodecs
import RoadSaveModel
import Testing

@testable import Wire

@Suite("Event bodies")
struct EventBodyTests {
    @Test(arguments: Fixtures.events)
    func eventBodiesRoundTripEveryField(_ event: RoadSaveEvent) throws {
        let read = try EventBody.decode(EventBody.encode(event))
        #expect(read == event)
        #expect(read.eventID == event.eventID)
        // Field by field, so that a broken Equatable could not hide a loss.
        switch (read.body, event.body) {
        case (.tripDidStart(let a), .tripDidStart(let b)):
            #expect(a.tripID == b.tripID && a.startDate == b.startDate)
        case (.tripDidEnd(let a), .tripDidEnd(let b)):
            #expect(a.tripID == b.tripID && a.startDate == b.startDate && a.endDate == b.endDate)
            #expect(a.distanceMetres == b.distanceMetres && a.endReason == b.endReason)
            #expect(a.transportMode == b.transportMode && a.transportReason == b.transportReason)
            #expect(a.transportSigns == b.transportSigns)
            #expect(a.startLatitude == b.startLatitude && a.startLongitude == b.startLongitude)
            #expect(a.endLatitude == b.endLatitude && a.endLongitude == b.endLongitude && a.maxSpeed == b.maxSpeed)
        case (.crashDetected(let a), .crashDetected(let b)):
            #expect(a.crashID == b.crashID && a.confidence == b.confidence && a.detectedAt == b.detectedAt)
            #expect(a.latitude == b.latitude && a.longitude == b.longitude && a.isTest == b.isTest)
            #expect(a.details == b.details)
            if let x = a.details, let y = b.details {
                #expect(x.speedBeforeImpact == y.speedBeforeImpact && x.speedAfterImpact == y.speedAfterImpact)
                #expect(x.deltaV == y.deltaV && x.peakG == y.peakG && x.impactDurationMs == y.impactDurationMs)
                #expect(x.impacts == y.impacts && x.heading == y.heading && x.positionAccuracy == y.positionAccuracy)
                #expect(x.positionAge == y.positionAge && x.positionTrusted == y.positionTrusted)
                #expect(x.recentPositions == y.recentPositions && x.inTrip == y.inTrip && x.tripID == y.tripID)
            }
        case (.crashFollowUp(let a), .crashFollowUp(let b)):
            #expect(a.crashID == b.crashID && a.confidence == b.confidence && a.detectedAt == b.detectedAt)
            #expect(a.observedUntil == b.observedUntil && a.outcome == b.outcome && a.isTest == b.isTest)
            #expect(a.records == b.records && a.secondsOfData == b.secondsOfData && a.distanceMoved == b.distanceMoved)
            #expect(a.steps == b.steps && a.maxSpeedAfter == b.maxSpeedAfter)
            #expect(a.latitude == b.latitude && a.longitude == b.longitude)
        case (.tripBehaviour(let a), .tripBehaviour(let b)):
            #expect(a.tripID == b.tripID && a.endDate == b.endDate && a.distanceMetres == b.distanceMetres)
            #expect(a.unscored == b.unscored && a.score == b.score && a.eventsScore == b.eventsScore)
            #expect(a.smoothnessScore == b.smoothnessScore && a.eventsPer100Kilometres == b.eventsPer100Kilometres)
            #expect(a.longitudinalRMS == b.longitudinalRMS && a.lateralRMS == b.lateralRMS)
            #expect(a.events.count == b.events.count)
            for (x, y) in zip(a.events, b.events) {
                #expect(x.kind == y.kind && x.severity == y.severity && x.start == y.start && x.end == y.end)
                #expect(x.peak == y.peak && x.startSpeed == y.startSpeed && x.endSpeed == y.endSpeed)
                #expect(x.latitude == y.latitude && x.longitude == y.longitude && x.fixes == y.fixes)
            }
        default:
            Issue.record("kind changed: \(read.name) ≠ \(event.name)")
        }
        #expect(read.device == event.device)
    }

    @Test func eventBodyIsTheDocumentedMap() throws {
        func keys(_ event: RoadSaveEvent) throws -> [String] {
            guard case .object(let members) = try MessagePack.decode(EventBody.encode(event)) else { return [] }
            return members.map(\.0)
        }
        let device = DeviceID(app: "a", user: "u")
        #expect(
            try keys(RoadSaveEvent(device: device, body: .tripDidStart(TripStartInfo(tripID: "t", startDate: 1))))
                == ["event", "app", "user", "tripID", "startDate"])
        #expect(
            try keys(
                RoadSaveEvent(
                    device: device,
                    body: .tripDidEnd(
                        TripInfo(
                            tripID: "t", startDate: 1, endDate: 2, distanceMetres: 3, endReason: .steps))))
                == [
                    "event", "app", "user", "tripID", "startDate", "endDate", "distanceMetres", "endReason",
                    "transportMode", "transportReason",
                ])
        // A body stored before rides were judged has no transport members: unknown, not classified.
        let old = MessagePack.encode(
            .object([
                ("event", .string("tripDidEnd")), ("app", .string("a")), ("user", .string("u")),
                ("tripID", .string("t")),
                ("startDate", .number(1)), ("endDate", .number(2)), ("distanceMetres", .number(3)),
                ("endReason", .string("steps")),
            ]))
        guard case .tripDidEnd(let info) = try EventBody.decode(old).body else {
            Issue.record("not a tripDidEnd")
            return
        }
        #expect(info.transportMode == .unknown && info.transportReason == .notClassified && info.transportSigns.isEmpty)
        // The signs seen come last, only when there are any.
        let signed = RoadSaveEvent(
            device: device,
            body: .tripDidEnd(
                TripInfo(
                    tripID: "t", startDate: 1, endDate: 2, distanceMetres: 3, endReason: .steps, transportMode: .bus,
                    transportReason: .boardedAfterWaiting, transportSigns: [.boardedAfterWaiting, .regularDwellStops])))
        #expect(try keys(signed).last == "transportSigns")
        #expect(
            try MessagePack.decode(EventBody.encode(signed))["transportSigns"]
                == .array([.string("boardedAfterWaiting"), .string("regularDwellStops")]))
        #expect(try EventBody.decode(EventBody.encode(signed)) == signed)
        let badSign = MessagePack.encode(
            .object([
                ("event", .string("tripDidEnd")), ("app", .string("a")), ("user", .string("u")),
                ("tripID", .string("t")),
                ("startDate", .number(1)), ("endDate", .number(2)), ("distanceMetres", .number(3)),
                ("endReason", .string("steps")),
                ("transportSigns", .array([.string("railSpeed"), .string("teleport")])),
            ]))
        #expect(throws: WireError.self) { try EventBody.decode(badSign) }
        do {
            _ = try EventBody.decode(badSign)
        } catch {
            #expect(error.path == "transportSigns[1]", "the error names the member: \(error)")
        }
        // Where the trip went comes last, each member only when known; bodies stored before it have none.
        let located = RoadSaveEvent(
            device: device,
            body: .tripDidEnd(
                TripInfo(
                    tripID: "t", startDate: 1, endDate: 2, distanceMetres: 3, endReason: .steps,
                    startLatitude: -33.9249,
                    startLongitude: 18.4241, endLatitude: -33.91, endLongitude: 18.5, maxSpeed: 13.25)))
        #expect(
            try keys(located).suffix(5) == [
                "startLatitude", "startLongitude", "endLatitude", "endLongitude", "maxSpeed",
            ])
        #expect(try EventBody.decode(EventBody.encode(located)) == located)
        guard case .tripDidEnd(let unlocated) = try EventBody.decode(old).body else { return }
        #expect(unlocated.startLatitude == nil && unlocated.endLongitude == nil && unlocated.maxSpeed == nil)
        let badSpeed = MessagePack.encode(
            .object([
                ("event", .string("tripDidEnd")), ("app", .string("a")), ("user", .string("u")),
                ("tripID", .string("t")),
                ("startDate", .number(1)), ("endDate", .number(2)), ("distanceMetres", .number(3)),
                ("endReason", .string("steps")), ("maxSpeed", .string("fast")),
            ]))
        do {
            _ = try EventBody.decode(badSpeed)
            Issue.record("a maxSpeed that is not a number was read")
        } catch {
            #expect(error.path == "maxSpeed", "the error names the member: \(error)")
        }
        // A crash without a position keeps its latitude and longitude keys, as nil (never a made-up 0,0).
        let crash = RoadSaveEvent(
            device: device,
            body: .crashDetected(
                CrashInfo(
                    crashID: "c", confidence: .medium, detectedAt: 1_718_708_300.000_1, latitude: nil, longitude: nil,
                    isTest: true)))
        #expect(
            try keys(crash) == [
                "event", "app", "user", "crashID", "confidence", "detectedAt", "latitude",
                "longitude", "isTest",
            ])
        let value = try MessagePack.decode(EventBody.encode(crash))
        #expect(value["latitude"] == .null && value["longitude"] == .null)
        #expect(value["event"] == .string("crashDetected") && value["confidence"] == .string("medium"))
        #expect(try EventBody.decode(EventBody.encode(crash)) == crash)
    }

    @Test func fixturesCoverEveryEventVariant() {
        let reasons = Set(
            Fixtures.events.compactMap { if case .tripDidEnd(let info) = $0.body { info.endReason } else { nil } })
        #expect(reasons == Set(TripEndReason.allCases))
        let crashes = Fixtures.events.compactMap { if case .crashDetected(let info) = $0.body { info } else { nil } }
        #expect(Set(crashes.map(\.confidence)) == Set(CrashConfidence.allCases))
        #expect(Set(crashes.map(\.isTest)) == [false, true])
        #expect(crashes.contains { $0.details != nil } && crashes.contains { $0.details == nil })
        let outcomes = Fixtures.events.compactMap {
            if case .crashFollowUp(let info) = $0.body { info.outcome } else { nil }
        }
        #expect(Set(outcomes) == Set(CrashFollowUpOutcome.allCases))
        #expect(Set(Fixtures.events.map(\.name)) == Set(RoadSaveEvent.names))
    }

    @Test func crashDetailsAndFollowUpsAreTheDocumentedMap() throws {
        func keys(_ event: RoadSaveEvent) throws -> [String] {
            guard case .object(let members) = try MessagePack.decode(EventBody.encode(event)) else { return [] }
            return members.map(\.0)
        }
        let detailed = try #require(
            Fixtures.events.first {
                if case .crashDetected(let info) = $0.body { info.crashID == "crash-detailed" } else { false }
            })
        #expect(
            try keys(detailed) == [
                "event", "app", "user", "crashID", "confidence", "detectedAt", "latitude", "longitude",
                "isTest", "peakG", "impacts", "positionTrusted", "inTrip", "tripID", "recentPositions",
                "speedBeforeImpact", "speedAfterImpact", "deltaV", "impactDurationMs", "heading",
                "positionAccuracy", "positionAge",
            ])
        guard case .array(let positions)? = try MessagePack.decode(EventBody.encode(detailed))["recentPositions"] else {
            Issue.record("recentPositions is not an array")
            return
        }
        #expect(positions.first == .array([.number(-33.92481), .number(18.42405), .number(1_718_708_398.85)]))
        // Unknown numbers are left out; a crash with details but no trip has no tripID.
        let bare = try #require(
            Fixtures.events.first {
                if case .crashDetected(let info) = $0.body { info.crashID == "crash-bare" } else { false }
            })
        #expect(
            try keys(bare) == [
                "event", "app", "user", "crashID", "confidence", "detectedAt", "latitude", "longitude",
                "isTest", "peakG", "impacts", "positionTrusted", "inTrip", "recentPositions",
            ])
        let silent = try #require(
            Fixtures.events.first {
                if case .crashFollowUp(let info) = $0.body { info.outcome == .deviceSilent } else { false }
            })
        #expect(
            try keys(silent) == [
                "event", "app", "user", "crashID", "confidence", "detectedAt", "observedUntil", "outcome",
                "isTest", "records", "secondsOfData", "steps", "latitude", "longitude",
            ])
        // Errors name the member.
        let device: [(String, JSONValue)] = [("app", .string("a")), ("user", .string("u"))]
        let crashHead: [(String, JSONValue)] =
            [("event", .string("crashDetected"))] + device + [
                ("crashID", .string("c")), ("confidence", .string("high")), ("detectedAt", .number(1)),
                ("latitude", .null), ("longitude", .null), ("isTest", .bool(false)), ("peakG", .number(9)),
            ]
        for (members, path) in [
            (crashHead, "impacts"),
            (crashHead + [("impacts", .number(1.5))], "impacts"),
            (
                crashHead + [
                    ("impacts", .number(1)), ("positionTrusted", .bool(true)), ("inTrip", .bool(false)),
                    ("recentPositions", .array([.array([.number(1), .number(2)])])),
                ], "recentPositions[0]"
            ),
            (crashHead + [("impacts", .number(1)), ("positionTrusted", .string("yes"))], "positionTrusted"),
            (
                [("event", .string("crashFollowUp"))] + device + [
                    ("crashID", .string("c")), ("confidence", .string("high")), ("detectedAt", .number(1)),
                    ("observedUntil", .number(141)), ("outcome", .string("fine")),
                ], "outcome"
            ),
            (
                [("event", .string("crashFollowUp"))] + device + [
                    ("crashID", .string("c")), ("confidence", .string("high")), ("detectedAt", .number(1)),
                    ("observedUntil", .number(141)), ("outcome", .string("stationary")), ("isTest", .bool(false)),
                    ("records", .number(-1)),
                ], "records"
            ),
        ] as [([(String, JSONValue)], String)] {
            do {
                _ = try EventBody.decode(MessagePack.encode(.object(members)))
                Issue.record("read a body whose \(path) is wrong")
            } catch {
                #expect(error.path == path, "\(error)")
            }
        }
    }

    @Test func tripBehaviourIsTheDocumentedMap() throws {
        func keys(_ value: JSONValue) -> [String] {
            guard case .object(let members) = value else { return [] }
            return members.map(\.0)
        }
        let scored = try #require(
            Fixtures.events.first { if case .tripBehaviour(let info) = $0.body { info.unscored == nil } else { false } }
        )
        let value = try MessagePack.decode(EventBody.encode(scored))
        #expect(
            keys(value) == [
                "event", "app", "user", "tripID", "endDate", "distanceMetres", "score", "eventsScore",
                "smoothnessScore", "eventsPer100Kilometres", "longitudinalRMS", "lateralRMS", "events",
            ])
        guard case .array(let items)? = value["events"], let first = items.first else {
            Issue.record("events is not an array")
            return
        }
        #expect(
            keys(first) == [
                "kind", "severity", "start", "end", "peak", "startSpeed", "endSpeed", "latitude",
                "longitude", "fixes",
            ])
        // Unscored: the reason instead of the figures.
        let unscored = RoadSaveEvent(
            device: DeviceID(app: "a", user: "u"),
            body: .tripBehaviour(
                TripBehaviour(
                    tripID: "t", endDate: 2, unscored: .notCar, distanceMetres: 3)))
        #expect(
            keys(try MessagePack.decode(EventBody.encode(unscored)))
                == ["event", "app", "user", "tripID", "endDate", "distanceMetres", "unscoredReason", "events"])
        // Errors name the member, inside an event too.
        let head: [(String, JSONValue)] = [
            ("event", .string("tripBehaviour")), ("app", .string("a")), ("user", .string("u")),
            ("tripID", .string("t")), ("endDate", .number(2)), ("distanceMetres", .number(3)),
        ]
        let goodEvent: [(String, JSONValue)] = [
            ("kind", .string("hardBraking")), ("severity", .string("harsh")), ("start", .number(1)),
            ("end", .number(2)),
            ("peak", .number(-3.5)), ("startSpeed", .number(15)), ("endSpeed", .number(8)), ("latitude", .number(1)),
            ("longitude", .number(2)), ("fixes", .number(3)),
        ]
        for (members, path) in [
            (head + [("unscoredReason", .string("bored"))], "unscoredReason"),
            (head + [("events", .string("none"))], "events"),
            (head + [("events", .array([.number(1)]))], "events[0]"),
            (
                head + [
                    (
                        "events",
                        .array([
                            .object(goodEvent), .object(goodEvent.map { $0.0 == "kind" ? ($0.0, .string("x")) : $0 }),
                        ])
                    )
                ],
                "events[1].kind"
            ),
            (head + [("events", .array([.object(goodEvent.filter { $0.0 != "peak" })]))], "events[0].peak"),
            (
                head + [("events", .array([.object(goodEvent.map { $0.0 == "fixes" ? ($0.0, .number(-1)) : $0 })]))],
                "events[0].fixes"
            ),
        ] as [([(String, JSONValue)], String)] {
            do {
                _ = try EventBody.decode(MessagePack.encode(.object(members)))
                Issue.record("read a body whose \(path) is wrong")
            } catch {
                #expect(error.path == path, "\(error)")
            }
        }
        #expect(
            try EventBody.decode(MessagePack.encode(.object(head + [("events", .array([.object(goodEvent)]))])))
                .name == "tripBehaviour")
    }

    @Test func eventBodyErrorsNameTheField() {
        func eventError(_ members: [(String, JSONValue)]) -> WireError? {
            do {
                let event = try EventBody.decode(MessagePack.encode(.object(members)))
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
        // A body always writes the flag: null is no default (a test crash must never read as a real one), while the
        // same map read as JSON takes an absent flag for false (events written before it).
        #expect(eventError(crash + [("isTest", .null)])?.path == "isTest")
        #expect(
            eventError(crash.filter { $0.0 != "latitude" } + [("isTest", .bool(false))])?.path == "latitude",
            "a body keeps a crash's position keys, nil when unknown")
        guard case .crashDetected(let info)? = try? EventJSONReader.event(from: .object(crash), legacy: "legacy").body
        else {
            Issue.record("the same crash as JSON was not read")
            return
        }
        #expect(info.isTest == false)
        #expect(
            eventError(crash.map { $0.0 == "confidence" ? ($0.0, .string("none")) : $0 } + [("isTest", .bool(false))])?
                .path == "confidence")
        #expect(
            eventError([
                ("event", .string("tripDidEnd")), ("app", .string("a")), ("user", .string("u")),
                ("tripID", .string("t")), ("startDate", .number(1)), ("endDate", .number(2)),
                ("distanceMetres", .number(3)), ("endReason", .string("boredom")),
            ])?.path == "endReason")
        #expect(
            eventError([("event", .string("tripDidWobble")), ("app", .string("a")), ("user", .string("u"))])?.path
                == "event")
        #expect(
            eventError([("event", .string("tripDidStart")), ("app", .string("")), ("user", .string("u"))])?.path
                == "app")
        #expect(throws: WireError.self) { try EventBody.decode(MessagePack.encode(.array([]))) }
    }
}
