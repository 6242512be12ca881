import Foundation
import RoadSaveTestKit
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 7, subscriber keys limited to applications on the LIVE socket. With libzmq 4.3.5 or later, the notifier's
/// XPUB applies, for each subscription, only the prefixes of the key's applications, whatever prefix is asked. Before
/// 4.3.5 (ZMQ_XPUB_MANUAL has a use-after-free there, libzmq 2df7ab6a) the live socket is a PUB that refuses limited
/// keys at the handshake, and they follow live by catch-up long-poll. Which path runs depends on the libzmq the
/// notifier loads (`notifierLibzmq`, read from the same shared library); on this machine (Debian bookworm, 4.3.4) the
/// refusal. The clients are pyzmq XSUB sockets (`live_subscriber.py`), which filter nothing on their side, so every
/// message the notifier sends is seen; `subscriber.py`, a plain SUB as alerting systems use; `roadsave tail
/// --via-catch-up`; and `long_poll.py`. Events of app-1, app-2 and app-10 flow from the fake detection feed meanwhile.
@Suite("SecurityLivePublish", .serialized)
struct SecurityLivePublishTests {
    /// The version of the system's libzmq (the notifier's), from the library itself; nil when it cannot be loaded.
    static let notifierLibzmq: (major: Int32, minor: Int32, patch: Int32)? = {
        guard let library = dlopen("libzmq.so.5", RTLD_NOW), let symbol = dlsym(library, "zmq_version") else {
            return nil
        }
        typealias Version =
            @convention(c) (
                UnsafeMutablePointer<Int32>, UnsafeMutablePointer<Int32>,
                UnsafeMutablePointer<Int32>
            ) -> Void
        var major: Int32 = 0
        var minor: Int32 = 0
        var patch: Int32 = 0
        unsafeBitCast(symbol, to: Version.self)(&major, &minor, &patch)
        return (major, minor, patch)
    }()
    static var filtersLive: Bool { notifierLibzmq.map { ($0.major, $0.minor, $0.patch) >= (4, 3, 5) } ?? false }
    static var refusesLimitedKeysLive: Bool { notifierLibzmq != nil && !filtersLive }

    /// The notifier's key pair; subscriber keys dash (app-1 only), ops and watch (every application).
    static func keys() async throws -> KeyFolder {
        try await KeyFolder(
            prefix: "roadsave-live", servers: ["notify"],
            clients: [
                ("dash", ["--role", "subscriber", "--apps", "app-1"]), ("ops", ["--role", "subscriber"]),
                ("watch", ["--role", "subscriber"]),
            ])
    }

    static let apps = ["app-1", "app-2", "app-10"]

    /// Journeys of six devices, two of each application, interleaved.
    static func events(journeys: Int) -> [[String: Any]] {
        NotifierDurabilityTests.fleet(devices: 6, journeys: journeys).map { event in
            var event = event
            let device = Int(event.string("user")!.dropFirst("driver-".count))!
            event["app"] = apps[device % 3]
            return event
        }
    }

    final class Live {
        let child: Child
        init(
            _ notifier: NotifierDurabilityTests.Notifier, _ keys: KeyFolder, key: String, subscribe: [String],
            unsubscribe: [String] = [], timeout: Double
        ) throws {
            child = try Child.python(
                "live_subscriber.py",
                [
                    "--endpoint", notifier.publishEndpoint, "--server-key", keys.serverPublic,
                    "--key", keys.path("\(key).key"), "--timeout", String(timeout),
                ]
                    + subscribe.flatMap { ["--subscribe", $0] } + unsubscribe.flatMap { ["--unsubscribe", $0] },
                name: "live \(key) \(subscribe)")
        }
        var lines: [[String: Any]] { child.jsonLines.compactMap { $0.value as? [String: Any] } }
        /// (seconds since the client started, topic, position) of every message received.
        var messages: [(t: Double, topic: String, position: Int)] {
            lines.compactMap { line in
                line.string("topic").map { (line.number("t") ?? 0, $0, Int(line.number("position") ?? -1)) }
            }
        }
        var topics: [String] { messages.map(\.topic) }
        func unsubscribed(_ prefix: String) -> Double? {
            lines.first { $0.string("unsubscribed") == prefix }?.number("t")
        }
        var connected: Bool { handshakes > 0 }
        /// Handshakes done (one per connection: the first, and each reconnect).
        var handshakes: Int { child.stderr.filter { $0.text.contains("\"connected\"") }.count }
        /// The position of every message received.
        var positions: [Int] { messages.map(\.position) }
        func kill() { child.kill() }
    }

