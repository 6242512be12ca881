import Foundation
import GatewayKit
import RoadSaveTestKit
import Testing

/// PROTOCOL §8 through outages: what was acknowledged is applied, whatever the transport does. The three services as
/// processes on loopback, a gateway streaming a simulated fleet with disorder (`simulate --disorder`) at 500 records
/// a second, and one outage per run: the gateway paused, ingest frozen (SIGSTOP, then SIGCONT), ingest frozen then
/// SIGKILLed and started again, detection frozen, the notifier frozen. The outage starts once the gateway has had a
/// number of batches acknowledged and lasts 2 to 6 s, both drawn from a seed the test prints (`ROADSAVE_TEST_SEED`
/// replays a run). With `roadsave send` (watermarks in its headers) every event's JSON must be replay's, each once,
/// and no record may be found too late. A pipelining Python gateway without watermarks sends the same stream through
/// the harshest outage: what detection cannot apply must all be in sight (its store's `unapplied` table), and the
/// events must be those of a replay of the records it did apply.
@Suite("Outages", .serialized)
struct OutageTests {
    static let roadsave = Executables.named("roadsave")

    enum Fault: String, CaseIterable, CustomStringConvertible {
        case senderPaused, ingestFrozen, ingestFrozenThenKilled, detectionFrozen, notifierFrozen
        var description: String { rawValue }
    }

    /// The settings of both replay and detection: quick trips and crashes, so that ten minutes hold many events.
    static var settings: [String: Any] { Services.quickSettings }
    static let reorderWindow = "10"

    /// A fleet of four devices (one crashes) for ten minutes, with disorder, and the events replay gives for it.
    static func fleet(in folder: URL, seed: UInt64) async throws -> PipelineDurabilityTests.Expected {
        let recording = folder.appendingPathComponent("fleet.ndjson")
        let settings = folder.appendingPathComponent("settings.json")
        try jsonLine(Self.settings).write(to: settings, atomically: true, encoding: .utf8)
        _ = try await PipelineDurabilityTests.run([
            "simulate", "--devices", "4", "--crashes", "1", "--duration", "10",
            "--disorder", "--seed", String(seed), "--output", recording.path,
            "--no-progress",
        ])
        return try await replay(recording, settings: settings)
    }

    static func replay(_ recording: URL, settings: URL) async throws -> PipelineDurabilityTests.Expected {
        try await PipelineDurabilityTests.replayed(
            recording, ["--settings", settings.path, "--reorder-window", reorderWindow])
    }

    /// The services as every outage test runs them: detection with the test's settings and the same reorder window
    /// as the replay.
    static func services(folder: URL) async throws -> Services {
        var options = Services.Options()
        options.settings = settings
        options.detectArguments = ["--reorder-window", reorderWindow]
        return try await Services.start(options)
    }

    /// `sqlite3 FILE QUERY`: the rows, one a line.
    static func query(_ file: String, _ sql: String) async throws -> [String] {
        let child = try Child(
            name: "sqlite3", executable: URL(fileURLWithPath: "/usr/bin/sqlite3"),
            arguments: ["-separator", "\t", file, sql])
        guard await child.waitForExit(timeout: 30) == 0 else { throw TestFailure("sqlite3 failed\n\(child.tail())") }
        return child.stdout.map(\.text)
    }

    /// Holds the outage `fault` for `seconds` once the gateway (`send`, whose acknowledgements `acknowledged`
    /// counts) has had `after` batches acknowledged.
    static func outage(
        _ fault: Fault, after: Int, seconds: Double, services: Services, gateway: Child,
        acknowledged: @escaping () -> Int, context: String
    ) async throws {
        let reached = await eventually(timeout: 60) { acknowledged() >= after || !gateway.isRunning }
        #expect(reached && gateway.isRunning, "the gateway ended before the outage (\(context))\n\(gateway.tail())")
        let victim: Child? =
            switch fault {
            case .senderPaused: gateway
            case .ingestFrozen, .ingestFrozenThenKilled: services.ingest
            case .detectionFrozen: services.detect
            case .notifierFrozen: services.notify
            }
        let process = try #require(victim)
        process.signal(SIGSTOP)
        // The outage's length is the test's input, not its verdict: the events must be replay's however the
        // machine's speed shifts what is in flight when it starts and ends.
        try await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
        if fault == .ingestFrozenThenKilled {
            process.kill()
            try services.startIngest()
        } else {
            process.signal(SIGCONT)
        }
    }

    /// The subscriber's events once they are all there (or the wait is over).
    static func received(_ tail: Child, count: Int) async throws -> [[String: Any]] {
        _ = await eventually(timeout: 90) { PipelineDurabilityTests.printed(tail).count >= count }
        // Anything more than expected (a repeat) would come right after.
        try await Task.sleep(nanoseconds: 1_000_000_000)
        return PipelineDurabilityTests.printed(tail).map(\.event)
    }

