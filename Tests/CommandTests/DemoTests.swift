import Foundation
import RoadSaveTestKit
import Testing

/// `make demo` (scripts/demo.sh) for real: the three services under `roadsave up`, the morning sent through a gateway
/// and the events as `roadsave tail` prints them, the crash among them, then a clean stop.
@Suite struct DemoTests {
    @Test func theDemoShowsTheMorningsEventsWithTheCrashAndStopsCleanly() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("roadsave-demo-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let script = TestPaths.repository.appendingPathComponent("scripts/demo.sh")
        let demo = try RunningProcess(
            [script.path, Roadsave.executable.path],
            environment: ProcessInfo.processInfo.environment.merging(
                ["ROADSAVE_DEMO_DIR": folder.path]) { _, new in new },
            executable: URL(fileURLWithPath: "/bin/bash"))
        defer { demo.kill() }
        // A hang bound, not a speed check: the demo ends on its own once the tail has replay's count of events.
        let status = await demo.waitForExit(timeout: 300)
        #expect(status == 0, "\(demo.stderr)")
        let events = Roadsave.Result(status: 0, stdout: demo.stdout, stderr: "").objects
        let replay = try await Roadsave.run(["replay", folder.appendingPathComponent("morning.ndjson").path])
        #expect(replay.status == 0)
        // Every event replay gives, each once, the crash among them.
        #expect(
            Set(events.compactMap { $0["eventID"] as? String })
                == Set(replay.objects.compactMap { $0["eventID"] as? String }))
        #expect(events.count == replay.objects.count)
        #expect(events.contains { $0["event"] as? String == "crashDetected" })
        #expect(demo.stderr.contains("stopped cleanly"), "\(demo.stderr)")
    }
}
