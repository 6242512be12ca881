import Foundation
import RoadSaveTestKit
import Testing

/// `roadsave replay` end to end, as a separate process, on the fixture files.
@Suite(.serialized) struct ReplayCommandTests {
    static let morning = Processes.fixture("morning.ndjson").path

    func events(_ result: ProcessResult, _ name: String) -> [[String: Any]] {
        result.objects.filter { $0["event"] as? String == name }
    }

    @Test func helpExplainsTheCommand() async throws {
        let result = try await Processes.roadsave("replay", "--help")
        #expect(result.status == 0)
        #expect(result.stdout.contains("Usage: roadsave replay FILE.ndjson"))
        #expect(result.stdout.contains("--platform URL"))
        let top = try await Processes.roadsave("--help")
        #expect(top.status == 0 && top.stdout.contains("replay") && top.stdout.contains("simulate"))
    }

    @Test func itCannotRunWithoutAReadableFileOrWithBadOptions() async throws {
        let missing = try await Processes.roadsave("replay", "/nonexistent/records.ndjson")
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("cannot read /nonexistent/records.ndjson"))
        let none = try await Processes.roadsave("replay")
        #expect(none.status == 2 && none.stderr.contains("a record file is needed"))
        let option = try await Processes.roadsave("replay", Self.morning, "--colour")
        #expect(option.status == 2 && option.stderr.contains("unknown option --colour"))
        let format = try await Processes.roadsave("replay", Self.morning, "--format", "xml")
        #expect(format.status == 2 && format.stderr.contains("--format must be one of current, legacy"))
        let url = try await Processes.roadsave("replay", Self.morning, "--platform", "ftp://example")
        #expect(url.status == 2 && url.stderr.contains("http://"))
        #expect(try await Processes.roadsave("frobnicate").status == 2)
    }

    @Test func theMorningReplaysToItsEvents() async throws {
        let result = try await Processes.roadsave("replay", Self.morning)
        #expect(result.status == 0)
        // The fixture's story: one commute that ends on foot, one crash.
        let starts = events(result, "tripDidStart")
        let ends = events(result, "tripDidEnd")
        let crashes = events(result, "crashDetected")
        #expect(starts.filter { $0["user"] as? String == "user-walker" }.count == 1)
        #expect(ends.filter { $0["user"] as? String == "user-walker" }.first?["endReason"] as? String == "steps")
        #expect(crashes.count == 1)
        let crash = try #require(crashes.first)
        #expect(crash["user"] as? String == "user-crash")
        #expect(crash["confidence"] as? String == "high")
        #expect(crash["isTest"] as? Bool == false)
        // 30 s offset + 10 s ramp + 180 s + 0.4 s after 06:30:00.
        #expect(crash["detectedAt"] as? String == "2026-03-02T06:33:40.400Z")
        // Every event line carries the common fields.
        for event in result.objects {
            for field in ["event", "eventID", "app", "user"] { #expect(event[field] != nil, "\(field) in \(event)") }
        }
        // The bad lines are reported with their line number, field and reason; the rest still ran.
        #expect(result.stderr.contains("line=6") && result.stderr.contains("field=lat"))
        #expect(result.stderr.contains("line=7") && result.stderr.contains("field=(json)"))
        #expect(result.stderr.contains("line=8") && result.stderr.contains("field=kind"))
        #expect(result.stderr.contains("invalid=3") && result.stderr.contains("duplicates=1"))
        #expect(result.stderr.contains("subsystem=co.za.roadsave.RoadSaveKit"))
    }

    @Test func theOutputMatchesTheReviewedFixtureByteForByte() async throws {
        let result = try await Processes.roadsave("replay", Self.morning, "--quiet")
        let expected = try String(contentsOf: Processes.fixture("morning.expected.ndjson"), encoding: .utf8)
        #expect(result.stdout == expected)
        // And it is the same every time.
        #expect(try await Processes.roadsave("replay", Self.morning, "--quiet").stdout == result.stdout)
    }

    @Test func standardInputCanBeReplayed() async throws {
        let data = try Data(contentsOf: Processes.fixture("morning.ndjson"))
        let piped = try await Processes.roadsave("replay", "-", "--quiet", input: data)
        #expect(piped.status == 0)
        #expect(piped.stdout == (try await Processes.roadsave("replay", Self.morning, "--quiet")).stdout)
    }

    @Test func theLegacyFormatUsesThe3xKeys() async throws {
        let result = try await Processes.roadsave("replay", Self.morning, "--format", "legacy", "--quiet")
        let crash = try #require(events(result, "crashDetected").first)
        #expect(crash["timestamp"] as? String == "2026-03-02T06:33:40.400Z")
        #expect(crash["confidence"] as? String == "High")
        #expect(crash["detectedAt"] == nil)
        let end = try #require(events(result, "tripDidEnd").first)
        #expect(
            Set(end.keys) == ["event", "eventID", "app", "user", "tripID", "startDate", "endDate", "distanceMetres"])
    }

    @Test func settingsFromAFileReplaceTheThresholds() async throws {
        let settings = try temporaryFile(#"{"stepThreshold": 1000, "stopDelay": 60}"#, suffix: ".json")
        defer { try? FileManager.default.removeItem(at: settings) }
        let result = try await Processes.roadsave("replay", Self.morning, "--settings", settings.path, "--quiet")
        let end = try #require(events(result, "tripDidEnd").first { $0["user"] as? String == "user-walker" })
        #expect(end["endReason"] as? String == "stopDelay")

        let bad = try temporaryFile(#"{"stopDelay": -5}"#, suffix: ".json")
        defer { try? FileManager.default.removeItem(at: bad) }
        let refused = try await Processes.roadsave("replay", Self.morning, "--settings", bad.path)
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("stopDelay"))
    }

    @Test(arguments: ["high", "medium", "low"])
    func aRealPlatformsVerdictSetsTheConfidence(verdict: String) async throws {
        let platform = try StubPlatform(["--verdict", verdict])
        let result = try await Processes.roadsave("replay", Self.morning, "--platform", platform.url, "--quiet")
        let requests = platform.stop()
        #expect(events(result, "crashDetected").map { $0["confidence"] as? String } == [verdict])
        // The candidate carried what PROTOCOL §5 names.
        let evaluation = try #require(
            requests.first { $0["path"] as? String == "/v1/crash-evaluations" }?["body"] as? [String: Any])
        for field in ["app", "user", "time", "latitude", "longitude", "speedBefore", "speedAfter", "peakG", "samples"] {
            #expect(evaluation[field] != nil, "\(field)")
        }
        #expect(requests.contains { ($0["path"] as? String)?.hasPrefix("/v1/settings?applicationID=demo-app") == true })
    }

    @Test func aPlatformVerdictOfNoneSuppressesTheCrash() async throws {
        let platform = try StubPlatform(["--verdict", "none"])
        let result = try await Processes.roadsave("replay", Self.morning, "--platform", platform.url)
        _ = platform.stop()
        #expect(events(result, "crashDetected").isEmpty)
        #expect(events(result, "tripDidEnd").count >= 1)
        #expect(result.stderr.contains("platformVerdictNone"))
    }

    @Test func aPlatformThatFailsEvaluationsGivesUnknown() async throws {
        let platform = try StubPlatform(["--fail-evaluations"])
        let result = try await Processes.roadsave(
            "replay", Self.morning, "--platform", platform.url,
            "--platform-attempts", "2")
        let requests = platform.stop()
        #expect(events(result, "crashDetected").map { $0["confidence"] as? String } == ["unknown"])
        // Retried before giving up.
        #expect(requests.filter { $0["path"] as? String == "/v1/crash-evaluations" }.count == 2)
    }

    @Test func aPlatformThatCannotBeReachedAtStartGivesOfflineLimitExceeded() async throws {
        // Nothing listens on port 9 of loopback: every settings fetch fails, and no settings were ever cached.
        let result = try await Processes.roadsave(
            "replay", Self.morning, "--platform", "http://127.0.0.1:9",
            "--platform-attempts", "1")
        #expect(result.status == 0)
        #expect(result.objects.isEmpty)
        #expect(result.stderr.contains("offlineLimitExceeded"))
    }

    @Test func settingsThatCannotBeFetchedAreAskedForAgainEvery30SecondsOfRecordTime() async throws {
        let platform = try StubPlatform(["--fail-settings"])
        let result = try await Processes.roadsave(
            "replay", Self.morning, "--platform", platform.url, "--platform-attempts", "1")
        let requests = platform.stop()
        #expect(result.status == 0)
        #expect(result.objects.isEmpty)
        // The fixture spans 540 s of record time: a first fetch, then one each 30 s or so (never one per record).
        let fetches = requests.filter { ($0["path"] as? String)?.hasPrefix("/v1/settings") == true }.count
        #expect((15...19).contains(fetches), "\(fetches) settings fetches")
        // Each device is reported once; every valid record is counted as not monitored.
        #expect(result.stderr.components(separatedBy: "msg=\"device not monitored").count - 1 == 2)
        #expect(result.stderr.contains("notMonitored=864"))
    }
}
