import Foundation
import RoadSaveTestKit
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 7, CurveZMQ on detection's control socket: operator keys (optionally limited to applications) from the
/// allow-list, an audit line for every command, driven by pyzmq curve clients (`control.py --server-key --key`).
@Suite("SecurityControl", .serialized)
struct SecurityControlTests {
    /// A folder with detection's key pair and operator keys: alice for app-1 only, bob for every application.
    static func keys() async throws -> KeyFolder {
        try await KeyFolder(
            servers: ["detect"],
            clients: [
                ("alice", ["--role", "operator", "--apps", "app-1"]),
                ("bob", ["--role", "operator"]),
            ])
    }

    /// detection with keys, its control socket on loopback, live (no ingest needed for commands).
    static func startDetect(_ keys: KeyFolder) async throws -> (Child, control: String) {
        let ports = Ports.reserve(3)
        let detect = try Child(
            name: "detect", executable: Executables.named("roadsave-detect"),
            arguments: [
                "--records-endpoint", "tcp://127.0.0.1:\(ports[0])", "--control-endpoint",
                "tcp://127.0.0.1:\(ports[1])",
                "--events-endpoint", "tcp://127.0.0.1:\(ports[2])", "--data-dir", keys.path("data-\(ports[0])"),
                "--curve-secret-key", keys.serverSecret, "--allow", keys.allowList,
            ])
        let live = await eventually(timeout: 20) { detect.stderr.contains { $0.text.contains("msg=live") } }
        try #require(live, "\(detect.tail())")
        return (detect, "tcp://127.0.0.1:\(ports[1])")
    }

    static func command(_ app: String, user: String = "op-user-1") -> [String: Any] {
        ["command": "startMonitoring", "app": app, "user": user]
    }

    @Test func anOperatorKeyLimitedToAnApplicationIsRefusedForAnotherAndEveryCommandIsAudited() async throws {
        let keys = try await Self.keys()
        defer { keys.remove() }
        let (detect, control) = try await Self.startDetect(keys)
        defer { detect.kill() }

        let alice = ["--server-key", keys.serverPublic, "--key", keys.path("alice.key")]
        let replies = try await Control.send(
            [Self.command("app-2-secret-app"), Self.command("app-1")], to: control,
            extra: alice)
        try #require(replies.count == 2, "\(detect.tail())")
        #expect(replies[0]["ok"] as? Bool == false)
        #expect(replies[0].string("error") == "forbidden", "\(replies[0])")
        #expect(
            replies[0].string("message")?.contains("operator key \"alice\" may not control application") == true,
            "\(replies[0])")
        #expect(replies[1].string("error") != "forbidden", "\(replies[1])")

        let bob = try await Control.send(
            [Self.command("app-2-secret-app")], to: control,
            extra: ["--server-key", keys.serverPublic, "--key", keys.path("bob.key")])
        #expect(bob.first?.string("error") != "forbidden", "\(bob)")

