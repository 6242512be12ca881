import Foundation
import RoadSaveTestKit
import Testing

/// The three services started one by one, driven by `send`, `ctl` and watched by `tail`.
@Suite struct EndToEndTests {
    @Test func recordsSentBecomeEventsOnTail() async throws {
        let pipeline = try await Pipeline.start(stopDelay: 5)
        defer { pipeline.kill() }
        let everything = try await startTail(
            ["--endpoint", pipeline.subscribers, "--timeout", "120"], catchUp: pipeline.catchUp)
        defer { everything.kill() }
        let crashes = try await startTail(
            [
                "--endpoint", pipeline.subscribers, "--event", "crashDetected", "--app", "demo-app",
                "--count", "1", "--timeout", "120",
            ], catchUp: pipeline.catchUp)
        defer { crashes.kill() }
        let walkerOnly = try await startTail(
            [
                "--endpoint", pipeline.subscribers, "--app", "demo-app", "--user", "user-walker",
                "--event", "tripDidStart,tripDidEnd", "--timeout", "120",
            ], catchUp: pipeline.catchUp)
        defer { walkerOnly.kill() }

        let send = try await Roadsave.run([
            "send", Roadsave.fixture("morning.ndjson").path, "--endpoint", pipeline.gateways,
            "--batch", "100",
        ])
        #expect(send.status == 0, "\(send.stderr)")
        #expect(send.lines == ["sent 864, accepted 864, rejected 0, batches 9"])

        // --count 1: the crash alone, then tail exits by itself.
        let crashStatus = await crashes.waitForExit(timeout: 90)
        #expect(crashStatus == 0, "\(crashes.stderr)")
        let crash = try #require(Roadsave.Result(status: 0, stdout: crashes.stdout, stderr: "").objects.first)
        #expect(crashes.lines.count == 1)
        #expect(crash["event"] as? String == "crashDetected")
        #expect(crash["user"] as? String == "user-crash")
        #expect(crash["confidence"] as? String == "high")
        #expect(crash["isTest"] as? Bool == false)

        // Both trips start and end (a 5 s stop delay ends them soon after the records stop).
        let wanted: Set<String> = [
            "tripDidStart/user-crash", "tripDidStart/user-walker", "crashDetected/user-crash",
            "tripDidEnd/user-crash", "tripDidEnd/user-walker",
        ]
        var seen: Set<String> = []
        let deadline = Date().addingTimeInterval(90)
        while Date() < deadline {
            seen = Set(
                Roadsave.Result(status: 0, stdout: everything.stdout, stderr: "").objects.map {
                    "\($0["event"] as? String ?? "?")/\($0["user"] as? String ?? "?")"
                })
            if seen.isSuperset(of: wanted) { break }
            try await Task.sleep(nanoseconds: 200_000_000)
        }
        #expect(seen.isSuperset(of: wanted), "seen: \(seen.sorted())\nstdout: \(everything.stdout)")
        // One JSON object per line, nothing else.
        #expect(
            everything.lines.allSatisfy { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) is [String: Any] })

        everything.signal(SIGTERM)
        #expect(await everything.waitForExit(timeout: 5) == 0)
        walkerOnly.signal(SIGINT)
        #expect(await walkerOnly.waitForExit(timeout: 5) == 0)
        let walkerEvents = Roadsave.Result(status: 0, stdout: walkerOnly.stdout, stderr: "").objects
        #expect(!walkerEvents.isEmpty)
        #expect(
            walkerEvents.allSatisfy {
                $0["user"] as? String == "user-walker" && ($0["event"] as? String)?.hasPrefix("trip") == true
            },
            "\(walkerOnly.stdout)")
        await pipeline.stop()
    }

    @Test func testCrashRaisedThroughControlReachesTail() async throws {
        let pipeline = try await Pipeline.start(applications: "demo-app", stopDelay: nil)
        defer { pipeline.kill() }
        let tail = try await startTail(
            [
                "--endpoint", pipeline.subscribers, "--event", "crashDetected",
                "--user", "tester", "--count", "1", "--timeout", "60",
            ], catchUp: pipeline.catchUp)
        defer { tail.kill() }
        for command in ["configure", "startMonitoring", "raiseTestCrash"] {
            let result = try await Roadsave.run([
                "ctl", command, "--app", "demo-app", "--user", "tester",
                "--endpoint", pipeline.control,
            ])
            #expect(result.status == 0, "\(command): \(result.stdout) \(result.stderr)")
        }
        let status = await tail.waitForExit(timeout: 60)
        #expect(status == 0, "\(tail.stderr)")
        let crash = try #require(
            Roadsave.Result(status: 0, stdout: tail.stdout, stderr: "").objects.first, "\(tail.stderr)")
        #expect(crash["event"] as? String == "crashDetected")
        #expect(crash["user"] as? String == "tester")
        #expect(crash["isTest"] as? Bool == true)
        await pipeline.stop()
    }

    /// Asked for (`--follow-up`), a test crash's follow-up comes after it; stopping monitoring ends its watch, and a
    /// device that sent nothing is `deviceSilent`.
    @Test func aTestCrashsFollowUpComesWhenAskedFor() async throws {
        let pipeline = try await Pipeline.start(applications: "demo-app", stopDelay: nil)
        defer { pipeline.kill() }
        let tail = try await startTail(
            [
                "--endpoint", pipeline.subscribers, "--event", "crashDetected,crashFollowUp",
                "--user", "tester", "--count", "2", "--timeout", "60",
            ], catchUp: pipeline.catchUp)
        defer { tail.kill() }
        for arguments in [["configure"], ["startMonitoring"], ["raiseTestCrash", "--follow-up"], ["stopMonitoring"]] {
            let result = try await Roadsave.run(
                ["ctl"] + arguments + [
                    "--app", "demo-app", "--user", "tester",
                    "--endpoint", pipeline.control,
                ])
            #expect(result.status == 0, "\(arguments): \(result.stdout) \(result.stderr)")
        }
        let status = await tail.waitForExit(timeout: 60)
        #expect(status == 0, "\(tail.stderr)")
        let events = Roadsave.Result(status: 0, stdout: tail.stdout, stderr: "").objects
        #expect(events.map { $0["event"] as? String } == ["crashDetected", "crashFollowUp"], "\(tail.stdout)")
        guard events.count == 2 else { return }
        #expect(events[1]["crashID"] as? String == events[0]["crashID"] as? String)
        #expect(events[1]["eventID"] as? String != events[0]["eventID"] as? String)
        #expect(events[1]["isTest"] as? Bool == true)
        #expect(events[1]["outcome"] as? String == "deviceSilent")
        await pipeline.stop()
    }
}