    static func app(_ topic: String) -> String { String(topic.split(separator: ".")[1]) }

    /// Fresh keys, and a notifier with them serving `events` (at `rate` a second; `paused`: from `feed.resume()`):
    /// how every test here starts.
    static func start(_ events: [[String: Any]], rate: Double = 0, paused: Bool = false) async throws -> (
        KeyFolder, KeyedNotifier
    ) {
        let keys = try await Self.keys()
        do {
            return (
                keys,
                try await KeyedNotifier(
                    events, rate: rate, paused: paused, serverSecret: keys.serverSecret,
                    allowList: keys.allowList)
            )
        } catch {
            keys.remove()
            throw error
        }
    }

    @Test(.enabled(if: filtersLive, "the notifier's libzmq is older than 4.3.5: live filtering is off"))
    func aKeyLimitedToAnApplicationGetsOnlyItsEventsWhateverItAsksAndUnsubscribingWorks() async throws {
        let all = Self.events(journeys: 14)
        let (keys, keyed) = try await Self.start(all, rate: 25)
        defer {
            keyed.stop()
            keys.remove()
        }
        let notifier = keyed.notifier

        let timeout = 9.0
        let everything = try Live(notifier, keys, key: "dash", subscribe: [""], timeout: timeout)
        let crashes = try Live(notifier, keys, key: "dash", subscribe: ["crashDetected"], timeout: timeout)
        let starts = try Live(notifier, keys, key: "dash", subscribe: ["tripDidStart.app-"], timeout: timeout)
        let ops = try Live(notifier, keys, key: "ops", subscribe: [""], timeout: timeout)
        // Two requests that both give crashDetected.app-1.: dropping one keeps it; dropping both stops everything.
        let dropping = try Live(
            notifier, keys, key: "dash", subscribe: ["", "crashDetected"],
            unsubscribe: ["crashDetected@2.5", "@5.5"], timeout: timeout)
        let sub = try Child.python(
            "subscriber.py",
            [
                "--endpoint", notifier.publishEndpoint, "--timeout", String(timeout),
                "--server-key", keys.serverPublic, "--key", keys.path("dash.key"),
            ])
        let clients = [everything, crashes, starts, ops, dropping]
        defer {
            for client in clients { client.kill() }
            sub.kill()
        }
        for client in clients { _ = await client.child.waitForExit(timeout: timeout + 10) }
        _ = await sub.waitForExit(timeout: 10)
        let logs = notifier.logs()

        for client in clients { #expect(client.connected, "\(client.child.tail())\n\(logs)") }
        #expect(everything.topics.count > 20, "\(everything.child.tail())\n\(logs)")
        #expect(everything.topics.allSatisfy { Self.app($0) == "app-1" }, "\(everything.topics)")
        #expect(
            Set(everything.topics.map { String($0.split(separator: ".")[0]) })
                == ["tripDidStart", "crashDetected", "tripDidEnd"], "\(everything.topics)")
        #expect(
            !crashes.topics.isEmpty && crashes.topics.allSatisfy { $0.hasPrefix("crashDetected.app-1.") },
            "\(crashes.topics)")
        #expect(
            !starts.topics.isEmpty && starts.topics.allSatisfy { $0.hasPrefix("tripDidStart.app-1.") },
            "\(starts.topics)")
        // A key of every application gets every application, app-10 too.
        #expect(Set(ops.topics.map(Self.app)) == Set(Self.apps), "\(ops.topics)")
        #expect(ops.topics.count > 2 * everything.topics.count, "\(ops.topics.count) vs \(everything.topics.count)")
        // The plain SUB of the limited key: app-1 only.
        let subTopics = sub.jsonLines.compactMap { ($0.value as? [Any])?.first as? String }
        #expect(!subTopics.isEmpty && subTopics.allSatisfy { Self.app($0) == "app-1" }, "\(subTopics)\n\(sub.tail())")

        // Unsubscribing.
        #expect(dropping.topics.allSatisfy { Self.app($0) == "app-1" }, "\(dropping.topics)")
        let first = try #require(dropping.unsubscribed("crashDetected"), "\(dropping.child.tail())")
        let second = try #require(dropping.unsubscribed(""), "\(dropping.child.tail())")
        let between = dropping.messages.filter { $0.t > first + 0.3 && $0.t < second }
        #expect(
            between.contains { $0.topic.hasPrefix("crashDetected.app-1.") },
            "\"\" still asks for app-1's crashes after crashDetected went: \(dropping.messages)")
        // Each event once: the two requests applied one prefix, not two.
        let beforeSecond = dropping.messages.filter { $0.t < second }.map(\.position)
        #expect(Set(beforeSecond).count == beforeSecond.count, "\(dropping.messages)")
        let after = dropping.messages.filter { $0.t > second + 0.5 }
        #expect(after.isEmpty, "after the last unsubscription: \(after)")
        #expect(dropping.messages.contains { $0.t < second }, "\(dropping.messages)")
    }

    /// libzmq < 4.3.5 (this machine): the limited key dash is refused at the live socket's handshake, with the reason
    /// logged; ops (every application) gets everything live; dash follows live with `roadsave tail --via-catch-up`
    /// (its application's events only, in order, no gap, no duplicate, each soon after ops saw it live), and a held
    /// long-poll is answered as soon as an event of its key is stored.
    @Test(.enabled(if: refusesLimitedKeysLive, "the notifier's libzmq is 4.3.5 or later: live filtering is on"))
    func onLibzmqBefore435ALimitedKeyIsRefusedLiveAndFollowsByCatchUpLongPoll() async throws {
        let all = Self.events(journeys: 10)
        // The events (7 s of them) start once every client is there, so how long a busy machine takes to start the
        // clients does not decide how much of the stream they see.
        let (keys, keyed) = try await Self.start(all, rate: 25, paused: true)
        defer {
            keyed.stop()
            keys.remove()
        }
        let notifier = keyed.notifier
        let current = try #require(notifier.current)
        let warned = await eventually(timeout: 20) {
            current.stderr.contains {
                $0.text.contains("subscriber keys limited to applications are refused on the live socket")
            }
        }
        #expect(warned, "\(notifier.logs())")

        let dashLive = try Live(notifier, keys, key: "dash", subscribe: [""], timeout: 15)
        let dashSub = try Child.python(
            "subscriber.py",
            [
                "--endpoint", notifier.publishEndpoint, "--timeout", "15",
                "--server-key", keys.serverPublic, "--key", keys.path("dash.key"),
            ])
        let ops = try Live(notifier, keys, key: "ops", subscribe: [""], timeout: 15)
        let tail = try Child(
            name: "tail --via-catch-up", executable: Executables.named("roadsave"),
            arguments: [
                "tail", "--via-catch-up", "--show-position", "--catch-up-endpoint", notifier.catchUpEndpoint,
                "--key", keys.path("dash.key"), "--server-key", keys.serverPublic, "--timeout", "15", "--log-level",
                "info",
            ])
        defer {
            dashLive.kill()
            dashSub.kill()
            ops.kill()
            tail.kill()
        }
        // ops connected and tail following (it has read the head) before the long-poll and the events.
        let following = await eventually(timeout: 30) {
            ops.connected && tail.stderr.contains { $0.text.contains("following by catch-up") }
        }
        #expect(following, "ops: \(ops.child.tail())\ntail: \(tail.tail())\n\(notifier.logs())")
        let longPoll = try Child.python(
            "long_poll.py",
            [
                "--endpoint", notifier.catchUpEndpoint, "--server-key", keys.serverPublic,
                "--key", keys.path("dash.key"), "--wait-ms", "20000",
            ])
        defer { longPoll.kill() }
        #expect(
            await eventually(timeout: 30) { longPoll.stderr.contains { $0.text.contains("\"asked\"") } },
            "\(longPoll.tail())")
        keyed.feed.resume()
        #expect(await keyed.storedAll(timeout: 60), "\(notifier.logs())")
        for child in [dashLive.child, dashSub, ops.child, tail, longPoll] { _ = await child.waitForExit(timeout: 40) }
        let logs = notifier.logs()

        // Refused at the handshake, nothing received, and the refusal logged with its reason.
        #expect(!dashLive.connected && dashLive.topics.isEmpty, "\(dashLive.child.tail())")
        #expect(dashSub.jsonLines.isEmpty, "\(dashSub.tail())")
        let refusal = current.stderr.first {
            $0.text.contains("msg=\"connection refused\"") && $0.text.contains("dash")
                && $0.text.contains("key limited to applications: live filtering needs libzmq 4.3.5")
        }
        #expect(refusal != nil, "\(logs)")
        // A key of every application gets every application live.
        #expect(ops.connected && Set(ops.topics.map(Self.app)) == Set(Self.apps), "\(ops.topics)\n\(logs)")

        // Every event, from a key of every application, to check tail's against.
        let everything = try await Control.send(
            [["after": 0, "max": 10_000]], to: notifier.catchUpEndpoint, timeout: 15,
            extra: ["--server-key", keys.serverPublic, "--key", keys.path("ops.key")])
        let stored = try #require(everything.first?["events"] as? [[String: Any]], "\(everything)")
        let appOf = Dictionary(
            uniqueKeysWithValues: stored.compactMap { entry -> (Int, String)? in
                guard let position = entry.number("position"),
                    let app = (entry["event"] as? [String: Any])?.string("app")
                else { return nil }
                return (Int(position), app)
            })
        #expect(appOf.count == all.count, "\(appOf.count) of \(all.count) stored")

        // tail --via-catch-up: app-1 only, in order, each once, and no app-1 event missing between its first and last.
        let printed = NotifierDurabilityTests.printed(tail)
        #expect(tail.exitedAt != nil && tail.process.terminationStatus == 0, "\(tail.tail())")
        #expect(printed.count > 10, "\(tail.tail())\n\(logs)")
        #expect(printed.allSatisfy { $0.event.string("app") == "app-1" }, "\(printed.map(\.event))")
        let positions = printed.map(\.position)
        #expect(zip(positions, positions.dropFirst()).allSatisfy { $0 < $1 }, "\(positions)")
        if let first = positions.first, let last = positions.last {
            let expected = appOf.filter { $0.value == "app-1" && (first...last).contains($0.key) }.keys.sorted()
            #expect(positions == expected, "gap or extra: \(positions) vs \(expected)")
        }
        // Live by catch-up: each printed soon after ops got it on the live socket.
        var opsTimes: [Int: Double] = [:]
        for line in ops.child.jsonLines {
            if let object = line.value as? [String: Any], let position = object.number("position") {
                opsTimes[Int(position)] = line.time
            }
        }
        let delays = tail.jsonLines.compactMap { line -> Double? in
            guard let position = (line.value as? [String: Any])?.number("position"), let live = opsTimes[Int(position)]
            else { return nil }
            return line.time - live
        }.sorted()
        #expect(delays.count > 10, "\(delays)")
        // Loose for a busy machine, and still far from a tail that sat out its long-polls (25 s each).
        if !delays.isEmpty {
            #expect(delays[delays.count / 2] < 1 && delays.last! < 5, "tail behind the live socket by \(delays)")
        }

        // A held long-poll (dash, nothing after the head) is answered when an app-1 event is stored: the events started
        // only once it was sent, and its answer comes long before its 20 s are up (when it would be answered anyway).
        let answer = try #require(longPoll.jsonLines.first?.value as? [String: Any], "\(longPoll.tail())")
        let seconds = try #require(answer.number("seconds"))
        let head = try #require(answer.number("head"))
        let replied = try #require((answer["reply"] as? [String: Any])?["events"] as? [[String: Any]], "\(answer)")
        #expect(!replied.isEmpty && seconds < 10, "\(seconds) s: \(answer)")
        #expect(
            replied.allSatisfy {
                ($0["event"] as? [String: Any])?.string("app") == "app-1" && ($0.number("position") ?? 0) > head
            },
            "\(replied)")
    }

    @Test func afterEventIDOfAnotherApplicationsEventAnswersLikeAnUnknownOne() async throws {
        let all = Self.events(journeys: 1)
        let (keys, keyed) = try await Self.start(all)
        defer {
            keyed.stop()
            keys.remove()
        }
        let notifier = keyed.notifier
        try #require(await keyed.storedAll(), "\(notifier.logs())")

        func ask(_ request: [String: Any], key: String) async throws -> [String: Any] {
            let reply = try await keyed.catchUp(
                request, serverPublic: keys.serverPublic, keyFile: keys.path("\(key).key"))
            return try #require(reply, "\(notifier.logs())")
        }
        let everything = try #require(try await ask(["after": 0], key: "ops")["events"] as? [[String: Any]])
        let otherApp = try #require(everything.first { ($0["event"] as? [String: Any])?.string("app") == "app-10" })
        let otherID = try #require((otherApp["event"] as? [String: Any])?.string("eventID"))
        let ownApp = try #require(everything.first { ($0["event"] as? [String: Any])?.string("app") == "app-1" })
        let ownID = try #require((ownApp["event"] as? [String: Any])?.string("eventID"))

        let other = try await ask(["afterEventID": otherID], key: "dash")
        let unknownID = String(otherID.reversed())
        let unknown = try await ask(["afterEventID": unknownID], key: "dash")
        #expect(other.string("error") != nil, "\(other)")
        #expect(
            other.string("error") == unknown.string("error")?.replacingOccurrences(of: unknownID, with: otherID),
            "\(other)\n\(unknown)")
        #expect(other.count == 1 && unknown.count == 1)
        // The key of every application, and the key's own application's event, are answered.
        #expect(try await ask(["afterEventID": otherID], key: "ops")["events"] != nil)
        #expect(try await ask(["afterEventID": ownID], key: "dash")["events"] != nil)
    }

    /// On both paths: with live filtering the limited key dash is removed; without (libzmq < 4.3.5, where dash never
    /// gets in) the unlimited key watch.
    @Test(.enabled(if: notifierLibzmq != nil))
    func aSubscriberKeyRemovedBySIGHUPIsDroppedFromTheLiveSocket() async throws {
        let all = Self.events(journeys: 14)
        // The events (10 s of them) start once both clients are connected: ops must still be getting them after the
        // reload, however long a busy machine took to start the clients.
        let (keys, keyed) = try await Self.start(all, rate: 25, paused: true)
        defer {
            keyed.stop()
            keys.remove()
        }
        let notifier = keyed.notifier
        let revokedName = Self.filtersLive ? "dash" : "watch"
        let revoked = try Live(notifier, keys, key: revokedName, subscribe: [""], timeout: 20)
        let ops = try Live(notifier, keys, key: "ops", subscribe: [""], timeout: 20)
        defer {
            revoked.kill()
            ops.kill()
        }
        let connected = await eventually(timeout: 20) { revoked.connected && ops.connected }
        try #require(connected, "\(revoked.child.tail())\n\(ops.child.tail())\n\(notifier.logs())")
        keyed.feed.resume()
        let flowing = await eventually(timeout: 20) { revoked.topics.count > 3 && ops.topics.count > 3 }
        try #require(flowing, "\(revoked.child.tail())\n\(notifier.logs())")

        try keys.writeAllowList(Self.filtersLive ? ["ops", "watch"] : ["dash", "ops"])
        let current = try #require(notifier.current)
        current.signal(SIGHUP)
        let reloaded = await eventually(timeout: 20) {
            current.stderr.contains { $0.text.contains("every subscriber connection dropped") }
        }
        #expect(reloaded, "\(notifier.logs())")
        let revokedAt = revoked.messages.last?.t ?? 0
        for client in [revoked, ops] { _ = await client.child.waitForExit(timeout: 40) }
        // Whatever was in flight may still arrive briefly; after that the removed key gets nothing, the other goes on.
        let revokedLater = revoked.messages.filter { $0.t > revokedAt + 1 }
        #expect(revokedLater.isEmpty, "\(revokedLater)")
        let opsLast = try #require(ops.messages.last)
        #expect(opsLast.t > revokedAt + 1, "ops reconnects and goes on: \(ops.messages.suffix(5))\n\(notifier.logs())")
        #expect(
            current.stderr.contains {
                $0.text.contains("msg=\"connection refused\"") && $0.text.contains("role=subscriber")
            },
            "\(notifier.logs())")
    }
}
