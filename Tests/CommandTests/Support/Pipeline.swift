import Foundation
import RoadSaveTestKit
import Testing

/// sensor-ingest, detection and notifier started one by one as `roadsave ingest|detect|notify`, on a block of six free
/// loopback ports (gateways, records, control, events, subscribers, catch-up), each with a data directory of its own
/// (see `RunningProcess`).
final class Pipeline: @unchecked Sendable { // Sendable: immutable after init; RunningProcess is thread-safe
    let base: Int
    let ingest: RunningProcess
    let detect: RunningProcess
    let notify: RunningProcess
    let settings: URL?

    var gateways: String { Ports.tcp(base) }
    var control: String { Ports.tcp(base + 2) }
    var subscribers: String { Ports.tcp(base + 4) }
    var catchUp: String { Ports.tcp(base + 5) }

    /// `stopDelay` (seconds) goes to detection through `--settings`, so trips end quickly.
    static func start(applications: String = "demo-app", stopDelay: Double? = 5) async throws -> Pipeline {
        let base = Ports.reserveRange(6)
        var settings: URL?
        if let stopDelay { settings = try temporaryFile("{\"stopDelay\": \(stopDelay)}", suffix: ".json") }
        var environment = ProcessInfo.processInfo.environment
        environment["ROADSAVE_APPLICATIONS"] = applications
        let notify = try RunningProcess([
            "notify", "--events-endpoint", Ports.tcp(base + 3),
            "--publish-endpoint", Ports.tcp(base + 4),
            "--catch-up-endpoint", Ports.tcp(base + 5),
        ])
        let detect = try RunningProcess(
            [
                "detect", "--records-endpoint", Ports.tcp(base + 1),
                "--control-endpoint", Ports.tcp(base + 2),
                "--events-endpoint", Ports.tcp(base + 3),
            ]
                + (settings.map { ["--settings", $0.path] } ?? []))
        let ingest = try RunningProcess(
            [
                "ingest", "--gateway-endpoint", Ports.tcp(base),
                "--records-endpoint", Ports.tcp(base + 1),
            ], environment: environment)
        let pipeline = Pipeline(base: base, ingest: ingest, detect: detect, notify: notify, settings: settings)
        for (process, marker) in [(ingest, "msg=listening"), (detect, "msg=running"), (notify, "msg=running")] {
            guard await waitForError(process, containing: marker, timeout: 20) else {
                pipeline.kill()
                throw TestFailure("roadsave \(process.arguments[0]) did not start: \(process.stderr)")
            }
        }
        return pipeline
    }

    private init(base: Int, ingest: RunningProcess, detect: RunningProcess, notify: RunningProcess, settings: URL?) {
        self.base = base
        self.ingest = ingest
        self.detect = detect
        self.notify = notify
        self.settings = settings
    }

    /// SIGTERM in pipeline order; each must exit 0.
    func stop(sourceLocation: SourceLocation = #_sourceLocation) async {
        for process in [ingest, detect, notify] {
            await stopGracefully(process, sourceLocation: sourceLocation)
        }
        if let settings { try? FileManager.default.removeItem(at: settings) }
    }

    func kill() {
        for process in [ingest, detect, notify] { process.kill() }
        if let settings { try? FileManager.default.removeItem(at: settings) }
    }
}

func waitForError(_ process: RunningProcess, containing text: String, timeout: Double) async -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if process.stderr.contains(text) { return true }
        if !process.process.isRunning { return process.stderr.contains(text) }
        try? await Task.sleep(nanoseconds: 50_000_000)
    }
    return false
}

/// A `roadsave tail` started now that misses nothing: it subscribes, then catches up from the first event
/// (`--since 0` at `catchUp`), so an event published before its subscription reached the notifier (connecting is not
/// readiness) comes from the catch-up endpoint instead, whatever the time the subscription takes.
func startTail(_ arguments: [String], catchUp: String) async throws -> RunningProcess {
    let tail = try RunningProcess(
        ["tail", "--log-level", "info", "--since", "0", "--catch-up-endpoint", catchUp] + arguments)
    _ = await waitForError(tail, containing: "msg=subscribed", timeout: 10)
    return tail
}
