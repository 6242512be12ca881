import Feeds
import Foundation
import NotifierService
import RoadSaveModel
import RoadSaveTestKit
import Storage
import SystemKit
import Wire
import ZeroMQ

/// detection's side of the event feed, faked: a list of event bodies served by the real `FeedServer`. Each
/// acknowledgement is noted with the position the notifier had committed for this feed at that moment (read from its
/// store with a connection of our own), so a test can check that nothing is acknowledged before it is stored.
final class FakeEventSource: FeedSource, @unchecked Sendable {
    // @unchecked: used on the feed server's reactor thread only; tests read `acknowledgements` through `Locked`.
    var feedID: String
    private var items: [[UInt8]] = []
    private let storePath: String
    let acknowledgements = Locked<[(acknowledged: UInt64, committed: UInt64)]>([])

    init(feedID: String, storePath: String) {
        self.feedID = feedID
        self.storePath = storePath
    }

    var head: UInt64 { UInt64(items.count) }

    func add(_ events: [RoadSaveEvent]) {
        items += events.map(EventBody.encode)
    }

    func read(_ request: FeedRequest) throws -> FeedBatch {
        let start = Int(request.after)
        let end = min(items.count, start + request.maxItems)
        guard start < end else { return FeedBatch(items: [], to: request.after) }
        return FeedBatch(items: items[start..<end].map { $0[...] }, to: UInt64(end))
    }

    func acknowledged(_ request: FeedRequest) {
        guard request.acknowledged > 0 else { return }
        let committed =
            (try? SQLiteDatabase(path: storePath).statement("SELECT position FROM upstream WHERE feed = ?")
                .integer(feedID)) ?? nil
        acknowledgements.withLock { $0.append((request.acknowledged, UInt64(committed ?? 0))) }
    }
}

/// A `FeedServer` on a reactor of its own, bound to a free loopback port.
final class FakeDetection: @unchecked Sendable {
    let reactor: Reactor
    let source: FakeEventSource
    let endpoint: String

    init(source: FakeEventSource) async throws {
        self.source = source
        reactor = Reactor(name: "fake-detection", context: try ZMQContext())
        let log = testLog
        reactor.start { loop in
            let socket = try loop.socket(.router)
            try socket.bind("tcp://127.0.0.1:*")
            loop.setValue(FeedServer(socket: socket, loop: loop, source: source, log: log))
            loop.setValue(socket.lastEndpoint)
        }
        endpoint = try await reactor.run { loop in loop.value(String.self) ?? "" }
    }

    /// Adds events to the feed (answering held fetches).
    func add(_ events: [RoadSaveEvent]) async throws {
        let source = source
        try await reactor.run { loop in
            source.add(events)
            loop.value(FeedServer.self)?.itemsAdded()
        }
    }

    func stop() async {
        reactor.stop()
        _ = await reactor.finished()
    }
}

/// The notifier service run in this process, on a thread of its own (its `run()` blocks).
final class RunningNotifier: @unchecked Sendable {
    let service: NotifierService
    private let finished = Locked<Bool>(false)
    let failure = Locked<String?>(nil)

    init(_ configuration: NotifierConfiguration) throws {
        service = try NotifierService(configuration: configuration)
        let thread = Thread { [service, finished, failure] in
            do {
                try service.run()
            } catch {
                failure.withLock { $0 = "\(error)" }
            }
            finished.withLock { $0 = true }
        }
        thread.start()
    }

    var isFinished: Bool { finished.current }

    func stop() async {
        service.stop()
        _ = await eventually(timeout: 120) { finished.current }
    }
}

/// A SUB socket on its own reactor, keeping every message.
final class TestSubscriber: @unchecked Sendable {
    let reactor: Reactor
    let messages = Locked<[[[UInt8]]]>([])

    init(endpoint: String) async throws {
        reactor = Reactor(name: "test-sub", context: try ZMQContext())
        let messages = messages
        reactor.start { loop in
            let socket = try loop.socket(.sub)
            try socket.subscribe("")
            try socket.connect(endpoint)
            loop.onReadable(socket) { socket in
                while let frames = try? socket.receive(dontWait: true) { messages.withLock { $0.append(frames) } }
            }
        }
        try await reactor.run { _ in }
    }

    /// (position, topic, body) of each message with three frames.
    var received: [(position: UInt64, topic: String, body: String)] {
        messages.current.compactMap { frames in
            guard frames.count == 3, let position = UInt64(String(decoding: frames[2], as: UTF8.self)) else {
                return nil
            }
            return (position, String(decoding: frames[0], as: UTF8.self), String(decoding: frames[1], as: UTF8.self))
        }
    }

    func stop() async {
        reactor.stop()
        _ = await reactor.finished()
    }
}

/// One catch-up request over a DEALER (sending the empty delimiter as a REQ would), on a reactor of its own.
func catchUp(_ endpoint: String, _ request: CatchUpRequest) async throws -> CatchUpReply {
    let reactor = Reactor(name: "test-catchup", context: try ZMQContext())
    let reply = Locked<[UInt8]?>(nil)
    reactor.start { loop in
        let socket = try loop.socket(.dealer)
        try socket.connect(endpoint)
        _ = try socket.send([[], request.json()])
        loop.onReadable(socket) { socket in
            if let frames = try? socket.receive(dontWait: true), let last = frames.last { reply.withLock { $0 = last } }
        }
    }
    defer { reactor.stop() }
    guard await eventually(timeout: 60, { reply.current != nil }), let bytes = reply.current else {
        throw CatchUpRequest.Problem("no catch-up reply")
    }
    return try CatchUpReply(json: bytes)
}
