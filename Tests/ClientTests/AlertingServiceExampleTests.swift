import Foundation
import RoadSaveTestKit
import Testing

/// `Examples/AlertingService`, the package outside the repository's own that depends on it by path: built (`swift
/// build --package-path`, which `make test` runs first, so here it only checks), then run against `roadsave up` with
/// a simulated crash sent by `roadsave send`, and a second one sent by the example's own `recording-gateway`: the
/// crash callback comes exactly once for each, with its follow-up, as `roadsave replay` finds them.
@Suite("Examples/AlertingService", .serialized)
struct AlertingServiceExampleTests {
    static let package = TestPaths.repository.appendingPathComponent("Examples/AlertingService")

    static func executable(_ name: String) -> URL {
        package.appendingPathComponent(".build/debug/\(name)")
    }

    /// `roadsave COMMAND…`, which must exit 0 within `timeout` seconds.
    static func roadsave(_ arguments: [String], timeout: Double = 60) async throws -> Child {
        let child = try Child(name: "roadsave \(arguments[0])", executable: Executables.roadsave, arguments: arguments)
        let status = await child.waitForExit(timeout: timeout)
        child.kill()
        guard status == 0 else {
            throw TestFailure("roadsave \(arguments) exited \(String(describing: status))\n\(child.tail())")
        }
        return child
    }

    /// The crashIDs of crashDetected (and of crashFollowUp) that `roadsave replay` gives for `recording`.
    static func replayed(_ recording: String, settings: String) async throws -> (crashes: [String], followUps: [String])
    {
        let replay = try await roadsave([
            "replay", recording, "--settings", settings, "--reorder-window", "3", "--quiet",
        ])
        let events = replay.jsonLines.compactMap { $0.value as? [String: Any] }
        func crashIDs(_ name: String) -> [String] {
            events.filter { $0["event"] as? String == name }.compactMap { $0["crashID"] as? String }
        }
        return (crashIDs("crashDetected"), crashIDs("crashFollowUp"))
    }

    @Test func theCrashCallbackComesOnceForEachCrash() async throws {
        // Up to date (make test built it; a run of its own builds it here: about 20 s from nothing).
        let build = try Child(
            name: "swift build", executable: Executables.env,
            arguments: ["swift", "build", "--package-path", Self.package.path])
        defer { build.kill() }
        try #require(await build.waitForExit(timeout: 600) == 0, "\(build.tail())")

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "roadsave-example-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let settings = folder.appendingPathComponent("settings.json").path
        // Short delays (as the integration tests have them): the crash is decided 8 s after its impact, followed
        // up 20 s after that, in the records' time.
        try
            #"{"stopDelay": 5, "tripOfflineGrace": 5, "crashDecisionDelay": 8, "crashSettleTime": 3, "crashClusterWindow": 10, "crashFollowUpDelay": 20}"#
            .write(toFile: settings, atomically: true, encoding: .utf8)
        let first = folder.appendingPathComponent("first.ndjson").path
        let second = folder.appendingPathComponent("second.ndjson").path
        _ = try await Self.roadsave([
            "simulate", "--devices", "2", "--crashes", "1", "--duration", "15", "--seed", "7", "--output", first,
            "--no-progress",
        ])
        _ = try await Self.roadsave([
            "simulate", "--devices", "1", "--crashes", "1", "--duration", "15", "--seed", "8", "--user-prefix",
            "second-", "--output", second, "--no-progress",
        ])
        let expectedFirst = try await Self.replayed(first, settings: settings)
        let expectedSecond = try await Self.replayed(second, settings: settings)
        try #require(expectedFirst.crashes.count == 1 && expectedSecond.crashes.count == 1)
        try #require(
            expectedFirst.followUps == expectedFirst.crashes && expectedSecond.followUps == expectedSecond.crashes)

        let base = Ports.reserveRange(6)
        let up = try Child(
            name: "roadsave up", executable: Executables.roadsave,
            arguments: [
                "up", "--base-port", String(base), "--settings", settings,
                "--data-dir", folder.appendingPathComponent("data").path,
            ],
            environment: ["ROADSAVE_APPLICATIONS": "demo-app"])
        defer { up.kill() }
        let ready = await eventually(timeout: 60) { up.stdout.contains { $0.text == "ready" } || !up.isRunning }
        try #require(ready && up.isRunning, "roadsave up did not get ready\n\(up.tail())")

        let alerts = try Child(
            name: "alerting-service", executable: Self.executable("alerting-service"),
            arguments: [
                "--endpoint", Ports.tcp(base + 4), "--catch-up-endpoint", Ports.tcp(base + 5), "--after", "0",
            ])
        defer { alerts.kill() }
        func lines(_ prefix: String) -> [String] { alerts.lines.filter { $0.hasPrefix(prefix) } }
        func crashIDs(_ prefix: String) -> [String] { lines(prefix).map { String($0.split(separator: " ")[1]) } }

        _ = try await Self.roadsave(["send", first, "--endpoint", Ports.tcp(base)])
        let firstCame = await eventually(timeout: 90) { crashIDs("follow-up ").count >= 1 }
        #expect(firstCame, "\(alerts.tail())\n\(up.tail(60))")

        let gateway = try Child(
            name: "recording-gateway", executable: Self.executable("recording-gateway"),
            arguments: [second, "--endpoint", Ports.tcp(base)])
        defer { gateway.kill() }
        #expect(await gateway.waitForExit(timeout: 60) == 0, "\(gateway.tail())")
        let records = try String(contentsOfFile: second, encoding: .utf8).split(separator: "\n").count
        #expect(gateway.lines.last == "acknowledged \(records) of \(records)", "\(gateway.tail())")
        let secondCame = await eventually(timeout: 90) { crashIDs("follow-up ").count >= 2 }
        #expect(secondCame, "\(alerts.tail())\n\(up.tail(60))")

        // The follow-up of the second crash is the newest position: whatever came before it has been delivered.
        let expected = expectedFirst.crashes + expectedSecond.crashes
        #expect(crashIDs("crash ") == expected, "\(alerts.tail())")
        #expect(crashIDs("follow-up ") == expected, "\(alerts.tail())")
        #expect(lines("crash ").allSatisfy { $0.contains(" confidence ") }, "\(alerts.tail())")
        #expect(!alerts.lines.contains { $0.hasPrefix("alerting-service:") }, "\(alerts.tail())")
    }
}
