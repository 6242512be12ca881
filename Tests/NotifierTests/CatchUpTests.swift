import Foundation
import RecordCodecs
import RoadSaveModel
import Testing
import Wire
import ZeroMQ

@testable import NotifierService

@Suite struct CatchUpTests {
    func request(_ text: String) throws(CatchUpRequest.Problem) -> CatchUpRequest {
        try CatchUpRequest(json: Array(text.utf8))
    }

    func problem(_ text: String) -> String? {
        do {
            _ = try request(text)
            return nil
        } catch {
            return error.message
        }
    }

    @Test func parsesRequests() throws {
        #expect(try request(#"{"after": 0}"#) == CatchUpRequest(start: .position(0)))
        #expect(
            try request(#"{"after": 42, "max": 10, "prefix": "crashDetected.app-1."}"#)
                == CatchUpRequest(start: .position(42), max: 10, prefix: "crashDetected.app-1."))
        #expect(
            try request(#"{"afterEventID": "abc", "max": 10000, "prefix": ""}"#)
                == CatchUpRequest(start: .eventID("abc"), max: 10000))
        let round = CatchUpRequest(start: .eventID("e-1"), max: 7, prefix: "trip")
        #expect(try CatchUpRequest(json: round.json()) == round)
    }

    @Test func badRequestsNameTheField() {
        #expect(problem("{")?.hasPrefix("a catch-up request is one JSON object") == true)
        #expect(problem("[1]") == "a catch-up request is a JSON object, found an array")
        #expect(problem("{}")?.hasPrefix("after: missing") == true)
        #expect(problem(#"{"after": 1, "afterEventID": "x"}"#)?.hasPrefix("after and afterEventID") == true)
        #expect(problem(#"{"after": -1}"#)?.hasPrefix("after must be a whole number") == true)
        #expect(problem(#"{"after": 1.5}"#)?.hasPrefix("after must be a whole number") == true)
        #expect(problem(#"{"after": "1"}"#)?.hasPrefix("after must be a whole number") == true)
        #expect(problem(#"{"afterEventID": 5}"#)?.hasPrefix("afterEventID must be a non-empty string") == true)
        #expect(problem(#"{"after": 0, "max": 0}"#)?.hasPrefix("max must be a whole number from 1 to 10000") == true)
        #expect(problem(#"{"after": 0, "max": 10001}"#)?.hasPrefix("max must be") == true)
        #expect(problem(#"{"after": 0, "prefix": 3}"#)?.hasPrefix("prefix must be a string") == true)
        #expect(problem(#"{"after": 0, "since": 3}"#)?.hasPrefix("since: unknown member") == true)
    }

    /// A store with events 1…9 (three devices' journeys), the first two expired.
    func store(_ folder: String) throws -> (NotifierStore, [RoadSaveEvent]) {
        let store = try NotifierStore(path: folder + "/notifier.sqlite", sinks: [])
        let events = Fixtures.journey("ana", 1) + Fixtures.journey("ben", 2) + Fixtures.journey("cai", 3, app: "app-2")
        try store.store(Fixtures.bodies(Array(events.prefix(2))), feed: "f", position: 2, now: 1000)
        try store.store(Fixtures.bodies(Array(events.dropFirst(2))), feed: "f", position: 9, now: 5000)
        try store.expire(storedBefore: 2000)
        return (store, events)
    }

    func answer(_ text: String, _ store: NotifierStore, format: EventFormat = .current) throws -> JSONValue {
        try JSONText.decode(
            CatchUpServer.answer(Array(text.utf8), store: store, format: format, retentionAge: 7 * 86_400))
    }

