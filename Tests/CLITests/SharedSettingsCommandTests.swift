import Foundation
import RoadSaveTestKit
import Testing

/// `replay` and `report` take the platform and ordering settings of the detection service (`PlatformSettings`,
/// `OrderingSettings`): one URL rule, one range and one default each, with the errors naming the flag.
@Suite(.serialized) struct SharedSettingsCommandTests {
    static let morning = Processes.fixture("morning.ndjson").path

    @Test func aPlatformThatIsNotHTTPIsRefusedByReplayAndReportAlike() async throws {
        for url in ["file:///tmp/platform", "http://", "localhost:8080"] {
            let replay = try await Processes.roadsave("replay", Self.morning, "--platform", url)
            #expect(
                replay.status == 2
                    && replay.stderr.contains("--platform: \"\(url)\" is not an http:// or https:// URL"),
                "\(replay.stderr)")
            let report = try await Processes.roadsave("report", Self.morning, "--output", "-", "--platform", url)
            #expect(
                report.status == 2
                    && report.stderr.contains("--platform: \"\(url)\" is not an http:// or https:// URL"),
                "\(report.stderr)")
        }
    }

    @Test func theReorderWindowHasOneRangeAndItsDefaultInTheHelp() async throws {
        for command in ["replay", "report"] {
            var arguments = [command, Self.morning, "--reorder-window", "601"]
            if command == "report" { arguments += ["--output", "-"] }
            let refused = try await ChildProcess.run(Executables.roadsave, arguments, limit: 300)
            #expect(
                refused.status == 2
                    && refused.stderr.contains("--reorder-window must be a number from 0.0 to 600.0, got \"601\""),
                "\(command): \(refused.stderr)")
        }
        let accepted = try await Processes.roadsave(
            "report", Self.morning, "--skip-invalid", "--output", "-", "--reorder-window", "600")
        #expect(accepted.status == 0, "\(accepted.stderr)")
        let help = try await Processes.roadsave("replay", "--help").stdout
        #expect(
            help.contains(
                "--reorder-window S    seconds of event time a record may arrive late and still be put in order (default 10)"
            ))
        #expect(help.contains("--platform-timeout S  seconds per platform request (default 5)"))
        #expect(help.contains("--platform-attempts N attempts per platform call, with exponential backoff (default 3)"))
    }
}

/// The link timings (`LinkSettings`) are one set of settings in the three services and the three clients: the same
/// flags, ranges and defaults, and the same error when the timeout would drop every quiet connection.
@Suite(.serialized) struct LinkSettingsCommandTests {
    @Test func everyServiceAndClientTakesTheLinkTimingsAndRefusesATimeoutNotLongerThanTheHeartbeat() async throws {
        let expected = "--link-timeout (2) must be longer than --link-heartbeat (2)"
        for command in [
            ["ingest", "--applications", "test-app"], ["detect"], ["notify"], ["send", "-"], ["tail"],
            ["ctl", "configure", "--app", "test-app"],
        ] {
            let refused = try await ChildProcess.run(
                Executables.roadsave, command + ["--link-heartbeat", "2", "--link-timeout", "2"], limit: 60)
            #expect(refused.status == 2 && refused.stderr.contains(expected), "\(command): \(refused.stderr)")
            let outOfRange = try await ChildProcess.run(
                Executables.roadsave, command + ["--connect-timeout", "0"], limit: 60)
            #expect(
                outOfRange.status == 2
                    && outOfRange.stderr.contains("--connect-timeout must be a number from 0.1 to 120.0, got \"0\""),
                "\(command): \(outOfRange.stderr)")
            let help = try await ChildProcess.run(Executables.roadsave, command.prefix(1) + ["--help"], limit: 60)
            for flag in ["--link-heartbeat", "--link-timeout", "--connect-timeout", "--reconnect-max"] {
                #expect(help.stdout.contains(flag), "\(command) --help lacks \(flag)")
            }
        }
    }
}
