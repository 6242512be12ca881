import Foundation
import RoadSaveTestKit
import Testing

/// `roadsave ctl` against a real `roadsave detect`.
@Suite struct ControlCommandTests {
    /// detection with the ingest whose journal it reads: detection takes commands once it has heard from every
    /// journal it is configured with (until then it answers "recovering").
    static func startDetect() async throws -> (RunningProcess, ingest: RunningProcess, control: String) {
        let base = Ports.reserveRange(4)
        let ingest = try RunningProcess([
            "ingest", "--applications", "app-1", "--gateway-endpoint", Ports.tcp(base + 3),
            "--records-endpoint", Ports.tcp(base),
        ])
        let detect = try RunningProcess([
            "detect", "--records-endpoint", Ports.tcp(base), "--control-endpoint", Ports.tcp(base + 1),
            "--events-endpoint", Ports.tcp(base + 2),
        ])
        // Live once a command is no longer answered "recovering" (a command for nobody changes nothing).
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            let probe = try await Roadsave.run([
                "ctl", "stopMonitoring", "--app", "probe", "--user", "probe",
                "--endpoint", Ports.tcp(base + 1), "--timeout", "2",
            ])
            if let error = Self.reply(probe)["error"] as? String, error != "recovering" {
                return (detect, ingest, Ports.tcp(base + 1))
            }
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        detect.kill()
        ingest.kill()
        throw TestFailure("detect did not go live: \(detect.stderr)\ningest: \(ingest.stderr)")
    }

    static func reply(_ result: Roadsave.Result) -> [String: Any] {
        result.objects.first ?? [:]
    }

    @Test func configureThenStartMonitoring() async throws {
        let (detect, ingest, control) = try await Self.startDetect()
        defer {
            detect.kill()
            ingest.kill()
        }
        let configure = try await Roadsave.run([
            "ctl", "configure", "--app", "ctl-app", "--user", "u1", "--mode", "crashOnly",
            "--auto-trips", "false", "--endpoint", control,
        ])
        #expect(configure.status == 0, "\(configure.stderr)")
        #expect(Self.reply(configure)["ok"] as? Bool == true, "\(configure.stdout)")
        let states = Self.reply(configure)["states"] as? [[String: Any]]
        #expect(states?.first?["detectionMode"] as? String == "crashOnly")
        #expect(states?.first?["autoTripDetection"] as? Bool == false)

        let start = try await Roadsave.run([
            "ctl", "startMonitoring", "--app", "ctl-app", "--user", "u1", "--endpoint", control,
        ])
        #expect(start.status == 0, "\(start.stderr)")
        #expect(
            (Self.reply(start)["states"] as? [[String: Any]])?.first?["lifecycle"] as? String == "monitoring",
            "\(start.stdout)")

