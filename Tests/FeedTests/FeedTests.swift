import Feeds
import Foundation
import Logging
import RecordCodecs
import RoadSaveModel
import Testing
import Wire
import ZeroMQ

/// An in-memory feed: item i (1-based) is the text "item-i".
private final class MemoryFeed: FeedSource {
    let feedID: String
    var items: [String] = []
    var acknowledgements: [UInt64] = []
    /// Items up to here were deleted (retention).
    var deleted: UInt64 = 0

    init(feedID: String) { self.feedID = feedID }

    var head: UInt64 { UInt64(items.count) }

    func read(_ request: FeedRequest) throws -> FeedBatch {
        let first = max(request.after, deleted)
        let last = min(UInt64(items.count), request.through ?? .max, first + UInt64(request.maxItems))
        guard last > first else { return FeedBatch(items: [], to: request.after) }
        return FeedBatch(items: items[Int(first)..<Int(last)].map { Array($0.utf8)[...] }, to: last)
    }

    func acknowledged(_ request: FeedRequest) { acknowledgements.append(request.acknowledged) }

    func deletedThrough(for request: FeedRequest) -> UInt64? { request.after < deleted ? deleted : nil }
}

/// What the client side saw, shared with the test.
private final class Replies: @unchecked Sendable { // guarded by `lock`
    private let lock = NSLock()
    private var all: [(FeedReplyHeader, [String])] = []

    func append(_ header: FeedReplyHeader, _ items: FeedItems) {
        lock.lock()
        all.append((header, items.map { String(decoding: $0, as: UTF8.self) }))
        lock.unlock()
    }

    var list: [(header: FeedReplyHeader, items: [String])] {
        lock.lock()
        defer { lock.unlock() }
        return all
    }
}

/// A server and a client on one reactor, over inproc.
private struct Rig {
    let context: ZMQContext
    let reactor: Reactor
    let replies = Replies()

    init(items: [String], startServer: Bool = true) throws {
        context = try ZMQContext()
        reactor = Reactor(name: "feed-test", context: context)
        let endpoint = "inproc://feed-\(UUID().uuidString)"
        let replies = self.replies
        reactor.start { loop in
            let feed = MemoryFeed(feedID: "feed-A")
            feed.items = items
            loop.setValue(feed)
            if startServer {
                let socket = try loop.socket(.router)
                try socket.bind(endpoint)
                loop.setValue(
                    FeedServer(
                        socket: socket, loop: loop, source: feed, log: Log(category: "test", minimumLevel: .error)))
            }
            loop.setValue(endpoint, for: String.self)
            loop.setValue(
                try FeedClient(loop: loop, endpoint: endpoint, log: Log(category: "test", minimumLevel: .error)) {
                    replies.append($0, $1)
                })
        }
    }

    func run<T: Sendable>(_ body: @escaping @Sendable (ReactorLoop) throws -> T) async throws -> T {
        try await reactor.run(body)
    }

    func fetch(_ request: FeedRequest) async throws {
        try await run { loop in loop.value(FeedClient.self)!.fetch(request) }
    }

    func waitForReplies(_ count: Int, timeout: Double = 5) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if replies.list.count >= count { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return replies.list.count >= count
    }

    /// Waits until `condition` holds on the loop (true), or `timeout` passes (false).
    func eventually(timeout: Double = 60, _ condition: @escaping @Sendable (ReactorLoop) -> Bool) async throws -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try await run(condition) { return true }
            try await Task.sleep(for: .milliseconds(5))
        }
        return try await run(condition)
    }

    func stop() {
        reactor.stop()
        _ = reactor.wait()
        context.terminate()
    }
}

