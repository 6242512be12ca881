import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing

/// Issue 7, subscriber keys limited to applications on the LIVE socket: the notifier's XPUB applies, for each
/// subscription, only the prefixes of the key's applications, whatever prefix is asked. The clients are pyzmq XSUB
/// sockets (`live_subscriber.py`), which filter nothing on their side, so every message the notifier sends is seen;
/// and `subscriber.py`, a plain SUB as alerting systems use. Events of app-1, app-2 and app-10 flow from the fake
/// detection feed meanwhile.
@Suite("SecurityLivePublish", .serialized)
struct SecurityLivePublishTests {
    /// The notifier's key pair; subscriber keys dash (app-1 only) and ops (every application).
    struct Keys {
        let folder: URL
        var serverSecret: String { path("notify.key") }
        var serverPublic: String { path("notify.key.pub") }
        var allowList: String { path("allow.txt") }
        let lines: [String: String]
        func path(_ name: String) -> String { folder.appendingPathComponent(name).path }

        init() async throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("roadsave-live-\(UUID().uuidString.prefix(8))")
            _ = try await SecurityTests.Keys.roadsave(["keygen", "notify", "--directory", folder.path])
            var lines: [String: String] = [:]
            for (name, apps) in [("dash", ["--apps", "app-1"]), ("ops", [])] {
                let made = try await SecurityTests.Keys.roadsave(["keygen", name, "--directory", folder.path,
                                                                  "--role", "subscriber"] + apps)
                let line = try #require(made.first { $0.hasPrefix("allow-list line: ") })
                lines[name] = String(line.dropFirst("allow-list line: ".count))
            }
            self.lines = lines
            try write(["dash", "ops"])
        }

        func write(_ names: [String]) throws {
            try (names.compactMap { lines[$0] }.joined(separator: "\n") + "\n").write(toFile: allowList, atomically: true,
                                                                                       encoding: .utf8)
        }