    @Test(arguments: Fault.allCases)
    func aGatewaySendingWatermarksGetsReplaysEventsThroughAnOutage(_ fault: Fault) async throws {
        try await withPipelineSlot {
            // Each fault draws from its own seed, the run's plus the fault's place, so the run's seed replays all.
            let runSeed = TestSeed.make()
            let seed = runSeed &+ UInt64(Fault.allCases.firstIndex(of: fault)!)
            var random = SplitMix64(state: seed)
            let after = Int.random(in: 1...6, using: &random)
            let seconds = Double.random(in: 2...6, using: &random)
            let timeout = [2.0, 10.0].randomElement(using: &random)!
            let context =
                "\(fault), seed \(seed) (ROADSAVE_TEST_SEED=\(runSeed) replays it): outage after \(after) batches for \(String(format: "%.2f", seconds)) s, --timeout \(timeout)"
            print("outage test: \(context)")
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                "roadsave-outage-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let expected = try await Self.fleet(in: folder, seed: seed % 1000)
            // The premise: trips and the crash (the simulated crash driver's), so there is something to get wrong.
            #expect(expected.events.values.contains { $0.string("event") == "crashDetected" }, "\(context)")
            #expect(expected.events.values.contains { $0.string("event") == "tripDidEnd" }, "\(context)")

            let services = try await Self.services(folder: folder)
            defer { services.kill() }
            let tail = try Child.tailFromStart(services)
            defer { tail.kill() }
            let gateway = try Child(
                name: "send", executable: Self.roadsave,
                arguments: [
                    "send", expected.recording.path, "--endpoint", services.gatewayEndpoint, "--batch", "100",
                    "--rate", "500", "--timeout", String(timeout), "--attempts", "100", "--log-level", "debug",
                ])
            defer { gateway.kill() }
            try await Self.outage(
                fault, after: after, seconds: seconds, services: services, gateway: gateway,
                acknowledged: { gateway.stderr.filter { $0.text.contains("msg=\"batch acknowledged\"") }.count },
                context: context)
            #expect(
                await gateway.waitForExit(timeout: 120) == 0,
                "the gateway did not get every batch acknowledged (\(context))\n\(gateway.tail())\n\(services.logs())")
            #expect(!gateway.stderr.contains { $0.text.contains("behind the watermark") }, "\(context)")

            let events = try await Self.received(tail, count: expected.events.count)
            PipelineDurabilityTests.checkExactlyOnce(events, expected: expected.events, "subscriber", context: context)
            let late = try await Self.query(
                services.dataDirectory("detect") + "/outbox.sqlite",
                "SELECT count(*) FROM unapplied")
            #expect(late == ["0"], "records found too late (\(context))\n\(services.logs())")
            print(
                "outage test: \(fault): \(events.count) of \(expected.events.count) events, late \(late.first ?? "?")")
        }
    }

    /// A gateway without watermarks is ordered by the reorder window and the clock (the rule gateways without a
    /// header keep): through ingest frozen and then killed, its re-sends can land behind newer batches, too late. Each
    /// such record must be in the `unapplied` table, and the events must be exactly those a replay gives for the
    /// file without them. The count is printed: it is what docs/gateways.md says such a gateway gets.
    @Test func aGatewayWithoutWatermarksKeepsWhatCannotBeAppliedInSight() async throws {
        try await withPipelineSlot {
            let runSeed = TestSeed.make()
            let seed = runSeed &+ 7
            var random = SplitMix64(state: seed)
            let after = Int.random(in: 2...6, using: &random)
            let seconds = Double.random(in: 2.5...6, using: &random)
            let context =
                "python gateway, seed \(seed) (ROADSAVE_TEST_SEED=\(runSeed) replays it): ingest frozen after \(after) batches for \(String(format: "%.2f", seconds)) s, then killed"
            print("outage test: \(context)")
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                "roadsave-outage-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let all = try await Self.fleet(in: folder, seed: seed % 1000)
            let services = try await Self.services(folder: folder)
            defer { services.kill() }
            let tail = try Child.tailFromStart(services)
            defer { tail.kill() }
            let gateway = try Child.python(
                "windowed_gateway.py",
                [
                    all.recording.path, "--endpoint", services.gatewayEndpoint, "--batch-size", "100", "--rate", "500",
                    "--window", "8", "--timeout", "2",
                ])
            defer { gateway.kill() }
            try await Self.outage(
                .ingestFrozenThenKilled, after: after, seconds: seconds, services: services,
                gateway: gateway, acknowledged: { gateway.jsonLines.count }, context: context)
            #expect(await gateway.waitForExit(timeout: 120) == 0, "\(context)\n\(gateway.tail())")
            // Every batch acknowledged: then the device's last records wait for the clock (idle flush, stop delay).
            try await Task.sleep(nanoseconds: 1_000_000_000)
            let file = services.dataDirectory("detect") + "/outbox.sqlite"
            _ = await eventually(timeout: 30) { PipelineDurabilityTests.printed(tail).count >= 1 }
            let unapplied = try await Self.query(file, "SELECT user, printf('%.3f', t), kind FROM unapplied")
            // The file without the records detection could not apply, replayed.
            let excluded = Set(unapplied)
            let lines = try String(contentsOf: all.recording, encoding: .utf8).split(separator: "\n")
            let kept = lines.filter { line in
                guard let record = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                    let user = record.string("user"), let t = record.number("t"), let kind = record.string("kind")
                else { return true }
                return !excluded.contains("\(user)\t\(String(format: "%.3f", t))\t\(kind)")
            }
            let filtered = folder.appendingPathComponent("applied.ndjson")
            try (kept.joined(separator: "\n") + "\n").write(to: filtered, atomically: true, encoding: .utf8)
            let expected = try await Self.replay(filtered, settings: folder.appendingPathComponent("settings.json"))
            let events = try await Self.received(tail, count: expected.events.count)
            print(
                "outage test: without watermarks \(unapplied.count) records too late (kept in unapplied), \(lines.count - kept.count) lines of the file; \(events.count) events against replay's \(all.events.count) for the whole file"
            )
            let fileKeys = Set(
                lines.compactMap { line -> String? in
                    guard let record = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                        let user = record.string("user"), let t = record.number("t"), let kind = record.string("kind")
                    else { return nil }
                    return "\(user)\t\(String(format: "%.3f", t))\t\(kind)"
                })
            #expect(excluded.isSubset(of: fileKeys), "every unapplied record is a record of the file (\(context))")
            PipelineDurabilityTests.checkExactlyOnce(events, expected: expected.events, "subscriber", context: context)
        }
    }
}