@Suite("Feeds", .timeLimit(.minutes(1)))
struct FeedTests {
    @Test("first contact names the feed and sends nothing; then items come after the position asked")
    func firstContactThenItems() async throws {
        let rig = try Rig(items: ["a", "b", "c"])
        defer { rig.stop() }
        try await rig.fetch(FeedRequest(id: 0, feed: nil, after: 0, acknowledged: 0, consumer: "test"))
        #expect(await rig.waitForReplies(1))
        let hello = rig.replies.list[0]
        #expect(hello.header.feed == "feed-A" && hello.items.isEmpty && hello.header.head == 3)
        try await rig.fetch(
            FeedRequest(id: 0, feed: "feed-A", after: 1, maxItems: 10, acknowledged: 1, consumer: "test"))
        #expect(await rig.waitForReplies(2))
        let reply = rig.replies.list[1]
        #expect(
            reply.items == ["b", "c"] && reply.header.after == 1 && reply.header.to == 3 && reply.header.error == nil)
        let acknowledged = try await rig.run { loop in loop.value(MemoryFeed.self)!.acknowledgements }
        #expect(acknowledged == [1], "first contact is not an acknowledgement; the second request is")
    }

    @Test("a request that asks for its items packed gets the same items in one frame, and an empty reply unpacked")
    func packedReply() async throws {
        let items = ["", "a", String(repeating: "b", count: 300), String(repeating: "c", count: 70_000)]
        let rig = try Rig(items: items)
        defer { rig.stop() }
        try await rig.fetch(
            FeedRequest(id: 0, feed: "feed-A", after: 0, maxItems: 10, acknowledged: 0, consumer: "t", pack: true))
        #expect(await rig.waitForReplies(1))
        #expect(rig.replies.list[0].items == items && rig.replies.list[0].header.packed)
        try await rig.fetch(
            FeedRequest(
                id: 0, feed: "feed-A", after: 4, maxItems: 10, acknowledged: 0, consumer: "t", waitMilliseconds: 0,
                pack: true))
        #expect(await rig.waitForReplies(2))
        #expect(rig.replies.list[1].items.isEmpty && !rig.replies.list[1].header.packed)
    }

    @Test(
        "on the wire: no pack, a frame an item (as every server did); pack, one frame; above maxBytes or the packing limit, frames"
    )
    func packedOnlyWhenAsked() async throws {
        let long = String(repeating: "c", count: 100)
        let large = String(repeating: "d", count: FeedServer.maximumPackedBytes / 2 + 1)
        let rig = try Rig(items: ["a", "bb", long, large, large])
        defer { rig.stop() }
        let endpoint = try await rig.run { loop in loop.value(String.self)! }
        // A consumer as the test writes it, frames read as they come.
        let dealer = try ZMQSocket(rig.context, .dealer)
        defer { dealer.close() }
        try dealer.setReceiveTimeout(milliseconds: 10_000)
        try dealer.connect(endpoint)
        func frames(after: UInt64, maxItems: Int = 3, maxBytes: Int = 4 << 20, pack: Bool) throws -> [[UInt8]] {
            let request = FeedRequest(
                id: 1, feed: "feed-A", after: after, maxItems: maxItems, maxBytes: maxBytes, acknowledged: 0,
                consumer: "t",
                waitMilliseconds: 0, pack: pack)
            try dealer.send(request.frames())
            return try dealer.receive() ?? []
        }
        let plain = try frames(after: 0, pack: false)
        #expect(plain.count == 5 && plain[2...].map { String(decoding: $0, as: UTF8.self) } == ["a", "bb", long])
        #expect(try !FeedReplyHeader.parse(plain).header.packed)
        let packed = try frames(after: 0, pack: true)
        #expect(packed.count == 3 && packed[2] == FeedItems.packedFrame(["a", "bb", long].map { Array($0.utf8) }))
        #expect(try FeedReplyHeader.parse(packed).header.packed)
        // maxBytes 10: a source sends the 100-byte item alone (above the limit), and the server as a frame.
        let alone = try frames(after: 2, maxItems: 1, maxBytes: 10, pack: true)
        #expect(alone.count == 3 && alone[2] == Array(long.utf8))
        #expect(try !FeedReplyHeader.parse(alone).header.packed)
        // Within maxBytes but above the server's packing limit: a frame an item.
        let big = try frames(after: 3, pack: true)
        #expect(big.count == 4 && big[2] == Array(large.utf8) && big[3] == Array(large.utf8))
        #expect(try !FeedReplyHeader.parse(big).header.packed)
    }

    @Test("a client that asks for packed items reads a server that does not know pack, a frame an item")
    func oldServerAnswersFrames() async throws {
        let rig = try Rig(items: [], startServer: false)
        defer { rig.stop() }
        let endpoint = try await rig.run { loop in loop.value(String.self)! }
        // A server as one before `pack` was: it ignores the key and answers a frame an item.
        let router = try ZMQSocket(rig.context, .router)
        defer { router.close() }
        try router.setReceiveTimeout(milliseconds: 10_000)
        try router.bind(endpoint)
        try await rig.fetch(
            FeedRequest(id: 0, feed: "old", after: 0, maxItems: 10, acknowledged: 0, consumer: "t", pack: true))
        let asked = try #require(try router.receive())
        let request = try FeedRequest(frames: Array(asked.dropFirst()))
        #expect(request.pack)
        let header = FeedReplyHeader(id: request.id, feed: "old", after: 0, to: 2, head: 2)
        try router.send([asked[0]] + header.frames(items: [Array("x".utf8), Array("yy".utf8)]))
        #expect(await rig.waitForReplies(1))
        #expect(rig.replies.list[0].items == ["x", "yy"] && !rig.replies.list[0].header.packed)
    }

    @Test("packed items read back whatever their sizes; a packed frame that is not one is an error, not a crash")
    func packedItems() throws {
        let items: [[UInt8]] = [
            [], [1], Array(repeating: 2, count: 255), Array(repeating: 3, count: 256),
            Array(repeating: 4, count: 65_536),
        ]
        let frame = FeedItems.packedFrame(items)
        #expect(frame.count == FeedItems.packedSize(items))
        #expect(try FeedItems(packed: frame).map { Array($0) } == items)
        let header = FeedReplyHeader(id: 1, feed: "f", after: 0, to: 5, head: 5, packed: true)
        let parsed = try FeedReplyHeader.parse([FeedReplyHeader.frame, header.encoded, frame])
        #expect(parsed.header == header && parsed.items.map { Array($0) } == items)
        #expect(throws: WireError.self) { try FeedReplyHeader.parse([FeedReplyHeader.frame, header.encoded]) }
        for cut in 0..<min(frame.count, 600) {
            #expect(throws: WireError.self) { try FeedItems(packed: Array(frame.prefix(cut))) }
        }
        #expect(throws: WireError.self) { try FeedItems(packed: frame + [0]) }
        #expect(throws: WireError.self) { try FeedItems(packed: [0x91, 0xA1, 0x61]) }
        #expect(throws: WireError.self) { try FeedItems(packed: [0xDD, 0xFF, 0xFF, 0xFF, 0xFF, 0xC4, 0]) }
    }

    @Test("limits and the through bound cut the reply")
    func limits() async throws {
        let rig = try Rig(items: (1...10).map { "i\($0)" })
        defer { rig.stop() }
        try await rig.fetch(FeedRequest(id: 0, feed: "feed-A", after: 0, maxItems: 4, acknowledged: 0, consumer: "t"))
        #expect(await rig.waitForReplies(1))
        #expect(rig.replies.list[0].items == ["i1", "i2", "i3", "i4"] && rig.replies.list[0].header.to == 4)
        try await rig.fetch(
            FeedRequest(id: 0, feed: "feed-A", after: 5, through: 7, maxItems: 100, acknowledged: 0, consumer: "t"))
        #expect(await rig.waitForReplies(2))
        #expect(rig.replies.list[1].items == ["i6", "i7"] && rig.replies.list[1].header.to == 7)
    }

    @Test("a caught-up request is held and answered as soon as items are added, or empty when its wait runs out")
    func heldRequest() async throws {
        let rig = try Rig(items: ["a"])
        defer { rig.stop() }
        // A wait far longer than the test's own waits: an answer seen is the one to the new item, never the
        // wait's end (which would be empty).
        try await rig.fetch(
            FeedRequest(id: 0, feed: "feed-A", after: 1, acknowledged: 0, consumer: "t", waitMilliseconds: 60_000))
        // The server holding it, not a pause, says it arrived and was not answered.
        #expect(try await rig.eventually { loop in loop.value(FeedServer.self)!.waiting == 1 })
        #expect(rig.replies.list.isEmpty, "nothing new: the request is held")
        try await rig.run { loop in
            loop.value(MemoryFeed.self)!.items.append("b")
            loop.value(FeedServer.self)!.itemsAdded()
        }
        #expect(await rig.waitForReplies(1, timeout: 20))
        #expect(rig.replies.list.first?.items == ["b"])
        #expect(try await rig.run { loop in loop.value(FeedServer.self)!.waiting } == 0)
        let start = Date()
        try await rig.fetch(
            FeedRequest(id: 0, feed: "feed-A", after: 2, acknowledged: 0, consumer: "t", waitMilliseconds: 300))
        #expect(await rig.waitForReplies(2, timeout: 3))
        #expect(rig.replies.list[1].items.isEmpty && rig.replies.list[1].header.to == 2)
        #expect(Date().timeIntervalSince(start) >= 0.25, "answered empty only when the wait ran out")
    }

    @Test("a position ahead of the feed is an error, not an empty reply")
    func aheadOfFeed() async throws {
        let rig = try Rig(items: ["a"])
        defer { rig.stop() }
        try await rig.fetch(FeedRequest(id: 0, feed: "feed-A", after: 9, acknowledged: 0, consumer: "t"))
        #expect(await rig.waitForReplies(1))
        #expect(rig.replies.list[0].header.error?.contains("ahead") == true)
    }

    @Test(
        "a request sent before the server binds is answered once it does; the second copy's answer is dropped and counted"
    )
    func resendWhenServerComesLater() async throws {
        let rig = try Rig(items: ["a"], startServer: false)
        defer { rig.stop() }
        try await rig.fetch(
            FeedRequest(id: 0, feed: "feed-A", after: 0, acknowledged: 0, consumer: "t", waitMilliseconds: 100))
        // Past the client's patience (the wait and `answerGrace`): it sends the request again, and inproc keeps both
        // copies for the server to come. Waited for, not slept: a busy machine runs the client's timer late.
        #expect(try await rig.eventually { loop in loop.value(FeedClient.self)!.statistics.resent >= 1 })
        try await rig.run { loop in
            let socket = try loop.socket(.router)
            try socket.bind(loop.value(String.self)!)
            loop.setValue(
                FeedServer(
                    socket: socket, loop: loop, source: loop.value(MemoryFeed.self)!,
                    log: Log(category: "test", minimumLevel: .error)))
        }
        #expect(await rig.waitForReplies(1, timeout: 6))
        #expect(rig.replies.list.first?.items == ["a"])
        // Every copy is answered; the answers after the first come when nothing is outstanding, and are dropped.
        #expect(
            try await rig.eventually { loop in
                let statistics = loop.value(FeedClient.self)!.statistics
                return statistics.outOfSequence == statistics.resent
            })
        #expect(rig.replies.list.count == 1)
        let statistics = try await rig.run { loop in loop.value(FeedClient.self)!.statistics }
        #expect(statistics.resent >= 1)
        #expect(statistics.outOfSequence == statistics.resent)
        #expect(statistics.unreadable == 0)
    }

    @Test("requests and reply headers survive the wire; bad requests name the field")
    func messages() throws {
        let request = FeedRequest(
            id: 7, feed: "f", after: 3, through: 9, maxItems: 5, maxBytes: 1000, acknowledged: 2,
            consumer: "detection shard 1/2", shard: 1, shards: 2, waitMilliseconds: 250)
        #expect(try FeedRequest(frames: request.frames()) == request)
        var packing = request
        packing.pack = true
        #expect(try FeedRequest(frames: packing.frames()) == packing)
        let header = FeedReplyHeader(id: 7, feed: "f", after: 3, to: 5, head: 11, error: "x")
        let parsed = try FeedReplyHeader.parse(header.frames(items: [[1], [2]]))
        #expect(parsed.header == header && parsed.items.count == 2)
        var bad = request.frames()
        bad[1] = MessagePack.encode(.object([("id", .number(1)), ("after", .number(-1)), ("max", .number(5))]))
        do {
            _ = try FeedRequest(frames: bad)
            Issue.record("a negative position was accepted")
        } catch {
            #expect(error.path == "after")
        }
        bad[1] = MessagePack.encode(
            .object([
                ("id", .number(1)), ("after", .number(0)), ("max", .number(5)),
                ("shard", .number(2)), ("shards", .number(2)),
            ]))
        #expect(throws: WireError.self) { try FeedRequest(frames: bad) }
    }

    @Test(
        "deletedThrough survives the wire both ways, is absent (the same bytes as before) when unset, and a bad one is named"
    )
    func deletedThroughOnTheWire() throws {
        let header = FeedReplyHeader(id: 7, feed: "f", after: 3, to: 9, head: 11, deletedThrough: 6)
        let parsed = try FeedReplyHeader.parse(header.frames(items: [[1]]))
        #expect(parsed.header == header && parsed.header.deletedThrough == 6 && parsed.items.count == 1)
        // Without it, a reply is byte for byte what it was before the field existed.
        let plain = FeedReplyHeader(id: 7, feed: "f", after: 3, to: 9, head: 11)
        let before = MessagePack.encode(
            .object([
                ("id", .number(7)), ("feed", .string("f")), ("after", .number(3)),
                ("to", .number(9)), ("head", .number(11)),
            ]))
        #expect(plain.frames(items: []) == [FeedReplyHeader.frame, before])
        #expect(try FeedReplyHeader.parse([FeedReplyHeader.frame, before]).header.deletedThrough == nil)
        #expect(header.frames(items: [])[1] != before)
        for bad: JSONValue in [.string("6"), .number(-1), .number(2.5)] {
            let map = MessagePack.encode(
                .object([
                    ("id", .number(1)), ("feed", .string("f")), ("after", .number(0)),
                    ("to", .number(0)), ("head", .number(0)), ("deletedThrough", bad),
                ]))
            do {
                _ = try FeedReplyHeader.parse([FeedReplyHeader.frame, map])
                Issue.record("deletedThrough \(bad) was accepted")
            } catch {
                #expect(error.path == "deletedThrough")
            }
        }
    }

    @Test("the server says what its source deleted of what was asked, at once even when nothing remains to send")
    func serverSaysWhatWasDeleted() async throws {
        let rig = try Rig(items: ["a", "b", "c"])
        defer { rig.stop() }
        try await rig.run { loop in loop.value(MemoryFeed.self)!.deleted = 3 }
        // Everything asked for is gone: a request that may be held for a minute is answered at once, and says so.
        try await rig.fetch(
            FeedRequest(
                id: 0, feed: "feed-A", after: 1, acknowledged: 0, consumer: "t",
                waitMilliseconds: 60_000))
        #expect(await rig.waitForReplies(1, timeout: 20))
        let gone = rig.replies.list[0].header
        #expect(gone.deletedThrough == 3 && gone.to == 1 && rig.replies.list[0].items.isEmpty)
        try await rig.run { loop in loop.value(MemoryFeed.self)!.items += ["d"] }
        try await rig.fetch(FeedRequest(id: 0, feed: "feed-A", after: 1, acknowledged: 0, consumer: "t"))
        #expect(await rig.waitForReplies(2))
        #expect(rig.replies.list[1].header.deletedThrough == 3 && rig.replies.list[1].items == ["d"])
        // From the deleted position on, nothing asked for is gone: no field.
        try await rig.fetch(FeedRequest(id: 0, feed: "feed-A", after: 3, acknowledged: 0, consumer: "t"))
        #expect(await rig.waitForReplies(3))
        #expect(rig.replies.list[2].header.deletedThrough == nil && rig.replies.list[2].items == ["d"])
    }

    @Test(
        "a consumer behind on a long feed, asking for the next part before working through each reply, still lets its loop run timers and posted work between replies"
    )
    func aBacklogDoesNotKeepTheLoop() async throws {
        let context = try ZMQContext()
        defer { context.terminate() }
        let endpoint = "inproc://feed-\(UUID().uuidString)"
        let quiet = Log(category: "test", minimumLevel: .error)
        let server = Reactor(name: "feed-server", context: context)
        server.start { loop in
            let feed = MemoryFeed(feedID: "feed-A")
            feed.items = (1...400).map { "item-\($0)" }
            loop.setValue(feed)
            let socket = try loop.socket(.router)
            try socket.bind(endpoint)
            loop.setValue(FeedServer(socket: socket, loop: loop, source: feed, log: quiet))
        }
        defer {
            server.stop()
            _ = server.wait()
        }
        _ = try await server.run { _ in } // bound before the client connects (inproc)
        /// What the consumer's loop did, in order: "r" a reply, "t" a timer.
        final class Trace: @unchecked Sendable { // only touched on the client's reactor thread
            var steps: [Character] = []
        }
        let trace = Trace()
        let client = Reactor(name: "feed-client", context: context)
        client.start { loop in
            let consumer = try FeedClient(loop: loop, endpoint: endpoint, log: quiet) { header, _ in
                trace.steps.append("r")
                guard header.to < header.head else { return }
                // The next request goes out first, then the reply is worked through (as detection does).
                loop.value(FeedClient.self)!.fetch(
                    FeedRequest(
                        id: 0, feed: "feed-A", after: header.to, maxItems: 1,
                        acknowledged: 0, consumer: "t", waitMilliseconds: 0))
                let until = Date().addingTimeInterval(0.002)
                while Date() < until {}
            }
            loop.setValue(consumer)
            loop.every(0.005) { trace.steps.append("t") }
            consumer.fetch(
                FeedRequest(
                    id: 0, feed: "feed-A", after: 0, maxItems: 1, acknowledged: 0, consumer: "t",
                    waitMilliseconds: 0))
        }
        defer {
            client.stop()
            _ = client.wait()
        }
        let deadline = Date().addingTimeInterval(20)
        var replies = 0
        while Date() < deadline {
            replies = try await client.run { _ in trace.steps.filter { $0 == "r" }.count }
            if replies >= 400 { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(replies == 400)
        let steps = try await client.run { _ in String(trace.steps) }
        let first = steps.firstIndex(of: "r")!
        let last = steps.lastIndex(of: "r")!
        // 400 replies of at least 2 ms each: a timer every 5 ms fires many times among them.
        let timersBetween = steps[first...last].filter { $0 == "t" }.count
        #expect(timersBetween >= 40, "timers fired \(timersBetween) times among 400 replies: \(steps.prefix(200))")
    }

    @Test("watched devices: asked with the request, answered in order with the header; bad entries name the field")
    func watchedDevices() throws {
        let devices = [DeviceID(app: "app-1", user: "u1"), DeviceID(app: "app-2", user: "ü 2")]
        let request = FeedRequest(id: 1, feed: "f", after: 0, acknowledged: 0, consumer: "c", watch: devices)
        #expect(try FeedRequest(frames: request.frames()).watch == devices)
        #expect(
            try FeedRequest(frames: FeedRequest(id: 1, feed: "f", after: 0, acknowledged: 0, consumer: "c").frames())
                .watch.isEmpty, "no watch: an empty list (and no key on the wire)")
        let header = FeedReplyHeader(id: 1, feed: "f", after: 0, to: 4, head: 9, watched: [3, 9])
        #expect(try FeedReplyHeader.parse(header.frames(items: [])).header.watched == [3, 9])
        func rejected(_ watch: JSONValue) -> String? {
            let map = JSONValue.object([
                ("id", .number(1)), ("after", .number(0)), ("max", .number(5)), ("watch", watch),
            ])
            do {
                _ = try FeedRequest(frames: [FeedRequest.frame, MessagePack.encode(map)])
                return nil
            } catch {
                return error.path
            }
        }
        #expect(rejected(.string("u1")) == "watch")
        #expect(
            rejected(.array([.array([.string("app-1"), .string("u1")]), .array([.string("app-1")])])) == "watch[1]")
        #expect(rejected(.array([.array([.string(""), .string("u1")])])) == "watch[0]")
        #expect(
            rejected(
                .array(
                    Array(
                        repeating: .array([.string("a"), .string("u")]),
                        count: FeedRequest.maximumWatched + 1))) == "watch")
        let badReply = MessagePack.encode(
            .object([
                ("id", .number(1)), ("feed", .string("f")), ("after", .number(0)),
                ("to", .number(0)), ("head", .number(0)),
                ("watched", .array([.number(1), .number(-2)])),
            ]))
        do {
            _ = try FeedReplyHeader.parse([FeedReplyHeader.frame, badReply])
            Issue.record("a negative watched position was accepted")
        } catch {
            #expect(error.path == "watched[1]")
        }
    }

    @Test(
        "the server answers a watch with the source's positions, told with the read; a source that cannot tell says its head"
    )
    func serverAnswersWatch() async throws {
        let rig = try Rig(items: ["a", "b", "c"])
        defer { rig.stop() }
        let devices = [DeviceID(app: "app-1", user: "u1"), DeviceID(app: "app-1", user: "u2")]
        try await rig.fetch(
            FeedRequest(
                id: 0, feed: "feed-A", after: 0, maxItems: 1, acknowledged: 0, consumer: "t",
                watch: devices))
        #expect(await rig.waitForReplies(1))
        let reply = rig.replies.list[0]
        #expect(reply.items == ["a"] && reply.header.to == 1)
        #expect(
            reply.header.watched == [3, 3],
            "MemoryFeed keeps nothing by device: every device may have items up to the head")
        try await rig.fetch(FeedRequest(id: 0, feed: "feed-A", after: 1, acknowledged: 0, consumer: "t"))
        #expect(await rig.waitForReplies(2))
        #expect(rig.replies.list[1].header.watched.isEmpty, "nothing asked, nothing told")
    }
}
