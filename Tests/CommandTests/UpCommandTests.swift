import Foundation
import RoadSaveTestKit
import Testing

/// `roadsave up`: the three services as supervised children.
@Suite struct UpCommandTests {
    struct Up {
        let process: RunningProcess
        let base: Int
        /// The `--data-dir` given to `up` (a fresh temporary directory unless the test chose one).
        let dataDirectory: URL
        var gateways: String { Ports.tcp(base) }
        var control: String { Ports.tcp(base + 2) }
        var subscribers: String { Ports.tcp(base + 4) }
        var catchUp: String { Ports.tcp(base + 5) }

        /// The pid `up` printed for a service (the latest start).
        func pid(_ service: String) -> Int32? {
            process.lines.last { $0.hasPrefix("started \(service) pid ") || $0.hasPrefix("restarted \(service) pid ") }
                .flatMap { $0.split(separator: " ").last }.flatMap { Int32($0) }
        }

        /// Cleanup: `up` and any child it printed.
        func kill() {
            for line in process.lines where line.contains(" pid ") {
                if let pid = line.split(separator: " ").last.flatMap({ Int32($0) }), isAlive(pid) {
                    Foundation.kill(pid, SIGKILL)
                }
            }
            process.kill()
        }
    }

    /// A temporary directory for `up --data-dir`, removed by the caller.
    static func temporaryDataDirectory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("roadsave-up-\(UUID().uuidString)")
    }

    static func startUp(
        _ extra: [String] = [], base: Int = Ports.reserveRange(6), dataDirectory: URL = temporaryDataDirectory()
    )
        async throws -> Up
    {
        var environment = ProcessInfo.processInfo.environment
        environment["ROADSAVE_APPLICATIONS"] = "demo-app,app-1"
        let process = try RunningProcess(
            ["up", "--base-port", String(base), "--data-dir", dataDirectory.path] + extra,
            environment: environment)
        let up = Up(process: process, base: base, dataDirectory: dataDirectory)
        guard await process.waitForLine(timeout: 30, { $0 == "ready" }) != nil else {
            up.kill()
            throw TestFailure("up not ready\nstdout: \(process.stdout)\nstderr: \(process.stderr)")
        }
        return up
    }

    @Test func startsAllThreeAndStopsThemOnSIGTERM() async throws {
        let up = try await Self.startUp()
        defer {
            up.kill()
            try? FileManager.default.removeItem(at: up.dataDirectory)
        }
        let lines = up.process.lines
        #expect(lines.contains("gateways \(up.gateways)"), "\(lines)")
        #expect(lines.contains("control \(up.control)"), "\(lines)")
        #expect(lines.contains("subscribers \(up.subscribers)"), "\(lines)")
        #expect(lines.contains("catch-up \(up.catchUp)"), "\(lines)")
        let pids = ["ingest", "detect", "notify"].compactMap { up.pid($0) }
        #expect(pids.count == 3, "\(lines)")
        #expect(pids.allSatisfy(isAlive))
        // No secret on a command line: the applications reach ingest through its environment.
        for pid in pids {
            let commandLine = (try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)) ?? ""
            #expect(!commandLine.contains("demo-app"), "\(commandLine)")
        }

        let file = try temporaryFile(SendCommandTests.smallFile, suffix: ".ndjson")
        defer { try? FileManager.default.removeItem(at: file) }
        let send = try await Roadsave.run(["send", file.path, "--endpoint", up.gateways])
        #expect(send.status == 0, "\(send.stderr)")
        #expect(send.lines == ["sent 5, accepted 4, rejected 1, batches 1"])
        let ctl = try await Roadsave.run([
            "ctl", "configure", "--app", "demo-app", "--user", "u9", "--endpoint", up.control,
        ])
        #expect(ctl.status == 0, "\(ctl.stderr)")

        up.process.signal(SIGTERM)
        let status = await up.process.waitForExit(timeout: 60)
        #expect(status == 0, "stdout: \(up.process.stdout)\nstderr: \(up.process.stderr.suffix(3000))")
        for service in ["ingest", "detect", "notify"] {
            #expect(up.process.lines.contains("stopped \(service) (exit 0)"), "\(up.process.lines)")
        }
        #expect(!pids.contains(where: isAlive), "every service is gone")
    }

    @Test func restartsAKilledNotifierWhileTheOthersKeepWorking() async throws {
        let up = try await Self.startUp()
        defer {
            up.kill()
            try? FileManager.default.removeItem(at: up.dataDirectory)
        }
        let ingest = try #require(up.pid("ingest"))
        let detect = try #require(up.pid("detect"))
        let notify = try #require(up.pid("notify"))
        kill(notify, SIGKILL)

        let restarted = await up.process.waitForLine(timeout: 30) { $0.hasPrefix("restarted notify pid ") }
        #expect(restarted != nil, "stdout: \(up.process.stdout)\nstderr: \(up.process.stderr.suffix(3000))")
        #expect(up.process.lines.contains { $0.hasPrefix("notify ended unexpectedly (killed by SIGKILL)") })
        let newNotify = try #require(up.pid("notify"))
        #expect(newNotify != notify)
        #expect(isAlive(ingest) && isAlive(detect), "ingest and detect keep running")
        #expect(up.pid("ingest") == ingest && up.pid("detect") == detect)

        // ingest still acknowledges…
        let file = try temporaryFile(SendCommandTests.smallFile, suffix: ".ndjson")
        defer { try? FileManager.default.removeItem(at: file) }
        let send = try await Roadsave.run(["send", file.path, "--endpoint", up.gateways])
        #expect(send.status == 0, "\(send.stderr)")
        #expect(send.lines == ["sent 5, accepted 4, rejected 1, batches 1"])
        // …and the new notifier delivers detection's events.
        let tail = try await startTail(
            [
                "--endpoint", up.subscribers, "--event", "crashDetected", "--count", "1",
                "--timeout", "60",
            ], catchUp: up.catchUp)
        defer { tail.kill() }
        for command in ["configure", "startMonitoring", "raiseTestCrash"] {
            let result = try await Roadsave.run([
                "ctl", command, "--app", "demo-app", "--user", "after-restart",
                "--endpoint", up.control,
            ])
            #expect(result.status == 0, "\(command): \(result.stdout) \(result.stderr)")
        }
        #expect(await tail.waitForExit(timeout: 60) == 0)
        #expect(tail.stdout.contains("\"user\":\"after-restart\""), "\(tail.stdout) \(tail.stderr)")

        up.process.signal(SIGTERM)
        let status = await up.process.waitForExit(timeout: 60)
        #expect(status == 0, "stdout: \(up.process.stdout)\nstderr: \(up.process.stderr.suffix(3000))")
        #expect(![ingest, detect, newNotify].contains(where: isAlive))
    }

    /// Without --keys, up passes no CurveZMQ keys: a --bind-host other machines can reach needs --insecure, which it passes on.
    @Test func aNonLoopbackBindHostNeedsInsecureAndPassesItOn() async throws {
        var environment = ProcessInfo.processInfo.environment
        environment["ROADSAVE_APPLICATIONS"] = "demo-app"
        let refused = try await Roadsave.run(["up", "--bind-host", "0.0.0.0", "--dry-run"], environment: environment)
        #expect(refused.status == 2, "\(refused.stderr)")
        #expect(
            refused.stderr.contains("--bind-host 0.0.0.0 makes the services reachable from other machines")
                && refused.stderr.contains("--insecure"), "\(refused.stderr)")
        let loopback = try await Roadsave.run(["up", "--dry-run"], environment: environment)
        #expect(loopback.status == 0, "\(loopback.stderr)")
        #expect(!loopback.stdout.contains("--insecure"), "\(loopback.stdout)")

        let up = try await Self.startUp(["--bind-host", "0.0.0.0", "--insecure"])
        defer {
            up.kill()
            try? FileManager.default.removeItem(at: up.dataDirectory)
        }
        for service in ["ingest", "detect", "notify"] {
            let pid = try #require(up.pid(service), "\(up.process.lines)")
            let commandLine = (try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)) ?? ""
            #expect(commandLine.split(separator: "\0").contains("--insecure"), "\(service): \(commandLine)")
        }
        #expect(up.process.stderr.contains("reachable from other machines"), "\(up.process.stderr)")
        up.process.signal(SIGTERM)
        #expect(await up.process.waitForExit(timeout: 60) == 0)
    }

    @Test func reportsBadOptionsAndFailuresAtStart() async throws {
        var environment = ProcessInfo.processInfo.environment
        environment["ROADSAVE_APPLICATIONS"] = nil
        environment["ROADSAVE_APPLICATIONS_FILE"] = nil
        for (arguments, mention) in [
            (["up"], "no applications"),
            (["up", "--applications", "a", "--base-port", "70000"], "--base-port"),
            (["up", "--applications", "a", "--platform", "ftp://example.com"], "--platform"),
            (["up", "--applications", "a", "--settings", "/nonexistent.json"], "--settings"),
            (["up", "--applications", "a", "--log-level", "loud"], "--log-level"),
            (["up", "--applications", "a", "--base-port", "65531"], "--base-port"),
            (["up", "--applications", "a", "--data-dir", ""], "--data-dir"),
            (["up", "--applications-file", "/nonexistent/apps"], "--applications-file"),
        ] {
            let result = try await Roadsave.run(arguments, environment: environment)
            #expect(result.status == 2, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains(mention), "\(arguments): \(result.stderr)")
        }
        let help = try await Roadsave.run(["up", "--help"])
        #expect(help.status == 0)
        #expect(help.stdout.hasPrefix("Usage: roadsave up"))

        // A port already taken: the service cannot bind, and up gives up instead of restarting it forever.
        let first = try await Self.startUp()
        let secondDirectory = Self.temporaryDataDirectory()
        defer {
            first.kill()
            try? FileManager.default.removeItem(at: first.dataDirectory)
            try? FileManager.default.removeItem(at: secondDirectory)
        }
        environment["ROADSAVE_APPLICATIONS"] = "demo-app"
        let second = try await Roadsave.run(
            ["up", "--base-port", String(first.base), "--data-dir", secondDirectory.path],
            environment: environment, limit: 60)
        #expect(second.status == 1, "stdout: \(second.stdout)\nstderr: \(second.stderr.suffix(3000))")
        #expect(second.stderr.contains("failed at start"))
        for line in second.lines where line.contains(" pid ") {
            if let pid = line.split(separator: " ").last.flatMap({ Int32($0) }) {
                #expect(!isAlive(pid), "\(line) left running")
            }
        }
        first.process.signal(SIGTERM)
        #expect(await first.process.waitForExit(timeout: 60) == 0)
    }
}
