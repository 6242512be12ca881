import Foundation
import RoadSaveTestKit
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 7, CurveZMQ on the notifier's PUB and catch-up sockets: every subscriber needs a key listed as subscriber;
/// catch-up replies hold only the applications the key is listed for. pyzmq curve clients (`subscriber.py`,
/// `control.py` as a REQ catch-up client), events from the fake detection feed (`event_feed.py`).
@Suite("SecurityNotifier", .serialized)
struct SecurityNotifierTests {
    /// The notifier's key pair; subscriber keys dash (demo-app only) and ops (every application).
    static func keys() async throws -> KeyFolder {
        try await KeyFolder(
            servers: ["notify"],
            clients: [
                ("dash", ["--role", "subscriber", "--apps", "demo-app"]),
                ("ops", ["--role", "subscriber"]),
            ])
    }

    /// Two devices' journeys: driver-0 of demo-app, driver-1 of other-app.
    static func events() -> [[String: Any]] {
        NotifierDurabilityTests.fleet(devices: 2, journeys: 1).map { event in
            var event = event
            if event.string("user") == "driver-1" { event["app"] = "other-app" }
            return event
        }
    }

    /// The reply to {"after": 0} with the key file `key` of `keys` (nil: a fresh key nobody listed).
    static func catchUp(_ keyed: KeyedNotifier, keys: KeyFolder, key: String?) async throws -> [String: Any]? {
        try await keyed.catchUp(["after": 0], serverPublic: keys.serverPublic, keyFile: key.map(keys.path))
    }

