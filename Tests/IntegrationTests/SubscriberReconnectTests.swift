import Foundation
import RoadSaveTestKit
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 36: a live reconnect costs a subscriber nothing it cannot know it missed, with sparse events (crash
/// alerts: nothing else is published). The notifier with keys, a fake detection feed that releases one crash at a
/// time when the test says, and four subscribers: `kept` (pyzmq XSUB, its key unchanged), `rotated` (its key then
/// removed), `swapped` (its key replaced under the same name) and `recipe` (docs/examples/alerting_subscriber.py,
/// the documented recipe: a catch-up from the last position seen on every handshake), and `roadsave tail`, which
/// follows the same recipe. After a SIGHUP that removes
/// a key the kept subscriber reconnects with nothing published. After one that replaces a key, a crash 0.1 s later
/// reaches the recipe exactly once, and one 5 s later reaches the kept subscriber live and the recipe once; the
/// removed and replaced keys get neither. Then the same after the notifier is SIGKILLed and started again.
@Suite("SubscriberReconnect", .serialized)
struct SubscriberReconnectTests {
    static let recipe = TestPaths.repository.appendingPathComponent("docs/examples/alerting_subscriber.py")

    /// Four crash alerts, one per device, nothing else.
    static var crashes: [[String: Any]] {
        (0..<4).map { index in
            [
                "event": "crashDetected", "app": "demo-app", "user": "driver-\(index)",
                "crashID": "reconnect-crash-\(index)",
                "confidence": "high", "detectedAt": 1_700_000_300.25 + Double(index), "latitude": -33.9248685,
                "longitude": 18.4240553, "isTest": false,
            ]
        }
    }

    /// The subscriber keys: all of every application (live filtering aside, `SecurityLivePublishTests`).
    static func keys() async throws -> KeyFolder {
        var keys = try await KeyFolder(
            prefix: "roadsave-reconnect", servers: ["notify"],
            clients: [
                ("kept", ["--role", "subscriber"]), ("rotated", ["--role", "subscriber"]),
                ("swapped", ["--role", "subscriber"]), ("recipe", ["--role", "subscriber"]),
            ])
        try await keys.add("swapped-new", ["--role", "subscriber"])
        try keys.writeAllowList(["kept", "rotated", "swapped", "recipe"])
        return keys
    }

    /// The allow-list without `rotated` (`swapNow`: and with swapped's name on a new key).
    static func rotate(_ keys: KeyFolder, swapNow: Bool) throws {
        let newSwapped = try #require(keys.lines["swapped-new"]).replacingOccurrences(
            of: " swapped-new", with: " swapped")
        let lines = [keys.lines["kept"], keys.lines["recipe"], swapNow ? newSwapped : keys.lines["swapped"]].compactMap
        { $0 }
        try (lines.joined(separator: "\n") + "\n").write(toFile: keys.allowList, atomically: true, encoding: .utf8)
    }

    /// SIGHUP, and the notifier's word that it dropped the live connections (the `count`-th time).
    static func reload(_ notifier: NotifierDurabilityTests.Notifier, count: Int) async throws {
        let current = try #require(notifier.current)
        current.signal(SIGHUP)
        let reloaded = await eventually(timeout: 20) {
            current.stderr.filter { $0.text.contains("every subscriber connection dropped") }.count >= count
        }
        try #require(reloaded, "\(notifier.logs())")
    }

    /// A pyzmq XSUB (`SecurityLivePublishTests.Live`) subscribed to everything with the key `key`.
    static func live(_ notifier: NotifierDurabilityTests.Notifier, _ keys: KeyFolder, key: String) throws
        -> SecurityLivePublishTests.Live
    {
        try SecurityLivePublishTests.Live(notifier, keys, key: key, subscribe: [""], timeout: 300)
    }

    /// The documented recipe: each event once, as {"position", "event", "via"}.
    final class Recipe {
        let child: Child
        init(_ notifier: NotifierDurabilityTests.Notifier, _ keys: KeyFolder) throws {
            child = try Child.python(
                SubscriberReconnectTests.recipe,
                [
                    "--endpoint", notifier.publishEndpoint, "--catch-up-endpoint", notifier.catchUpEndpoint,
                    "--server-key", keys.serverPublic, "--key", keys.path("recipe.key"), "--timeout", "300",
                ], name: "recipe")
        }
        var delivered: [(position: Int, crashID: String, via: String)] {
            child.jsonLines.compactMap { line in
                guard let object = line.value as? [String: Any], let position = object.number("position"),
                    let event = object["event"] as? [String: Any], let crashID = event.string("crashID")
                else { return nil }
                return (Int(position), crashID, object.string("via") ?? "?")
            }
        }
        func count(_ crashID: String) -> Int { delivered.filter { $0.crashID == crashID }.count }
        var warnings: [String] { child.jsonLines.compactMap { ($0.value as? [String: Any])?.string("warning") } }
        /// Catch-ups it finished (it says each on standard error).
        var resyncs: Int { child.stderr.filter { $0.text.contains("\"resynced\"") }.count }
        func kill() { child.kill() }
    }

    static func crashID(_ index: Int) -> String { "reconnect-crash-\(index)" }

    /// `roadsave tail` from now, with the recipe's key: it catches up on its reconnects too.
    final class Tail {
        let child: Child
        init(_ notifier: NotifierDurabilityTests.Notifier, _ keys: KeyFolder) throws {
            child = try Child(
                name: "tail", executable: Executables.named("roadsave"),
                arguments: [
                    "tail", "--endpoint", notifier.publishEndpoint, "--catch-up-endpoint", notifier.catchUpEndpoint,
                    "--server-key", keys.serverPublic, "--key", keys.path("recipe.key"), "--show-position",
                    "--timeout", "300", "--log-level", "info",
                ])
        }
        var crashIDs: [String] {
            child.jsonLines.compactMap { (($0.value as? [String: Any])?["event"] as? [String: Any])?.string("crashID") }
        }
        func count(_ crashID: String) -> Int { crashIDs.filter { $0 == crashID }.count }
        func kill() { child.kill() }
    }

    @Test func aReconnectedSubscriberMissesNothingWithSparseEvents() async throws {
        let keys = try await Self.keys()
        defer { keys.remove() }
        let keyed = try await KeyedNotifier(
            Self.crashes, step: true, serverSecret: keys.serverSecret, allowList: keys.allowList)
        defer { keyed.stop() }
        let notifier = keyed.notifier
        let kept = try Self.live(notifier, keys, key: "kept")
        let rotated = try Self.live(notifier, keys, key: "rotated")
        let swapped = try Self.live(notifier, keys, key: "swapped")
        let recipe = try Recipe(notifier, keys)
        let tail = try Tail(notifier, keys)
        defer {
            for client in [kept, rotated, swapped] { client.kill() }
            recipe.kill()
            tail.kill()
        }
        let clients =
            "\(kept.child.tail(5))\n\(rotated.child.tail(5))\n\(swapped.child.tail(5))\n\(recipe.child.tail(5))"
        let connected = await eventually(timeout: 30) {
            [kept, rotated, swapped].allSatisfy { $0.handshakes >= 1 } && recipe.resyncs >= 1
                && tail.child.stderr.contains { $0.text.contains("subscribed") }
        }
        try #require(connected, "\(clients)\n\(notifier.logs())")

        // 1. rotated removed: the kept subscriber reconnects with nothing published (the feed releases nothing yet).
        try Self.rotate(keys, swapNow: false)
        try await Self.reload(notifier, count: 1)
        let reconnected = await eventually(timeout: 20) { kept.handshakes >= 2 }
        #expect(
            reconnected,
            "the kept subscriber did not reconnect after the reload\n\(kept.child.tail())\n\(notifier.logs())")
        _ = await eventually(timeout: 20) { recipe.resyncs >= 2 }

        // 2. swapped replaced; 0.1 s after this reload the first crash (the test's input: when the alert comes).
        try Self.rotate(keys, swapNow: true)
        try await Self.reload(notifier, count: 2)
        let reloadedAt = ProcessInfo.processInfo.systemUptime
        try await Task.sleep(nanoseconds: 100_000_000)
        keyed.feed.resume()
        let first = await eventually(timeout: 30) { recipe.count(Self.crashID(0)) >= 1 }
        #expect(
            first,
            "the crash raised 0.1 s after the reload never reached the recipe\n\(recipe.child.tail())\n\(notifier.logs())"
        )
        // 5 s after the reload, the second: live to the kept subscriber.
        try await Task.sleep(nanoseconds: UInt64(max(0, reloadedAt + 5 - ProcessInfo.processInfo.systemUptime) * 1e9))
        keyed.feed.resume()
        let second = await eventually(timeout: 30) { kept.positions.contains(2) && recipe.count(Self.crashID(1)) >= 1 }
        #expect(
            second,
            "the crash 5 s after the reload: kept \(kept.positions), recipe \(recipe.delivered)\n\(notifier.logs())")

        // 2. The notifier SIGKILLed and started again: the same.
        let handshakesBefore = kept.handshakes
        try #require(notifier.current).kill()
        try await notifier.start()
        let restartedAt = ProcessInfo.processInfo.systemUptime
        try await Task.sleep(nanoseconds: 100_000_000)
        keyed.feed.resume()
        let third = await eventually(timeout: 30) { recipe.count(Self.crashID(2)) >= 1 }
        #expect(
            third,
            "the crash 0.1 s after the restart never reached the recipe\n\(recipe.child.tail())\n\(notifier.logs())")
        let keptBack = await eventually(timeout: 20) { kept.handshakes > handshakesBefore }
        #expect(keptBack, "the kept subscriber did not reconnect to the restarted notifier\n\(kept.child.tail())")
        try await Task.sleep(nanoseconds: UInt64(max(0, restartedAt + 5 - ProcessInfo.processInfo.systemUptime) * 1e9))
        keyed.feed.resume()
        let fourth = await eventually(timeout: 30) { kept.positions.contains(4) && recipe.count(Self.crashID(3)) >= 1 }
        #expect(
            fourth,
            "the crash 5 s after the restart: kept \(kept.positions), recipe \(recipe.delivered)\n\(notifier.logs())")

        // Each crash exactly once to the recipe (a moment for any repeat to show).
        try await Task.sleep(nanoseconds: 1_500_000_000)
        for index in 0..<4 {
            #expect(recipe.count(Self.crashID(index)) == 1, "\(Self.crashID(index)): \(recipe.delivered)")
        }
        let tailGotAll = await eventually(timeout: 10) { (0..<4).allSatisfy { tail.count(Self.crashID($0)) >= 1 } }
        #expect(
            tailGotAll && (0..<4).allSatisfy { tail.count(Self.crashID($0)) == 1 },
            "roadsave tail: \(tail.crashIDs)\n\(tail.child.tail())")
        #expect(recipe.warnings.isEmpty, "\(recipe.warnings)")
        // The removed and the replaced keys got none of them.
        #expect(
            rotated.positions.isEmpty && swapped.positions.isEmpty,
            "rotated \(rotated.positions), swapped \(swapped.positions)")
        print(
            "subscriber reconnect: recipe \(recipe.delivered.map { "\($0.crashID.suffix(1)) via \($0.via)" }), kept live \(kept.positions), handshakes \(kept.handshakes)"
        )
    }
}