        func remove() { try? FileManager.default.removeItem(at: folder) }
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
        init(_ notifier: NotifierDurabilityTests.Notifier, _ keys: Keys, key: String, subscribe: [String],
             unsubscribe: [String] = [], timeout: Double) throws {
            child = try Child.python("live_subscriber.py", ["--endpoint", notifier.publishEndpoint, "--server-key", keys.serverPublic,
                                                            "--key", keys.path("\(key).key"), "--timeout", String(timeout)]
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
        var connected: Bool { child.stderr.contains { $0.text.contains("\"connected\"") } }
        func kill() { child.kill() }
    }

    static func app(_ topic: String) -> String { String(topic.split(separator: ".")[1]) }

    @Test func aKeyLimitedToAnApplicationGetsOnlyItsEventsWhateverItAsksAndUnsubscribingWorks() async throws {
        let keys = try await Keys()
        defer { keys.remove() }
        let all = Self.events(journeys: 14)
        let feed = try await NotifierDurabilityTests.Feed(all, rate: 25)
        defer { feed.kill() }
        let notifier = NotifierDurabilityTests.Notifier(feed: feed, extra: ["--curve-secret-key", keys.serverSecret,
                                                                              "--allow", keys.allowList])
        defer { notifier.kill(); notifier.removeData() }
        try await notifier.start()

        let timeout = 9.0
        let everything = try Live(notifier, keys, key: "dash", subscribe: [""], timeout: timeout)
        let crashes = try Live(notifier, keys, key: "dash", subscribe: ["crashDetected"], timeout: timeout)
        let starts = try Live(notifier, keys, key: "dash", subscribe: ["tripDidStart.app-"], timeout: timeout)
        let ops = try Live(notifier, keys, key: "ops", subscribe: [""], timeout: timeout)
        // Two requests that both give crashDetected.app-1.: dropping one keeps it; dropping both stops everything.
        let dropping = try Live(notifier, keys, key: "dash", subscribe: ["", "crashDetected"],
                                unsubscribe: ["crashDetected@2.5", "@5.5"], timeout: timeout)
        let sub = try Child.python("subscriber.py", ["--endpoint", notifier.publishEndpoint, "--timeout", String(timeout),
                                                     "--server-key", keys.serverPublic, "--key", keys.path("dash.key")])
        let clients = [everything, crashes, starts, ops, dropping]
        defer { for client in clients { client.kill() }; sub.kill() }
        for client in clients { _ = await client.child.waitForExit(timeout: timeout + 10) }
        _ = await sub.waitForExit(timeout: 10)
        let logs = notifier.logs()

        for client in clients { #expect(client.connected, "\(client.child.tail())\n\(logs)") }
        #expect(everything.topics.count > 20, "\(everything.child.tail())\n\(logs)")
        #expect(everything.topics.allSatisfy { Self.app($0) == "app-1" }, "\(everything.topics)")
        #expect(Set(everything.topics.map { String($0.split(separator: ".")[0]) })
                == ["tripDidStart", "crashDetected", "tripDidEnd"], "\(everything.topics)")
        #expect(!crashes.topics.isEmpty && crashes.topics.allSatisfy { $0.hasPrefix("crashDetected.app-1.") },
                "\(crashes.topics)")
        #expect(!starts.topics.isEmpty && starts.topics.allSatisfy { $0.hasPrefix("tripDidStart.app-1.") }, "\(starts.topics)")
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
        #expect(between.contains { $0.topic.hasPrefix("crashDetected.app-1.") },
                "\"\" still asks for app-1's crashes after crashDetected went: \(dropping.messages)")
        // Each event once: the two requests applied one prefix, not two.
        let beforeSecond = dropping.messages.filter { $0.t < second }.map(\.position)
        #expect(Set(beforeSecond).count == beforeSecond.count, "\(dropping.messages)")
        let after = dropping.messages.filter { $0.t > second + 0.5 }
        #expect(after.isEmpty, "after the last unsubscription: \(after)")
        #expect(dropping.messages.contains { $0.t < second }, "\(dropping.messages)")
    }

    @Test func afterEventIDOfAnotherApplicationsEventAnswersLikeAnUnknownOne() async throws {
        let keys = try await Keys()
        defer { keys.remove() }
        let all = Self.events(journeys: 1)
        let feed = try await NotifierDurabilityTests.Feed(all)
        defer { feed.kill() }
        let notifier = NotifierDurabilityTests.Notifier(feed: feed, extra: ["--curve-secret-key", keys.serverSecret,
                                                                              "--allow", keys.allowList])
        defer { notifier.kill(); notifier.removeData() }
        try await notifier.start()
        let stored = await eventually(timeout: 15) { feed.acknowledged == all.count }
        try #require(stored, "\(notifier.logs())")

        func ask(_ request: [String: Any], key: String) async throws -> [String: Any] {
            let replies = try await Control.send([request], to: notifier.catchUpEndpoint, timeout: 8,
                                                 extra: ["--server-key", keys.serverPublic, "--timeout", "2",
                                                         "--key", keys.path("\(key).key")])
            return try #require(replies.first, "\(notifier.logs())")
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
        #expect(other.string("error") == unknown.string("error")?.replacingOccurrences(of: unknownID, with: otherID),
                "\(other)\n\(unknown)")
        #expect(other.count == 1 && unknown.count == 1)
        // The key of every application, and the key's own application's event, are answered.
        #expect(try await ask(["afterEventID": otherID], key: "ops")["events"] != nil)
        #expect(try await ask(["afterEventID": ownID], key: "dash")["events"] != nil)
    }

    @Test func aSubscriberKeyRemovedBySIGHUPIsDroppedFromTheLiveSocket() async throws {
        let keys = try await Keys()
        defer { keys.remove() }
        let all = Self.events(journeys: 14)
        let feed = try await NotifierDurabilityTests.Feed(all, rate: 25)
        defer { feed.kill() }
        let notifier = NotifierDurabilityTests.Notifier(feed: feed, extra: ["--curve-secret-key", keys.serverSecret,
                                                                              "--allow", keys.allowList])
        defer { notifier.kill(); notifier.removeData() }
        try await notifier.start()
        let dash = try Live(notifier, keys, key: "dash", subscribe: [""], timeout: 9)
        let ops = try Live(notifier, keys, key: "ops", subscribe: [""], timeout: 9)
        defer { dash.kill(); ops.kill() }
        let flowing = await eventually(timeout: 8) { dash.topics.count > 3 && ops.topics.count > 3 }
        try #require(flowing, "\(dash.child.tail())\n\(notifier.logs())")

        try keys.write(["ops"])
        let current = try #require(notifier.current)
        current.signal(SIGHUP)
        let reloaded = await eventually(timeout: 5) { current.stderr.contains { $0.text.contains("every subscriber connection dropped") } }
        #expect(reloaded, "\(notifier.logs())")
        let revokedAt = dash.messages.last?.t ?? 0
        for client in [dash, ops] { _ = await client.child.waitForExit(timeout: 20) }
        // Whatever was in flight may still arrive briefly; after that the removed key gets nothing, the other goes on.
        let dashLater = dash.messages.filter { $0.t > revokedAt + 1 }
        #expect(dashLater.isEmpty, "\(dashLater)")
        let opsLast = try #require(ops.messages.last)
        #expect(opsLast.t > revokedAt + 1, "ops reconnects and goes on: \(ops.messages.suffix(5))\n\(notifier.logs())")
        #expect(current.stderr.contains { $0.text.contains("msg=\"connection refused\"") && $0.text.contains("role=subscriber") },
                "\(notifier.logs())")
    }
}
