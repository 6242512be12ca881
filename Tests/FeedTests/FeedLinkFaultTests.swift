import Feeds
import Foundation
import Logging
import RoadSaveTestKit
import Testing
import Wire
import ZeroMQ

/// A feed whose items the test adds: item i (1-based) is "item-i".
private final class GrowingFeed: FeedSource {
    let feedID = "feed-L"
    var items: [String] = []

    var head: UInt64 { UInt64(items.count) }

    func read(_ request: FeedRequest) throws -> FeedBatch {
        let last = min(UInt64(items.count), request.after + UInt64(request.maxItems))
        guard last > request.after else { return FeedBatch(items: [], to: request.after) }
        return FeedBatch(items: items[Int(request.after)..<Int(last)].map { Array($0.utf8)[...] }, to: last)
    }

    func acknowledged(_ request: FeedRequest) {}
    func deletedThrough(for request: FeedRequest) -> UInt64? { nil }
}

/// The answers the client passed on, shared with the test.
private final class Answers: @unchecked Sendable { // guarded by `lock`
    private let lock = NSLock()
    private var all: [[String]] = []

    func append(_ items: FeedItems) {
        lock.lock()
        all.append(items.map { String(decoding: $0, as: UTF8.self) })
        lock.unlock()
    }

    var list: [[String]] {
        lock.lock()
        defer { lock.unlock() }
        return all
    }
}

/// A feed server and its client on two reactors, over TCP through a `LinkRelay` that the test cuts, heals or makes
/// forget its connections: the faults of a network, which no process kill shows. Short `LinkTimings` (a heartbeat
/// every 0.2 s, dropped after 1 s) keep the test short; what it checks is what they do, not how fast.
@Suite("Feed links through network faults", .timeLimit(.minutes(1)))
struct FeedLinkFaultTests {
    static let timings = LinkTimings(
        heartbeatInterval: 0.2, heartbeatTimeout: 1, connectTimeout: 0.5, reconnectIntervalMaximum: 0.5)

    private final class Rig: @unchecked Sendable { // its reactors own the state they touch
        let context: ZMQContext
        let server: Reactor
        let client: Reactor
        let relay: LinkRelay
        let answers = Answers()

        init() async throws {
            context = try ZMQContext()
            server = Reactor(name: "feed-server", context: context, linkTimings: FeedLinkFaultTests.timings)
            client = Reactor(name: "feed-client", context: context, linkTimings: FeedLinkFaultTests.timings)
            let quiet = Log(category: "test", minimumLevel: .error)
            let port = Ports.reserve(1)[0]
            server.start { loop in
                let feed = GrowingFeed()
                feed.items = ["item-1"]
                loop.setValue(feed)
                let socket = try loop.socket(.router)
                try socket.bind(Ports.tcp(port))
                loop.setValue(FeedServer(socket: socket, loop: loop, source: feed, log: quiet))
            }
            _ = try await server.run { _ in }
            relay = try LinkRelay(to: port)
            let endpoint = relay.endpoint
            let answers = answers
            client.start { loop in
                loop.setValue(
                    try FeedClient(loop: loop, endpoint: endpoint, log: quiet) { _, items in answers.append(items) })
            }
            _ = try await client.run { _ in }
        }

        func fetch(after: UInt64, waitMilliseconds: Int) async throws {
            _ = try await client.run { loop in
                loop.value(FeedClient.self)!.fetch(
                    FeedRequest(
                        id: 0, feed: "feed-L", after: after, acknowledged: 0, consumer: "t",
                        waitMilliseconds: waitMilliseconds))
            }
        }

        func add(_ item: String) async throws {
            _ = try await server.run { loop in
                loop.value(GrowingFeed.self)!.items.append(item)
                loop.value(FeedServer.self)!.itemsAdded()
            }
        }

        var statistics: FeedClient.Statistics {
            get async throws { try await client.run { loop in loop.value(FeedClient.self)!.statistics } }
        }

        func stop() {
            client.stop()
            _ = client.wait()
            server.stop()
            _ = server.wait()
            relay.stop()
            context.terminate()
        }
    }

    @Test(
        "a link cut without a word is dropped by its heartbeats, and once it heals the request outstanding is answered on a new connection at once"
    )
    func aCutLinkIsFoundAndMadeAnew() async throws {
        let rig = try await Rig()
        defer { rig.stop() }
        try await rig.fetch(after: 0, waitMilliseconds: 0)
        #expect(await eventually(timeout: 20) { rig.answers.list.count == 1 })
        #expect(rig.answers.list.first == ["item-1"])

        rig.relay.cut()
        // A request held for a minute: only the resend on a new connection can answer it before then.
        try await rig.fetch(after: 1, waitMilliseconds: 60_000)
        #expect(
            try await eventually(timeout: 30) { try await rig.statistics.connectionsLost >= 1 },
            "the silent connection was never dropped")
        try await rig.add("item-2")
        #expect(rig.answers.list.count == 1, "nothing crosses a cut link")
        rig.relay.heal()
        #expect(await eventually(timeout: 30) { rig.answers.list.count == 2 }, "no answer after the heal")
        #expect(rig.answers.list.last == ["item-2"])
        #expect(try await rig.statistics.resent >= 1)
    }

    @Test(
        "a connection a NAT forgot (silent for ever, while new ones pass) is dropped and made anew, and the feed goes on"
    )
    func aForgottenConnectionIsMadeAnew() async throws {
        let rig = try await Rig()
        defer { rig.stop() }
        try await rig.fetch(after: 0, waitMilliseconds: 0)
        #expect(await eventually(timeout: 20) { rig.answers.list.count == 1 })
        rig.relay.forget()
        try await rig.fetch(after: 1, waitMilliseconds: 60_000)
        try await rig.add("item-2")
        #expect(
            await eventually(timeout: 30) { rig.answers.list.count == 2 },
            "the request on the forgotten connection was never answered")
        #expect(rig.answers.list.last == ["item-2"])
        #expect(try await rig.statistics.connectionsLost >= 1)
    }
}