        // The audit trail: key name, command, app masked, user, result; the refused one as a warning.
        let lines = detect.stderr.map(\.text)
        let refused = lines.filter { $0.contains("msg=\"control command refused\"") }
        #expect(refused.count == 1, "\(detect.tail())")
        #expect(
            refused.first.map {
                $0.contains("key=alice") && $0.contains("command=startMonitoring")
                    && $0.contains("user=op-user-1") && $0.contains("result=forbidden") && $0.contains("app=\"ap…pp\"")
            } == true,
            "\(refused)")
        let accepted = lines.filter { $0.contains("msg=\"control command\"") }
        #expect(accepted.count == 2, "\(detect.tail())")
        #expect(
            accepted.contains { $0.contains("key=alice") } && accepted.contains { $0.contains("key=bob") },
            "\(accepted)")
        // The application stays masked and no key material reaches the log.
        let secrets = try [keys.path("alice.key"), keys.path("bob.key"), keys.serverSecret].map { file in
            try #require(
                String(contentsOfFile: file, encoding: .utf8).split(separator: "\"").dropLast().last.map(String.init))
        }
        #expect(!lines.contains { line in line.contains("app-2-secret-app") || secrets.contains { line.contains($0) } })
    }

    /// Acknowledging journal gaps concerns every application of the shard: a key limited to some may not.
    @Test func onlyAnOperatorKeyForEveryApplicationAcknowledgesJournalGaps() async throws {
        let keys = try await Self.keys()
        defer { keys.remove() }
        let (detect, control) = try await Self.startDetect(keys)
        defer { detect.kill() }
        let request: [String: Any] = ["command": "acknowledgeJournalGaps"]
        let alice = try await Control.send(
            [request], to: control,
            extra: ["--server-key", keys.serverPublic, "--key", keys.path("alice.key")])
        #expect(alice.first?.string("error") == "forbidden", "\(alice)\n\(detect.tail())")
        #expect(alice.first?.string("message")?.contains("needs a key listed for all") == true, "\(alice)")
        let bob = try await Control.send(
            [request], to: control,
            extra: ["--server-key", keys.serverPublic, "--key", keys.path("bob.key")])
        #expect(bob.first?.bool("ok") == true && bob.first?.number("acknowledged") == 0, "\(bob)\n\(detect.tail())")
        let lines = detect.stderr.map(\.text)
        #expect(
            lines.contains {
                $0.contains("msg=\"control command refused\"") && $0.contains("key=alice")
                    && $0.contains("command=acknowledgeJournalGaps") && $0.contains("result=forbidden")
            }, "\(detect.tail())")
        #expect(
            lines.contains {
                $0.contains("msg=\"control command\"") && $0.contains("key=bob")
                    && $0.contains("command=acknowledgeJournalGaps")
            }, "\(detect.tail())")
    }

    @Test func anUnlistedKeyGetsNoReplyAndTheRefusalIsLogged() async throws {
        let keys = try await Self.keys()
        defer { keys.remove() }
        let (detect, control) = try await Self.startDetect(keys)
        defer { detect.kill() }

        let replies = try await Control.send(
            [Self.command("app-1")], to: control, timeout: 8,
            extra: ["--server-key", keys.serverPublic, "--timeout", "2"])
        #expect(replies.first?["timeout"] as? Bool == true, "\(replies)")
        // Logged by the service's monitor on its own time, after the client gave up on its clock: waited for.
        #expect(
            await eventually(timeout: 20) {
                detect.stderr.contains {
                    $0.text.contains("msg=\"connection refused\"") && $0.text.contains("role=operator")
                }
            }, "\(detect.tail())")
        #expect(!detect.stderr.contains { $0.text.contains("msg=\"control command") })
        // A plaintext client gets nowhere either.
        let plain = try await Control.send([Self.command("app-1")], to: control, timeout: 8, extra: ["--timeout", "2"])
        #expect(plain.first?["timeout"] as? Bool == true, "\(plain)")
    }

    @Test func sighupRevokesAnOperatorKeyRemovedFromTheList() async throws {
        let keys = try await Self.keys()
        defer { keys.remove() }
        let (detect, control) = try await Self.startDetect(keys)
        defer { detect.kill() }

        let list = try String(contentsOfFile: keys.allowList, encoding: .utf8)
        try list.split(separator: "\n").filter { !$0.contains(" bob") }.joined(separator: "\n")
            .appending("\n").write(toFile: keys.allowList, atomically: true, encoding: .utf8)
        detect.signal(SIGHUP)
        let reloaded = await eventually(timeout: 10) {
            detect.stderr.contains { $0.text.contains("allow-list re-read") }
        }
        #expect(reloaded, "\(detect.tail())")
        let replies = try await Control.send(
            [Self.command("app-1")], to: control, timeout: 8,
            extra: [
                "--server-key", keys.serverPublic, "--key", keys.path("bob.key"),
                "--timeout", "2",
            ])
        #expect(replies.first?["timeout"] as? Bool == true, "\(replies)")
        #expect(detect.isRunning)
    }

    /// alice (app-1 only) has a connection open; her line is replaced by another key under her name (for every
    /// application), or removed, and SIGHUP: her next command on that connection is forbidden, and audited as refused.
    @Test(arguments: KeyChange.allCases)
    func anOperatorKeyChangedBySIGHUPIsRefusedOnTheConnectionItHasOpen(_ change: KeyChange) async throws {
        let keys = try await Self.keys()
        defer { keys.remove() }
        let newKey = try await makeKey("alice-new", role: "operator", in: keys.folder)
        let (detect, control) = try await Self.startDetect(keys)
        defer { detect.kill() }
        let held = try HeldConnection(
            "control", endpoint: control, serverKey: keys.serverPublic, key: keys.path("alice.key"),
            requests: [Self.command("app-1"), Self.command("app-2", user: "op-user-2")],
            holdBefore: 1)
        defer { held.stop() }
        let before = try #require(await held.reply(0) as? [String: Any], "\(held.child.tail())\n\(detect.tail())")
        #expect(before.string("error") != "forbidden", "\(before)")
        try #require(await held.holding(), "\(held.child.tail())")

        let reloaded = try await apply(
            change, role: "operator", name: "alice", newKey: newKey, allowList: keys.allowList,
            reloading: [detect])
        try #require(reloaded, "\(detect.tail())")
        try held.resume()
        let after = try #require(await held.reply(1) as? [String: Any], "\(held.child.tail())\n\(detect.tail())")
        #expect(after["ok"] as? Bool == false && after.string("error") == "forbidden", "\(after)")
        #expect(
            after.string("message")
                == "operator key \"alice\" is no longer in the allow-list (removed or replaced since this connection's handshake)",
            "\(after)")
        #expect(held.handshakes == 1, "both commands over the one connection\n\(held.child.tail())")
        let refused = detect.stderr.filter { $0.text.contains("msg=\"control command refused\"") }
        #expect(
            refused.count == 1 && refused[0].text.contains("key=alice") && refused[0].text.contains("user=op-user-2")
                && refused[0].text.contains("result=forbidden"), "\(detect.tail())")
    }

    @Test func aNonLoopbackControlBindWithoutKeysNeedsInsecure() async throws {
        let ports = Ports.reserve(3)
        let data = FileManager.default.temporaryDirectory.appendingPathComponent(
            "roadsave-curve-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: data) }
        let arguments = [
            "--records-endpoint", "tcp://127.0.0.1:\(ports[0])", "--control-endpoint", "tcp://*:\(ports[1])",
            "--events-endpoint", "tcp://127.0.0.1:\(ports[2])", "--data-dir", data.path,
        ]
        let refused = try Child(name: "detect", executable: Executables.named("roadsave-detect"), arguments: arguments)
        defer { refused.kill() }
        #expect(await refused.waitForExit(timeout: 15) == 2)
        #expect(
            refused.stderr.contains {
                $0.text.contains("--control-endpoint tcp://*:\(ports[1]) is reachable from other machines")
            },
            "\(refused.tail())")
        let insecure = try Child(
            name: "detect", executable: Executables.named("roadsave-detect"), arguments: arguments + ["--insecure"])
        defer { insecure.kill() }
        let live = await eventually(timeout: 20) { insecure.stderr.contains { $0.text.contains("msg=live") } }
        #expect(live, "\(insecure.tail())")
        #expect(insecure.stderr.contains { $0.text.contains("no CurveZMQ keys") }, "\(insecure.tail())")
    }
}
