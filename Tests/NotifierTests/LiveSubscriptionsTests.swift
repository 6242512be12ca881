import RoadSaveModel
import Testing
import ZeroMQ

@testable import NotifierService

@Suite struct LiveSubscriptionsTests {
    func b(_ text: String) -> [UInt8] { Array(text.utf8) }
    func texts(_ prefixes: [[UInt8]]) -> [String] { prefixes.map { String(decoding: $0, as: UTF8.self) } }
    func applied(_ requested: String, _ applications: Set<String>?) -> [String] {
        texts(LivePrefixes.applied(requested: b(requested), applications: applications))
    }
    func key(_ name: String, _ applications: Set<String>?) -> CurveAllowList.Entry {
        CurveAllowList.Entry(role: .subscriber, publicKey: "", name: name, applications: applications)
    }

    /// The topics a set of applied prefixes lets through, as libzmq matches them (prefix of the first frame).
    func delivered(_ prefixes: [String], _ topics: [String]) -> [String] {
        topics.filter { topic in prefixes.contains { topic.utf8.starts(with: $0.utf8) } }
    }

    static let topics = [
        "tripDidStart.app-1.u1", "tripDidEnd.app-1.u1", "crashDetected.app-1.u2",
        "tripDidStart.app-10.u1", "crashDetected.app-10.u1", "crashDetected.app-2.u1",
        "tripDidStart.app-2.u3", "crashDetected.app-1.x.y", "crashFollowUp.app-1.u2",
    ]

    @Test func theEventNamesAreThoseOfTheModel() {
        let events = [
            RoadSaveEvent(
                device: DeviceID(app: "a", user: "u"), body: .tripDidStart(TripStartInfo(tripID: "t", startDate: 0))),
            RoadSaveEvent(
                device: DeviceID(app: "a", user: "u"),
                body: .tripDidEnd(
                    TripInfo(
                        tripID: "t", startDate: 0, endDate: 1, distanceMetres: 1, endReason: .stopDelay))),
            RoadSaveEvent(
                device: DeviceID(app: "a", user: "u"),
                body: .crashDetected(
                    CrashInfo(
                        crashID: "c", confidence: .high, detectedAt: 0, latitude: 0, longitude: 0, isTest: false))),
            RoadSaveEvent(
                device: DeviceID(app: "a", user: "u"),
                body: .crashFollowUp(
                    CrashFollowUpInfo(
                        crashID: "c", confidence: .high, detectedAt: 0, observedUntil: 140, outcome: .stationary,
                        isTest: false, records: 1, secondsOfData: 1, distanceMoved: nil, steps: 0, maxSpeedAfter: nil,
                        latitude: nil, longitude: nil))),
            RoadSaveEvent(
                device: DeviceID(app: "a", user: "u"),
                body: .tripBehaviour(
                    TripBehaviour(
                        tripID: "t", endDate: 1, unscored: .tooShort, distanceMetres: 1))),
        ]
        #expect(Set(events.map(\.name)) == Set(LivePrefixes.eventNames))
        #expect(LivePrefixes.eventNames.allSatisfy { !$0.contains(".") })
    }

