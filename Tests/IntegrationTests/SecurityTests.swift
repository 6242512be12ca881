import Foundation
import RoadSaveTestKit
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 7, CurveZMQ: sensor-ingest with a server key and an allow-list, driven by pyzmq clients with their own curve
/// options (`curve_gateway.py`, not the project's code), and keys made by `roadsave keygen` and by pyzmq.
@Suite("Security", .serialized)
struct SecurityTests {
    /// A folder with the server's key pair, a gateway key limited to app-1, and an allow-list listing only it.
    static func keys() async throws -> KeyFolder {
        let keys = try await KeyFolder(
            servers: ["ingest"], clients: [("gw-1", ["--role", "gateway", "--apps", "app-1"])],
            listing: [])
        // Written by hand: a comment line and a trailing comment, as an operator may write them.
        try ("# gateways\n" + (keys.lines["gw-1"] ?? "") + "   # the depot\n").write(
            toFile: keys.allowList, atomically: true,
            encoding: .utf8)
        return keys
    }

    static func startIngest(_ keys: KeyFolder, extra: [String] = []) async throws -> (
        Child, endpoint: String, data: URL
    ) {
        let ports = Ports.reserve(2)
        let data = keys.folder.appendingPathComponent("data-\(ports[0])")
        let ingest = try Child(
            name: "ingest", executable: Executables.named("roadsave-ingest"),
            arguments: [
                "--applications", "app-1,app-2", "--data-dir", data.path,
                "--gateway-endpoint", "tcp://127.0.0.1:\(ports[0])", "--records-endpoint",
                "tcp://127.0.0.1:\(ports[1])",
                "--curve-secret-key", keys.serverSecret, "--allow", keys.allowList,
            ] + extra)
        let listening = await eventually(timeout: 15) { ingest.stderr.contains { $0.text.contains("msg=listening") } }
        try #require(listening, "\(ingest.tail())")
        return (ingest, "tcp://127.0.0.1:\(ports[0])", data)
    }

    /// One batch through `curve_gateway.py`: the acknowledgement, or nil when none came.
    static func send(
        apps: [String], to endpoint: String, keys: KeyFolder, clientKey: String?,
        timeout: Double = 5
    ) async throws -> [String: Any]? {
        let child = try Child.python(
            "curve_gateway.py",
            [
                "--endpoint", endpoint, "--server-key", keys.serverPublic,
                "--timeout", String(timeout),
            ]
                + (clientKey.map { ["--key", $0] } ?? []) + apps.flatMap { ["--app", $0] })
        defer { child.kill() }
        _ = await child.waitForExit(timeout: timeout + 15)
        let line = try #require(child.jsonLines.last?.value as? [String: Any], "\(child.tail())")
        return line["ack"] as? [String: Any]
    }