        let mode = try await Roadsave.run([
            "ctl", "setDetectionMode", "--app", "ctl-app", "--user", "u1", "--mode", "all",
            "--endpoint", control,
        ])
        #expect(mode.status == 0, "\(mode.stderr)")
        let trips = try await Roadsave.run([
            "ctl", "setAutoTripDetection", "--app", "ctl-app", "--user", "u1", "--enabled", "true",
            "--endpoint", control,
        ])
        #expect(trips.status == 0, "\(trips.stderr)")
        #expect((Self.reply(trips)["states"] as? [[String: Any]])?.first?["autoTripDetection"] as? Bool == true)
        // Without --user: every known device of the application.
        let stop = try await Roadsave.run(["ctl", "stopMonitoring", "--app", "ctl-app", "--endpoint", control])
        #expect(stop.status == 0, "\(stop.stderr)")
        #expect(Self.reply(stop)["devices"] as? Int == 1, "\(stop.stdout)")
        await stopGracefully(detect)
        await stopGracefully(ingest)
    }

    @Test func startMonitoringUnconfiguredIsRefused() async throws {
        let (detect, ingest, control) = try await Self.startDetect()
        defer {
            detect.kill()
            ingest.kill()
        }
        let secretApp = "app-secret-4711-credential"
        let result = try await Roadsave.run([
            "ctl", "startMonitoring", "--app", secretApp, "--user", "nobody",
            "--endpoint", control,
        ])
        #expect(result.status == 1)
        #expect(Self.reply(result)["ok"] as? Bool == false, "\(result.stdout)")
        #expect(Self.reply(result)["error"] as? String == "notConfigured", "\(result.stdout)")
        #expect(result.stderr.contains("notConfigured"))
        #expect(!result.stderr.contains(secretApp), "the applicationID is a credential: \(result.stderr)")

        // The applicationID may come from the environment instead of the command line.
        var environment = ProcessInfo.processInfo.environment
        environment["ROADSAVE_APP"] = secretApp
        let fromEnvironment = try await Roadsave.run(
            ["ctl", "raiseTestCrash", "--user", "nobody", "--endpoint", control],
            environment: environment)
        #expect(fromEnvironment.status == 1)
        #expect(Self.reply(fromEnvironment)["error"] as? String == "notConfigured", "\(fromEnvironment.stdout)")
        await stopGracefully(detect)
        await stopGracefully(ingest)
    }

    @Test func noReplyFromDetection() async throws {
        let port = Ports.reserveRange(1)
        let started = Date()
        let result = try await Roadsave.run(
            [
                "ctl", "configure", "--app", "ctl-app", "--user", "u1", "--endpoint", Ports.tcp(port),
                "--timeout", "0.5",
            ], limit: 20)
        #expect(result.status == 1)
        #expect(result.stderr.contains("no reply from detection at \(Ports.tcp(port))"), "\(result.stderr)")
        // Bounded by its own timeout, not hung; the bound is loose because test machines are shared and busy.
        #expect(Date().timeIntervalSince(started) < 18)
        #expect(result.stdout.isEmpty)
    }

    /// The shard's own command takes no application: with no journal gap found, there is nothing to acknowledge.
    @Test func acknowledgeJournalGapsNamesNoApplication() async throws {
        let (detect, ingest, control) = try await Self.startDetect()
        defer {
            detect.kill()
            ingest.kill()
        }
        var environment = ProcessInfo.processInfo.environment
        environment["ROADSAVE_APP"] = nil
        let result = try await Roadsave.run(
            ["ctl", "acknowledgeJournalGaps", "--endpoint", control], environment: environment)
        #expect(result.status == 0, "\(result.stderr)")
        let reply = Self.reply(result)
        #expect(reply["ok"] as? Bool == true && reply["acknowledged"] as? Int == 0, "\(result.stdout)")
        #expect((reply["gaps"] as? [Any])?.isEmpty == true)
    }

    @Test func reportsBadOptions() async throws {
        for (arguments, mention) in [
            (["ctl"], "COMMAND missing"),
            (["ctl", "selfDestruct", "--app", "a"], "unknown command \"selfDestruct\""),
            (["ctl", "configure"], "--app missing"),
            (["ctl", "configure", "--app", "a", "--mode", "sometimes"], "--mode"),
            (["ctl", "setDetectionMode", "--app", "a"], "--mode"),
            (["ctl", "setAutoTripDetection", "--app", "a"], "--enabled"),
            (["ctl", "setAutoTripDetection", "--app", "a", "--enabled", "maybe"], "--enabled"),
            (["ctl", "startMonitoring", "--app", "a", "--mode", "all"], "--mode applies to"),
            (["ctl", "configure", "--app", "a", "--timeout", "-1"], "--timeout"),
            (["ctl", "configure", "--app", "a", "--endpoint", "tcp://*:5552"], "--endpoint"),
            (["ctl", "acknowledgeJournalGaps", "--app", "a"], "--app does not apply to acknowledgeJournalGaps"),
            (["ctl", "acknowledgeJournalGaps", "--user", "u"], "--user does not apply to acknowledgeJournalGaps"),
            (
                ["ctl", "configure", "--app", "a", "--follow-up"],
                "--follow-up applies to raiseTestCrash, not configure"
            ),
        ] {
            var environment = ProcessInfo.processInfo.environment
            environment["ROADSAVE_APP"] = nil
            let result = try await Roadsave.run(arguments, environment: environment)
            #expect(result.status == 2, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains(mention), "\(arguments): \(result.stderr)")
        }
        let help = try await Roadsave.run(["ctl", "--help"])
        #expect(help.status == 0)
        #expect(help.stdout.hasPrefix("Usage: roadsave ctl COMMAND"))
    }
}