    @Test func aLimitedKeyGetsOnlyItsApplicationsWhateverItAsks() {
        #expect(
            applied("", ["app-1"]) == [
                "crashDetected.app-1.", "crashFollowUp.app-1.", "tripBehaviour.app-1.", "tripDidEnd.app-1.",
                "tripDidStart.app-1.",
            ])
        #expect(applied("crashDetected", ["app-1"]) == ["crashDetected.app-1."])
        #expect(applied("tripDidStart.app-", ["app-1"]) == ["tripDidStart.app-1."])
        #expect(applied("tripDidStart.app-1", ["app-1"]) == ["tripDidStart.app-1."])
        #expect(applied("tripDidStart.app-1.", ["app-1"]) == ["tripDidStart.app-1."])
        #expect(applied("tripDidStart.app-1.u", ["app-1"]) == ["tripDidStart.app-1.u"])
        #expect(applied("tripDidStart.app-10", ["app-1"]) == [])
        #expect(applied("tripDidStart.app-10.", ["app-1"]) == [])
        #expect(applied("crashDetected.app-2.", ["app-1"]) == [])
        #expect(applied("x", ["app-1"]) == [])
        #expect(
            applied("trip", ["app-1", "app-2"]) == [
                "tripBehaviour.app-1.", "tripBehaviour.app-2.", "tripDidEnd.app-1.",
                "tripDidEnd.app-2.", "tripDidStart.app-1.", "tripDidStart.app-2.",
            ])
        #expect(applied("", []) == [])
        // Every application: as asked.
        #expect(applied("tripDidStart.app-", nil) == ["tripDidStart.app-"])
        #expect(applied("", nil) == [""])
    }

    @Test(
        "what is applied lets through exactly the topics that match the request and belong to the key's applications",
        arguments: [
            "", "t", "trip", "crashDetected", "crashDetected.", "crashDetected.app-", "crashDetected.app-1",
            "crashDetected.app-1.", "crashDetected.app-1.u", "tripDidStart.app-10", "crashDetected.app-1.x",
            "zzz",
        ])
    func exactness(_ requested: String) {
        for applications: Set<String> in [["app-1"], ["app-10"], ["app-1", "app-2"], ["app-2", "app-10"]] {
            let expected = Self.topics.filter { topic in
                topic.hasPrefix(requested) && applications.contains { topic.split(separator: ".")[1] == $0 }
            }
            #expect(
                delivered(applied(requested, applications), Self.topics) == expected, "\(requested) \(applications)")
        }
    }

    @Test func anApplicationWhoseIDHasADotGetsNoLivePrefixForALimitedKey() {
        #expect(applied("", ["app.1"]) == [])
        #expect(
            applied("", ["app.1", "app-2"]) == [
                "crashDetected.app-2.", "crashFollowUp.app-2.", "tripBehaviour.app-2.", "tripDidEnd.app-2.",
                "tripDidStart.app-2.",
            ])
        #expect(!LivePrefixes.separable("a.b") && !LivePrefixes.separable("") && LivePrefixes.separable("app-1"))
    }

    @Test func anUnsubscribeUndoesItsSubscribeButKeepsWhatAnotherRequestOfTheConnectionNeeds() {
        var book = LiveSubscriptions()
        let dash = key("dash", ["app-1"])
        let all = book.subscribe(connection: "1", key: dash, requested: b(""))
        #expect(
            texts(all.subscribe) == [
                "crashDetected.app-1.", "crashFollowUp.app-1.", "tripBehaviour.app-1.", "tripDidEnd.app-1.",
                "tripDidStart.app-1.",
            ])
        #expect(
            texts(book.subscribe(connection: "1", key: dash, requested: b("crash")).subscribe) == [
                "crashDetected.app-1.", "crashFollowUp.app-1.",
            ])
        // Another connection of the same key is its own.
        _ = book.subscribe(connection: "2", key: dash, requested: b("crash"))
        // "crash" goes; "" still needs crashDetected.app-1. and crashFollowUp.app-1.
        #expect(book.unsubscribe(connection: "1", key: dash, requested: b("crash")) == LiveSubscriptions.Change())
        #expect(
            texts(book.unsubscribe(connection: "1", key: dash, requested: b("")).unsubscribe)
                == [
                    "crashDetected.app-1.", "crashFollowUp.app-1.", "tripBehaviour.app-1.", "tripDidEnd.app-1.",
                    "tripDidStart.app-1.",
                ])
        #expect(
            texts(book.unsubscribe(connection: "2", key: dash, requested: b("crash")).unsubscribe) == [
                "crashDetected.app-1.", "crashFollowUp.app-1.",
            ])
        #expect(book.connectionCount == 0)
    }

    @Test func aRepeatedSubscribeAppliesTheSameAndOneUnsubscribeRemovesIt() {
        var book = LiveSubscriptions()
        let dash = key("dash", ["app-1"])
        let first = book.subscribe(connection: "1", key: dash, requested: b("trip"))
        // The key's applications changed meanwhile (SIGHUP): the unsubscribe still undoes what was applied.
        let second = book.subscribe(connection: "1", key: key("dash", ["app-2"]), requested: b("trip"))
        #expect(first == second)
        #expect(
            book.unsubscribe(connection: "1", key: key("dash", ["app-2"]), requested: b("trip")).unsubscribe
                == first.subscribe)
        #expect(book.connectionCount == 0)
    }

    @Test func aKeyNoLongerListedIsRefused() {
        var book = LiveSubscriptions()
        #expect(book.subscribe(connection: "1", key: nil, requested: b("")) == LiveSubscriptions.Change())
        #expect(book.unsubscribe(connection: "1", key: nil, requested: b("")) == LiveSubscriptions.Change())
        #expect(book.connectionCount == 0)
        // Revoked after subscribing: its unsubscribe still undoes what was applied.
        let applied = book.subscribe(connection: "2", key: key("dash", ["app-1"]), requested: b("crash"))
        #expect(book.unsubscribe(connection: "2", key: nil, requested: b("crash")).unsubscribe == applied.subscribe)
    }

    @Test func theBookIsBoundedAndAForgottenConnectionUnsubscribesWhatItsKeyGivesNow() {
        var book = LiveSubscriptions(capacity: 2)
        let dash = key("dash", ["app-1"])
        for connection in ["1", "2", "3"] {
            _ = book.subscribe(connection: connection, key: dash, requested: b("crash"))
        }
        #expect(book.connectionCount == 2)
        #expect(
            texts(book.unsubscribe(connection: "1", key: dash, requested: b("crash")).unsubscribe) == [
                "crashDetected.app-1.", "crashFollowUp.app-1.",
            ])
    }

    @Test func eventsOfADottedApplicationAreWithheldOnlyWhileALimitedKeyCouldMatchThem() {
        var book = LiveSubscriptions()
        _ = book.subscribe(connection: "1", key: key("all", nil), requested: b(""))
        #expect(!book.withholds(application: "app.1"))
        _ = book.subscribe(connection: "2", key: key("dash", ["app", "x"]), requested: b("crashDetected"))
        #expect(book.withholds(application: "app.1"))
        #expect(book.withholds(application: "x.y.z"))
        #expect(!book.withholds(application: "app-1.z"))
        #expect(!book.withholds(application: "app"))
        // A request that gives "x" nothing does not count it.
        var other = LiveSubscriptions()
        _ = other.subscribe(connection: "1", key: key("dash", ["app", "x"]), requested: b("crashDetected.app."))
        #expect(other.withholds(application: "app.1") && !other.withholds(application: "x.1"))
    }
}
