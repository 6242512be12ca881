import Foundation
import Logging
import RecordCodecs
import RoadSaveTestKit
import SystemKit
import Testing
import Wire
import ZeroMQ

@testable import NotifierService

/// Catch-up long-polls (`waitMs`): parsing, the bounded list of held requests, and held requests answered by a real
/// ROUTER when events are stored; and the live socket's choice by libzmq version.
@Suite(.serialized) struct CatchUpLongPollTests {
    func problem(_ text: String) -> String? {
        do {
            _ = try CatchUpRequest(json: Array(text.utf8))
            return nil
        } catch {
            return error.message
        }
    }

    @Test func waitMsIsParsedBoundedAndWrittenBack() throws {
        let request = try CatchUpRequest(json: Array(#"{"after": 4, "waitMs": 2500}"#.utf8))
        #expect(request == CatchUpRequest(start: .position(4), waitMilliseconds: 2500))
        #expect(try CatchUpRequest(json: request.json()) == request)
        #expect(try CatchUpRequest(json: Array(#"{"after": 0, "waitMs": 0}"#.utf8)).waitMilliseconds == 0)
        #expect(try CatchUpRequest(json: Array(#"{"after": 0, "waitMs": 30000}"#.utf8)).waitMilliseconds == 30_000)
        #expect(try CatchUpRequest(json: Array(#"{"after": 0}"#.utf8)).waitMilliseconds == nil)
        // Without waitMs the written request has none (old servers refuse unknown members).
        #expect(!String(decoding: CatchUpRequest(start: .position(1)).json(), as: UTF8.self).contains("waitMs"))
        for bad in ["30001", "-1", "1.5", "\"100\"", "null", "true"] {
            #expect(
                problem(#"{"after": 0, "waitMs": \#(bad)}"#)?.hasPrefix("waitMs must be a whole number from 0 to 30000")
                    == true,
                "\(bad)")
        }
        #expect(problem(#"{"after": 0, "wait": 5}"#)?.contains("optionally max, prefix and waitMs") == true)
    }

    func held(_ peer: String, at deadline: Double) -> HeldCatchUps.Held {
        HeldCatchUps.Held(
            route: [Array(peer.utf8), []], request: CatchUpRequest(start: .position(1), waitMilliseconds: 100),
            sender: CurvePeer(name: "dash", publicKey: String(repeating: "d", count: 40)), deadline: deadline)
    }

    @Test func heldRequestsAreBoundedKeptInOrderAndDroppedWithTheirPeer() {
        var list = HeldCatchUps(capacity: 3)
        #expect(list.nextDeadline == nil)
        let heldThree = [list.hold(held("a", at: 5)), list.hold(held("b", at: 2)), list.hold(held("a", at: 3))]
        #expect(heldThree == [true, true, true])
        let fourth = list.hold(held("c", at: 1))
        #expect(!fourth, "over capacity: refused")
        #expect(list.count == 3 && list.nextDeadline == 2)
        // Due ones in the order they came, not by deadline.
        let due = list.due(now: 3.5)
        #expect(due.map(\.deadline) == [2, 3])
        #expect(list.waiting.map(\.deadline) == [5])
        let more = [list.hold(held("c", at: 9)), list.hold(held("a", at: 7))]
        #expect(more == [true, true])
        let dropped = list.drop(peer: Array("a".utf8))
        #expect(dropped == 2)
        #expect(list.waiting.map(\.peer) == [Array("c".utf8)])
        // Taken out and put back (what `stored()` does): ahead of any held meanwhile.
        let taken = list.takeAll()
        #expect(list.isEmpty)
        let heldMeanwhile = list.hold(held("d", at: 1))
        #expect(heldMeanwhile)
        list.putBack(taken)
        #expect(list.waiting.map(\.peer) == [Array("c".utf8), Array("d".utf8)])
    }

    @Test func theLiveSocketUsesManualModeOnlyFromLibzmq435() {
        #expect(LiveFiltering.choose(keys: false, libzmq: (4, 3, 4)) == .none)
        #expect(LiveFiltering.choose(keys: false, libzmq: (4, 3, 5)) == .none)
        #expect(LiveFiltering.choose(keys: true, libzmq: (4, 3, 4)) == .unlimitedKeysOnly)
        #expect(LiveFiltering.choose(keys: true, libzmq: (4, 2, 9)) == .unlimitedKeysOnly)
        #expect(LiveFiltering.choose(keys: true, libzmq: (3, 9, 9)) == .unlimitedKeysOnly)
        #expect(LiveFiltering.choose(keys: true, libzmq: (4, 3, 5)) == .manual)
        #expect(LiveFiltering.choose(keys: true, libzmq: (4, 4, 0)) == .manual)
        #expect(LiveFiltering.choose(keys: true, libzmq: (5, 0, 0)) == .manual)
        #expect(LiveFiltering.refusal.contains("libzmq 4.3.5") && LiveFiltering.refusal.contains("catch-up"))
    }

    /// A DEALER on the test's thread, one request at a time.
    final class Client {
        let context: ZMQContext
        let socket: ZMQSocket
        init(_ endpoint: String) throws {
            context = try ZMQContext()
            socket = try ZMQSocket(context, .dealer, linger: 0)
            try socket.connect(endpoint)
        }
        func send(_ text: String) throws {
            _ = try socket.send([[], Array(text.utf8)])
        }
        /// The reply's JSON and the seconds it took, nil after `timeout`.
        func reply(timeout: Double) throws -> (value: JSONValue, seconds: Double)? {
            let start = MonotonicClock.now()
            while MonotonicClock.now() - start < timeout {
                let ready = try ZMQPoller.poll([ZMQPollItem(socket)], timeoutMilliseconds: 20)
                if ready.first?.contains(.readable) == true, let frames = try socket.receive(dontWait: true),
                    let last = frames.last
                {
                    return (try JSONText.decode(last), MonotonicClock.now() - start)
                }
            }
            return nil
        }
        func close() {
            socket.close()
            context.terminate()
        }
    }

    static func positions(_ value: JSONValue) -> [Double] {
        guard case .array(let events)? = value["events"] else { return [] }
        return events.compactMap { if case .number(let position)? = $0["position"] { position } else { nil } }
    }

    @Test func aHeldRequestIsAnsweredWhenAnEventIsStoredAndAnEmptyOneWhenItsWaitEnds() async throws {
        let folder = Fixtures.folder()
        defer { Fixtures.remove(folder) }
        let source = FakeEventSource(feedID: "detection-store-1", storePath: folder + "/data/notifier.sqlite")
        let detection = try await FakeDetection(source: source)
        var configuration = NotifierConfiguration()
        configuration.dataDirectory = folder + "/data"
        configuration.eventsEndpoints = [detection.endpoint]
        configuration.publishEndpoint = nil
        configuration.catchUpEndpoint = "tcp://127.0.0.1:*"
        configuration.heartbeatInterval = 0.2
        configuration.logLevel = .error
        let notifier = try RunningNotifier(configuration)
        defer {
            Task {
                await notifier.stop()
                await detection.stop()
            }
        }
        let endpoint = try #require(try await notifier.service.boundEndpoints().catchUp)
        try await detection.add(Fixtures.journey("ana", 1))
        let client = try Client(endpoint)
        defer { client.close() }
        // Stored: the first three are there.
        var head = 0.0
        for _ in 0..<100 {
            try client.send(#"{"after": 0}"#)
            let reply = try #require(try client.reply(timeout: 5))
            if case .number(let value)? = reply.value["head"] { head = value }
            if head == 3 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        try #require(head == 3)

        // Nothing after the head: held until its wait ends, then answered with no events (well before the longest
        // wait a request may ask, 30 s, however busy the machine).
        try client.send(#"{"after": 3, "waitMs": 400}"#)
        let empty = try #require(try client.reply(timeout: 15))
        #expect(Self.positions(empty.value).isEmpty && empty.seconds >= 0.35, "\(empty)")

        // Held with the longest wait; an event stored meanwhile answers it at once: long before the wait's end.
        try client.send(#"{"after": 3, "waitMs": 30000}"#)
        #expect(try client.reply(timeout: 0.5) == nil, "held, not answered")
        let added = MonotonicClock.now()
        try await detection.add(Fixtures.journey("ben", 2))
        let answered = try #require(try client.reply(timeout: 20))
        let delay = MonotonicClock.now() - added
        #expect(Self.positions(answered.value).first == 4, "\(answered.value)")
        #expect(delay < 20, "answered \(delay) s after the event was added, for a wait of 30 s")
    }

    /// A server of its own with room for two held requests: the third is refused naming waitMs; a peer that is gone
    /// has its held requests dropped when answering them fails.
    @Test func heldRequestsOverTheBoundAreRefusedAndThoseOfAGonePeerDropped() async throws {
        let folder = Fixtures.folder()
        defer { Fixtures.remove(folder) }
        let reactor = Reactor(name: "catch-up-test", context: try ZMQContext())
        reactor.start { loop in
            let store = try NotifierStore(path: folder + "/notifier.sqlite", sinks: [])
            try store.store(Fixtures.bodies(Fixtures.journey("ana", 1)), feed: "f", position: 3)
            loop.setValue(store)
            let socket = try loop.socket(.router)
            try socket.setRouterMandatory(true)
            try socket.bind("tcp://127.0.0.1:*")
            loop.setValue(socket.lastEndpoint)
            loop.setValue(
                CatchUpServer(
                    socket: socket, loop: loop, store: store, format: .current, retentionAge: 86_400,
                    log: testLog, maximumHeld: 2))
        }
        defer { reactor.stop() }
        let endpoint = try await reactor.run { loop in loop.value(String.self) ?? "" }
        func heldCount() async throws -> Int {
            try await reactor.run { loop in loop.value(CatchUpServer.self)?.held.count ?? -1 }
        }

        let first = try Client(endpoint)
        let second = try Client(endpoint)
        defer { second.close() }
        try first.send(#"{"after": 3, "waitMs": 20000}"#)
        try first.send(#"{"after": 3, "waitMs": 20000}"#)
        #expect(await eventually(timeout: 60) { (try? await heldCount()) == 2 })
        try second.send(#"{"after": 3, "waitMs": 20000}"#)
        let refused = try #require(try second.reply(timeout: 5))
        guard case .string(let message)? = refused.value["error"] else {
            Issue.record("\(refused)")
            return
        }
        #expect(message.hasPrefix("waitMs: 2 requests are waiting already"), "\(message)")
        // Without waitMs it is answered as ever.
        try second.send(#"{"after": 0}"#)
        #expect(try Self.positions(#require(try second.reply(timeout: 5)).value) == [1, 2, 3])

        // The first peer goes; an event is stored: answering fails, both of its requests are dropped.
        first.close()
        try await Task.sleep(for: .milliseconds(300))
        try await reactor.run { loop in
            try loop.value(NotifierStore.self)?.store(
                Fixtures.bodies(Fixtures.journey("ben", 2)), feed: "f", position: 6)
            loop.value(CatchUpServer.self)?.stored()
        }
        #expect(try await heldCount() == 0)
        // And there is room again.
        try second.send(#"{"after": 6, "waitMs": 20000}"#)
        #expect(await eventually(timeout: 60) { (try? await heldCount()) == 1 })
        try await reactor.run { loop in
            try loop.value(NotifierStore.self)?.store(
                Fixtures.bodies(Fixtures.journey("cai", 3)), feed: "f", position: 9)
            loop.value(CatchUpServer.self)?.stored()
        }
        #expect(try Self.positions(#require(try second.reply(timeout: 5)).value) == [7, 8, 9])
    }
}