    @Test func aListedGatewayKeySendsOnlyForItsApplications() async throws {
        let keys = try await Self.keys()
        defer { keys.remove() }
        let (ingest, endpoint, _) = try await Self.startIngest(keys)
        defer { ingest.kill() }

        let ack = try #require(
            try await Self.send(
                apps: ["app-1", "app-2"], to: endpoint, keys: keys,
                clientKey: keys.gatewaySecret))
        #expect(ack.number("accepted") == 1, "\(ack)")
        let rejected = try #require(ack["rejected"] as? [[String: Any]])
        #expect(rejected.count == 1)
        #expect(rejected.first?.number("index") == 1)
        #expect(rejected.first?.string("field") == "app")
        #expect(
            rejected.first?.string("reason")?.contains("gateway key \"gw-1\" is not allowed") == true, "\(rejected)")
    }

    @Test func anUnknownKeyIsRefusedAtTheHandshakeAndNoAckEverComes() async throws {
        let keys = try await Self.keys()
        defer { keys.remove() }
        let (ingest, endpoint, _) = try await Self.startIngest(keys)
        defer { ingest.kill() }

        // A fresh key pair from pyzmq's zmq.curve_keypair(), listed nowhere.
        let ack = try await Self.send(apps: ["app-1"], to: endpoint, keys: keys, clientKey: nil, timeout: 3)
        #expect(ack == nil)
        // Logged by the service's monitor on its own time, after the client gave up on its clock: waited for.
        #expect(
            await eventually(timeout: 20) {
                ingest.stderr.contains {
                    $0.text.contains("msg=\"connection refused\"") && $0.text.contains("role=gateway")
                }
            }, "\(ingest.tail())")
        #expect(!ingest.stderr.contains { $0.text.contains("curve-batch") }, "a batch of a refused key was read")
        // The service still answers a listed key afterwards.
        let listed = try await Self.send(apps: ["app-1"], to: endpoint, keys: keys, clientKey: keys.gatewaySecret)
        #expect(listed?.number("accepted") == 1)
    }

    @Test func sighupReloadsTheAllowListWithoutARestart() async throws {
        let keys = try await Self.keys()
        defer { keys.remove() }
        let (ingest, endpoint, _) = try await Self.startIngest(keys)
        defer { ingest.kill() }

        // A key made by pyzmq (zmq.auth.create_certificates), not yet listed: refused.
        let maker = try Child.python("curve_gateway.py", ["--keypair", keys.folder.path, "late"])
        _ = await maker.waitForExit(timeout: 15)
        let publicKey = try #require(maker.stdout.first?.text)
        let late = keys.folder.appendingPathComponent("late.key_secret").path
        #expect(try await Self.send(apps: ["app-2"], to: endpoint, keys: keys, clientKey: late, timeout: 2) == nil)

        let handle = try #require(FileHandle(forWritingAtPath: keys.allowList))
        handle.seekToEndOfFile()
        handle.write(Data("gateway \(publicKey) late-gateway\n".utf8))
        handle.closeFile()
        ingest.signal(SIGHUP)
        let reloaded = await eventually(timeout: 10) {
            ingest.stderr.contains { $0.text.contains("allow-list re-read") }
        }
        #expect(reloaded, "\(ingest.tail())")

        let ack = try await Self.send(apps: ["app-2"], to: endpoint, keys: keys, clientKey: late)
        #expect(ack?.number("accepted") == 1, "\(String(describing: ack))")
        #expect(ingest.isRunning, "SIGHUP must reload, not stop")
    }

    /// One location record per application, of users `held-BATCH-i`, as `held_connection.py` sends a batch.
    static func records(_ apps: [String], batch: Int) -> [[String: Any]] {
        let t = Int(Date().timeIntervalSince1970) - 60
        return apps.enumerated().map { index, app in
            [
                "kind": "location", "app": app, "user": "held-\(batch)-\(index)", "seq": 0, "t": t, "lat": -33.9249,
                "lon": 18.4241, "speed": 1.5, "course": 90, "hacc": 5,
            ]
        }
    }

    /// gw-1's line replaced by another key under the same name (for every application), or removed, and SIGHUP: the
    /// next batch on the connection gw-1's key already has open is refused whole (field `key`, nothing accepted); the
    /// name's new key is served under it.
    @Test(arguments: KeyChange.allCases)
    func aGatewayKeyChangedBySIGHUPIsRefusedOnTheConnectionItHasOpen(_ change: KeyChange) async throws {
        let keys = try await Self.keys()
        defer { keys.remove() }
        let newKey = try await makeKey("gw-1-new", role: "gateway", in: keys.folder)
        let (ingest, endpoint, _) = try await Self.startIngest(keys)
        defer { ingest.kill() }
        let held = try HeldConnection(
            "gateway", endpoint: endpoint, serverKey: keys.serverPublic, key: keys.gatewaySecret,
            requests: [Self.records(["app-1"], batch: 0), Self.records(["app-1", "app-2"], batch: 1)],
            holdBefore: 1)
        defer { held.stop() }
        let before = try #require(await held.reply(0) as? [String: Any], "\(held.child.tail())\n\(ingest.tail())")
        #expect(before.number("accepted") == 1, "\(before)")
        try #require(await held.holding(), "\(held.child.tail())")

        let reloaded = try await apply(
            change, role: "gateway", name: "gw-1", newKey: newKey, allowList: keys.allowList,
            reloading: [ingest])
        try #require(reloaded, "\(ingest.tail())")
        try held.resume()
        let after = try #require(await held.reply(1) as? [String: Any], "\(held.child.tail())\n\(ingest.tail())")
        #expect(after.number("accepted") == 0, "\(after)")
        let rejected = after["rejected"] as? [[String: Any]] ?? []
        #expect(
            rejected.count == 1 && rejected.first?.number("index") == -1 && rejected.first?.string("field") == "key",
            "\(after)")
        #expect(
            rejected.first?.string("reason")
                == "gateway key \"gw-1\" is no longer in the allow-list (removed or replaced since this connection's handshake)",
            "\(after)")
        #expect(held.handshakes == 1, "both batches over the one connection\n\(held.child.tail())")
        #expect(
            ingest.stderr.contains {
                $0.text.contains("msg=\"batch refused: gateway key no longer listed\"")
                    && $0.text.contains("key=gw-1")
            }, "\(ingest.tail())")
        if change == .replaced {
            let fresh = try await Self.send(
                apps: ["app-1", "app-2"], to: endpoint, keys: keys,
                clientKey: keys.folder.appendingPathComponent("gw-1-new.key").path)
            #expect(fresh?.number("accepted") == 2, "\(String(describing: fresh))")
        }
    }

    @Test func aSecretKeyFileReadableByOthersIsRefused() async throws {
        let keys = try await Self.keys()
        defer { keys.remove() }
        chmod(keys.serverSecret, 0o644)
        let ingest = try Child(
            name: "ingest", executable: Executables.named("roadsave-ingest"),
            arguments: [
                "--applications", "app-1", "--data-dir", keys.folder.appendingPathComponent("data").path,
                "--gateway-endpoint", "tcp://127.0.0.1:\(Ports.reserve(1)[0])",
                "--records-endpoint", "tcp://127.0.0.1:\(Ports.reserve(1)[0])",
                "--curve-secret-key", keys.serverSecret, "--allow", keys.allowList,
            ])
        defer { ingest.kill() }
        #expect(await ingest.waitForExit(timeout: 15) == 2)
        #expect(
            ingest.stderr.contains {
                $0.text.contains("accessible by group or others (mode 0644)")
                    && $0.text.contains("chmod 600")
            }, "\(ingest.tail())")
    }

    @Test func aNonLoopbackBindWithoutKeysNeedsInsecure() async throws {
        let ports = Ports.reserve(2)
        let data = FileManager.default.temporaryDirectory.appendingPathComponent(
            "roadsave-curve-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: data) }
        let arguments = [
            "--applications", "app-1", "--data-dir", data.path,
            "--gateway-endpoint", "tcp://0.0.0.0:\(ports[0])", "--records-endpoint", "tcp://127.0.0.1:\(ports[1])",
        ]
        let refused = try Child(name: "ingest", executable: Executables.named("roadsave-ingest"), arguments: arguments)
        defer { refused.kill() }
        #expect(await refused.waitForExit(timeout: 15) == 2)
        #expect(
            refused.stderr.contains {
                $0.text.contains("--gateway-endpoint tcp://0.0.0.0:\(ports[0]) is reachable from other machines")
            },
            "\(refused.tail())")

        let insecure = try Child(
            name: "ingest", executable: Executables.named("roadsave-ingest"), arguments: arguments + ["--insecure"])
        defer { insecure.kill() }
        let started = await eventually(timeout: 15) { insecure.stderr.contains { $0.text.contains("msg=listening") } }
        #expect(started, "\(insecure.tail())")
        #expect(insecure.stderr.contains { $0.text.contains("no CurveZMQ keys") }, "\(insecure.tail())")
    }
}

extension KeyFolder {
    /// The gateway key of `SecurityTests.keys()`.
    var gatewaySecret: String { path("gw-1.key") }
}