    @Test func repliesWithEventsHeadAndNext() throws {
        let folder = Fixtures.folder()
        defer { Fixtures.remove(folder) }
        let (store, events) = try store(folder)

        let all = try CatchUpReply(json: JSONText.bytes(try answer(#"{"after": 2}"#, store)))
        #expect(all.events.map(\.position) == Array(3...9))
        #expect(all.head == 9 && all.next == 9)
        #expect(all.events[0].topic == "tripDidEnd.app-1.ana")
        #expect(all.events[0].event == (try JSONText.decode(Array(events[2].json(.current).utf8))))

        // A full reply stops at its last event: ask again from `next`.
        let page = try CatchUpReply(json: JSONText.bytes(try answer(#"{"after": 2, "max": 3}"#, store)))
        #expect(page.events.map(\.position) == [3, 4, 5])
        #expect(page.next == 5 && page.head == 9)

        // By eventID: the events after it.
        let byID = try CatchUpReply(
            json: JSONText.bytes(try answer(#"{"afterEventID": "\#(events[5].eventID)"}"#, store)))
        #expect(byID.events.map(\.position) == [7, 8, 9])

        // A prefix: only matching topics; the reply still reaches the head.
        let crashes = try CatchUpReply(
            json: JSONText.bytes(try answer(#"{"after": 2, "prefix": "crashDetected.app-1."}"#, store)))
        #expect(crashes.events.map(\.position) == [5])
        #expect(crashes.next == 9)

        // At the head: nothing, and next is the head.
        let none = try CatchUpReply(json: JSONText.bytes(try answer(#"{"after": 9}"#, store)))
        #expect(none.events.isEmpty && none.next == 9)

        // The PUB socket's format.
        let legacy = try answer(#"{"after": 7, "max": 1}"#, store, format: .legacy)
        guard case .array(let items)? = legacy["events"], let first = items.first else {
            Issue.record("no events")
            return
        }
        #expect(first["event"]?["timestamp"] != nil)
    }

    @Test func errorsSayWhy() throws {
        let folder = Fixtures.folder()
        defer { Fixtures.remove(folder) }
        let (store, events) = try store(folder)
        func error(_ text: String) throws -> String? {
            guard case .string(let message)? = try answer(text, store)["error"] else { return nil }
            return message
        }
        #expect(try error(#"{"after": 10}"#) == "after: position 10 is ahead of the newest (9)")
        #expect(
            try error(#"{"after": 1}"#)
                == "after: position 1 is older than the retention window (7 days): the oldest event kept is at position 3"
        )
        // 0: everything kept.
        #expect(try error(#"{"after": 0}"#) == nil)
        #expect(try CatchUpReply(json: JSONText.bytes(try answer(#"{"after": 0}"#, store))).events.first?.position == 3)
        #expect(try error(#"{"after": 2}"#) == nil)
        #expect(
            try error(#"{"afterEventID": "\#(events[0].eventID)"}"#)
                == "afterEventID: unknown eventID \(events[0].eventID) (never stored here, or older than the retention window of 7 days)"
        )
        #expect(try error(#"{"max": 3}"#)?.hasPrefix("after: missing") == true)
        #expect(throws: CatchUpRequest.Problem.self) {
            try CatchUpReply(json: Array(#"{"error": "after: bad"}"#.utf8))
        }
    }

    @Test func anotherApplicationsEventIDAnswersExactlyLikeAnUnknownOneForALimitedKey() throws {
        let folder = Fixtures.folder()
        defer { Fixtures.remove(folder) }
        let (store, events) = try store(folder)
        let dash = CurveAllowList.Entry(role: .subscriber, publicKey: "", name: "dash", applications: ["app-1"])
        func reply(_ text: String, key: CurveAllowList.Entry?) -> String {
            String(
                decoding: CatchUpServer.answer(
                    Array(text.utf8), store: store, format: .current,
                    retentionAge: 7 * 86_400, key: key), as: UTF8.self)
        }
        let otherApp = events[7]
        #expect(otherApp.device.app == "app-2")
        let unknown = "no-such-event"
        func unknownReply(_ id: String) -> String {
            #"{"error":"afterEventID: unknown eventID \#(id) (never stored here, or older than the retention window of 7 days)"}"#
        }
        #expect(reply(#"{"afterEventID": "\#(otherApp.eventID)"}"#, key: dash) == unknownReply(otherApp.eventID))
        #expect(reply(#"{"afterEventID": "\#(unknown)"}"#, key: dash) == unknownReply(unknown))
        // A key of every application, and the key's own application, get the events after it.
        #expect(
            try CatchUpReply(json: Array(reply(#"{"afterEventID": "\#(otherApp.eventID)"}"#, key: nil).utf8)).next == 9)
        let own = try CatchUpReply(json: Array(reply(#"{"afterEventID": "\#(events[3].eventID)"}"#, key: dash).utf8))
        #expect(own.events.map(\.position) == [5, 6] && own.next == 9)
    }
}