    @Test func catchUpRepliesHoldOnlyTheApplicationsOfTheKeyAndUnlistedKeysGetNothing() async throws {
        let keys = try await Self.keys()
        defer { keys.remove() }
        let all = Self.events()
        let keyed = try await KeyedNotifier(all, serverSecret: keys.serverSecret, allowList: keys.allowList)
        defer { keyed.stop() }
        let notifier = keyed.notifier
        try #require(await keyed.storedAll(), "\(notifier.logs())")

        let ops = try #require(try await Self.catchUp(keyed, keys: keys, key: "ops.key"), "\(notifier.logs())")
        let opsEvents = try #require(ops["events"] as? [[String: Any]], "\(ops)")
        #expect(opsEvents.count == all.count)

        let dash = try #require(try await Self.catchUp(keyed, keys: keys, key: "dash.key"), "\(notifier.logs())")
        let dashEvents = try #require(dash["events"] as? [[String: Any]], "\(dash)")
        #expect(dashEvents.count == all.count / 2, "\(dash)")
        #expect(dashEvents.allSatisfy { ($0["event"] as? [String: Any])?.string("app") == "demo-app" }, "\(dash)")
        // The key's view is filtered, not cut short: the next request starts after everything examined.
        #expect(dash.number("next") == Double(all.count) && dash.number("head") == Double(all.count), "\(dash)")

        let unlisted = try await Self.catchUp(keyed, keys: keys, key: nil)
        #expect(unlisted?["timeout"] as? Bool == true, "\(String(describing: unlisted))")
        let current = try #require(notifier.current)
        // Logged by the service's monitor on its own time, after the client gave up on its clock: waited for.
        #expect(
            await eventually(timeout: 20) {
                current.stderr.contains {
                    $0.text.contains("msg=\"connection refused\"") && $0.text.contains("role=subscriber")
                }
            }, "\(notifier.logs())")
    }

    /// dash (demo-app only) has a catch-up connection open; its line is replaced by another key under its name (for
    /// every application), or removed, and SIGHUP: its next request on that connection is answered with an error and
    /// no event, of either application.
    @Test(arguments: KeyChange.allCases)
    func aSubscriberKeyChangedBySIGHUPIsRefusedOnTheCatchUpConnectionItHasOpen(_ change: KeyChange) async throws {
        let keys = try await Self.keys()
        defer { keys.remove() }
        let newKey = try await makeKey("dash-new", role: "subscriber", in: keys.folder)
        let all = Self.events()
        let keyed = try await KeyedNotifier(all, serverSecret: keys.serverSecret, allowList: keys.allowList)
        defer { keyed.stop() }
        let notifier = keyed.notifier
        try #require(await keyed.storedAll(), "\(notifier.logs())")
        let current = try #require(notifier.current)
        let held = try HeldConnection(
            "catch-up", endpoint: notifier.catchUpEndpoint, serverKey: keys.serverPublic,
            key: keys.path("dash.key"), requests: [["after": 0], ["after": 0]], holdBefore: 1)
        defer { held.stop() }
        let before = try #require(await held.reply(0) as? [String: Any], "\(held.child.tail())\n\(notifier.logs())")
        let events = try #require(before["events"] as? [[String: Any]], "\(before)")
        #expect(events.count == all.count / 2, "\(before)")
        #expect(events.allSatisfy { ($0["event"] as? [String: Any])?.string("app") == "demo-app" }, "\(before)")
        try #require(await held.holding(), "\(held.child.tail())")

        let reloaded = try await apply(
            change, role: "subscriber", name: "dash", newKey: newKey, allowList: keys.allowList,
            reloading: [current])
        try #require(reloaded, "\(notifier.logs())")
        try held.resume()
        let after = try #require(await held.reply(1) as? [String: Any], "\(held.child.tail())\n\(notifier.logs())")
        #expect(
            after.string("error")
                == "subscriber key \"dash\" is no longer in the allow-list (removed or replaced since this connection's handshake)",
            "\(after)")
        #expect(after["events"] == nil && after.count == 1, "\(after)")
        #expect(held.handshakes == 1, "both requests over the one connection\n\(held.child.tail())")
        #expect(
            current.stderr.contains {
                $0.text.contains("msg=\"catch-up request refused: subscriber key no longer listed\"")
                    && $0.text.contains("key=dash")
            }, "\(notifier.logs())")
    }

    @Test func everySubscriberOnThePublisherNeedsAListedKey() async throws {
        let keys = try await Self.keys()
        defer { keys.remove() }
        // The six events (1.5 s of them) start once the listed subscriber is connected: from the notifier's start, a
        // busy machine could end them before the Python subscribers were up (and nothing received proves nothing).
        let keyed = try await KeyedNotifier(
            Self.events(), rate: 4, paused: true, serverSecret: keys.serverSecret,
            allowList: keys.allowList)
        defer { keyed.stop() }
        let notifier = keyed.notifier

        let listed = try Child.python(
            "subscriber.py",
            [
                "--endpoint", notifier.publishEndpoint, "--timeout", "8",
                "--server-key", keys.serverPublic, "--key", keys.path("ops.key"),
            ])
        defer { listed.kill() }
        let unlisted = try Child.python(
            "subscriber.py",
            [
                "--endpoint", notifier.publishEndpoint, "--timeout", "8",
                "--server-key", keys.serverPublic,
            ])
        defer { unlisted.kill() }
        let plain = try Child.python("subscriber.py", ["--endpoint", notifier.publishEndpoint, "--timeout", "8"])
        defer { plain.kill() }
        #expect(
            await eventually(timeout: 20) { listed.stderr.contains { $0.text.contains("{\"connected\"") } },
            "\(listed.tail())\n\(notifier.logs())")
        keyed.feed.resume()
        for child in [listed, unlisted, plain] { _ = await child.waitForExit(timeout: 30) }
        #expect(!listed.stdout.isEmpty, "\(listed.tail())\n\(notifier.logs())")
        #expect(unlisted.stdout.isEmpty && plain.stdout.isEmpty, "\(unlisted.tail())\n\(plain.tail())")
        #expect(!unlisted.stderr.contains { $0.text.contains("{\"connected\"") }, "\(unlisted.tail())")
        #expect(listed.stderr.contains { $0.text.contains("{\"connected\"") }, "\(listed.tail())")
    }

    @Test func aNonLoopbackPublisherOrCatchUpWithoutKeysNeedsInsecure() async throws {
        let ports = Ports.reserve(3)
        let data = FileManager.default.temporaryDirectory.appendingPathComponent(
            "roadsave-curve-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: data) }
        for (flag, other) in [
            ("--publish-endpoint", "--catch-up-endpoint"), ("--catch-up-endpoint", "--publish-endpoint"),
        ] {
            let arguments = [
                "--events-endpoint", "tcp://127.0.0.1:\(ports[0])", "--data-dir", data.path,
                flag, "tcp://0.0.0.0:\(ports[1])", other, "tcp://127.0.0.1:\(ports[2])",
            ]
            let refused = try Child(
                name: "notify", executable: Executables.named("roadsave-notify"), arguments: arguments)
            defer { refused.kill() }
            #expect(await refused.waitForExit(timeout: 15) == 2)
            #expect(
                refused.stderr.contains {
                    $0.text.contains("\(flag) tcp://0.0.0.0:\(ports[1]) is reachable from other machines")
                },
                "\(refused.tail())")
        }
        let arguments = [
            "--events-endpoint", "tcp://127.0.0.1:\(ports[0])", "--data-dir", data.path,
            "--publish-endpoint", "tcp://0.0.0.0:\(ports[1])", "--catch-up-endpoint", "tcp://0.0.0.0:\(ports[2])",
            "--insecure",
        ]
        let insecure = try Child(name: "notify", executable: Executables.named("roadsave-notify"), arguments: arguments)
        defer { insecure.kill() }
        let started = await eventually(timeout: 15) { insecure.stderr.contains { $0.text.contains("msg=running") } }
        #expect(started, "\(insecure.tail())")
        #expect(insecure.stderr.contains { $0.text.contains("no CurveZMQ keys") }, "\(insecure.tail())")
    }
}
