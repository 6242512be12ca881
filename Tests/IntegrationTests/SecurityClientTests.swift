import Foundation
import RoadSaveTestKit
import Testing

/// Issue 7, the project's own clients with CurveZMQ: `roadsave send`, `ctl` and `tail` with `--key` and
/// `--server-key`, against services that run with keys.
@Suite("SecurityClients", .serialized)
struct SecurityClientTests {
    static func roadsave(_ arguments: [String], timeout: Double = 20) async throws -> (status: Int32?, child: Child) {
        let child = try Child(name: "roadsave", executable: Executables.named("roadsave"), arguments: arguments)
        let status = await child.waitForExit(timeout: timeout)
        child.kill()
        return (status, child)
    }

    @Test func sendWithAGatewayKeyIsAcknowledgedAndWithoutOneIsNot() async throws {
        let keys = try await SecurityTests.keys()
        defer { keys.remove() }
        let (ingest, endpoint, _) = try await SecurityTests.startIngest(keys)
        defer { ingest.kill() }
        let t = Int(Date().timeIntervalSince1970) - 60
        let records = ["app-1", "app-2"].enumerated().map { index, app in
            "{\"kind\":\"location\",\"app\":\"\(app)\",\"user\":\"send-user-\(index)\",\"seq\":0,\"t\":\(t),"
                + "\"lat\":-33.9249,\"lon\":18.4241,\"speed\":1.5,\"course\":90,\"hacc\":5}"
        }
        let file = try temporaryFile(records.joined(separator: "\n") + "\n", suffix: ".ndjson")
        defer { try? FileManager.default.removeItem(at: file) }

        let keyed = try await Self.roadsave([
            "send", file.path, "--endpoint", endpoint, "--key", keys.gatewaySecret,
            "--server-key", keys.serverPublic, "--timeout", "3", "--attempts", "1",
        ])
        #expect(keyed.status == 0, "\(keyed.child.tail())")
        #expect(keyed.child.stdout.contains { $0.text.contains("accepted 1, rejected 1") }, "\(keyed.child.tail())")
        #expect(
            keyed.child.stderr.contains { $0.text.contains("gateway key \"gw-1\" is not allowed") },
            "\(keyed.child.tail())")

        // Plaintext to a CURVE server: no handshake, no acknowledgement.
        let plain = try await Self.roadsave([
            "send", file.path, "--endpoint", endpoint, "--timeout", "1", "--attempts", "1",
        ])
        #expect(plain.status == 1, "\(plain.child.tail())")
    }

    @Test func ctlWithAnOperatorKeyIsAnsweredAndRefusedForAnotherApplication() async throws {
        let keys = try await SecurityControlTests.keys()
        defer { keys.remove() }
        let (detect, control) = try await SecurityControlTests.startDetect(keys)
        defer { detect.kill() }
        let alice = ["--key", keys.path("alice.key"), "--server-key", keys.serverPublic, "--endpoint", control]

        let allowed = try await Self.roadsave(["ctl", "startMonitoring", "--app", "app-1", "--user", "u-1"] + alice)
        let reply = try #require(allowed.child.jsonLines.last?.value as? [String: Any], "\(allowed.child.tail())")
        #expect(reply.string("error") != "forbidden", "\(reply)")

        let refused = try await Self.roadsave(["ctl", "startMonitoring", "--app", "app-2", "--user", "u-1"] + alice)
        #expect(refused.status == 1)
        let refusal = try #require(refused.child.jsonLines.last?.value as? [String: Any], "\(refused.child.tail())")
        #expect(refusal.string("error") == "forbidden", "\(refusal)")
        // The service's log reaches this process through a pipe read by a thread of its own: waited for.
        #expect(
            await eventually(timeout: 20) {
                detect.stderr.contains {
                    $0.text.contains("msg=\"control command refused\"") && $0.text.contains("key=alice")
                }
            }, "\(detect.tail())")

        let unkeyed = try await Self.roadsave([
            "ctl", "startMonitoring", "--app", "app-1", "--endpoint", control,
            "--timeout", "1",
        ])
        #expect(unkeyed.status == 1, "\(unkeyed.child.tail())")
        #expect(unkeyed.child.jsonLines.isEmpty, "\(unkeyed.child.tail())")
    }

    @Test func tailWithASubscriberKeyCatchesUpOnlyItsApplications() async throws {
        let keys = try await SecurityNotifierTests.keys()
        defer { keys.remove() }
        let all = SecurityNotifierTests.events()
        let keyed = try await KeyedNotifier(all, serverSecret: keys.serverSecret, allowList: keys.allowList)
        defer { keyed.stop() }
        let notifier = keyed.notifier
        try #require(await keyed.storedAll(), "\(notifier.logs())")

        let tail = try await Self.roadsave([
            "tail", "--endpoint", notifier.publishEndpoint, "--catch-up-endpoint",
            notifier.catchUpEndpoint, "--since", "0", "--timeout", "3",
            "--key", keys.path("dash.key"), "--server-key", keys.serverPublic,
        ])
        #expect(tail.status == 0, "\(tail.child.tail())")
        let printed = tail.child.jsonLines.compactMap { $0.value as? [String: Any] }
        #expect(printed.count == all.count / 2, "\(tail.child.tail())")
        #expect(printed.allSatisfy { $0.string("app") == "demo-app" }, "\(printed)")
    }
}
