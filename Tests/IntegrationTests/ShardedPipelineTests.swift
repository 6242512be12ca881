import Foundation
import RoadSaveTestKit
import Testing

/// Several ingests and several detection shards (PROTOCOL §1, issue 6): two sensor-ingests each with its own
/// journal, two detection processes (`--shard 0/2`, `--shard 1/2`) each reading both journals and tracking a position
/// in each, one notifier reading both detections' outboxes. The union of the events equals replay's; a shard killed
/// and started again catches up from where it stopped.
@Suite("Two ingests, two detection shards", .serialized)
struct ShardedPipelineTests {
    @Test func twoIngestsAndTwoShardsGiveReplaysEventsEvenWithAShardKilled() async throws {
        try await withPipelineSlot {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                "roadsave-it-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let expected = try await PipelineDurabilityTests.expected(
                in: folder, devices: 8, crashes: 2, duration: 15, seed: 5)

            // A device talks to one gateway: the recording is split by device between the two ingests.
            let lines = try String(contentsOf: expected.recording, encoding: .utf8).split(separator: "\n")
            var halves: [[Substring]] = [[], []]
            for line in lines {
                let record = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] ?? [:]
                let user = record.string("user") ?? ""
                halves[Int(user.unicodeScalars.last.map { $0.value } ?? 0) % 2].append(line)
            }
            let files = try halves.enumerated().map { index, half in
                let url = folder.appendingPathComponent("half-\(index).ndjson")
                try (half.joined(separator: "\n") + "\n").write(to: url, atomically: true, encoding: .utf8)
                return url
            }
            #expect(halves.allSatisfy { !$0.isEmpty })

            try await Self.runTwoIngestsAndTwoShards(folder: folder, expected: expected, killingShard: true) {
                gateway in
                try files.enumerated().map { index, file in
                    try Child(
                        name: "send-\(index)", executable: PipelineDurabilityTests.roadsave,
                        arguments: [
                            "send", file.path, "--endpoint", gateway[index], "--batch", "50", "--rate", "800",
                            "--timeout", "1", "--attempts", "100",
                        ])
                }
            }
        }
    }

    /// One gateway reaching both ingests, each device's records to the one its hash names: the events are replay's.
    @Test func oneGatewaySpreadingDevicesOverTwoIngestsGivesReplaysEvents() async throws {
        try await withPipelineSlot {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                "roadsave-it-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let expected = try await PipelineDurabilityTests.expected(
                in: folder, devices: 8, crashes: 2, duration: 15, seed: 5)
            try await Self.runTwoIngestsAndTwoShards(folder: folder, expected: expected, killingShard: false) {
                gateway in
                [
                    try Child(
                        name: "send", executable: PipelineDurabilityTests.roadsave,
                        arguments: [
                            "send", expected.recording.path, "--endpoint", gateway[0], "--endpoint", gateway[1],
                            "--batch", "50",
                            "--rate", "1600", "--timeout", "1", "--attempts", "100",
                        ])
                ]
            }
            // Both journals got records (which devices exactly is SendEndpointsTests' matter).
            for index in 0..<2 {
                let journal = folder.appendingPathComponent("ingest-\(index)/journal.sqlite").path
                let sqlite = try Child(
                    name: "sqlite3", executable: URL(fileURLWithPath: "/usr/bin/sqlite3"),
                    arguments: [journal, "SELECT sum(records) > 0 FROM chunks"])
                _ = await sqlite.waitForExit(timeout: 10)
                #expect(sqlite.stdout.map(\.text) == ["1"], "ingest \(index)'s journal: \(sqlite.tail())")
            }
        }
    }

    /// Two ingests (gateway endpoints passed to `send`, which starts the gateways), two detection shards reading both
    /// journals, a notifier and `roadsave tail`: every event of `expected` printed once, and each shard with a
    /// position in each journal. With `killingShard`, shard 1 is killed in the middle of the stream and started again.
    static func runTwoIngestsAndTwoShards(
        folder: URL, expected: PipelineDurabilityTests.Expected, killingShard: Bool,
        send: ([String]) throws -> [Child]
    ) async throws {
        let ports = Ports.reserve(11)
        let gateway = [ports[0], ports[1]]
        let journal = [ports[2], ports[3]]
        let control = [ports[4], ports[5]]
        let outbox = [ports[6], ports[7]]
        let publish = ports[8]
        let catchUp = ports[9]
        let settings = folder.appendingPathComponent("settings.json").path
        func endpoint(_ port: Int) -> String { "tcp://127.0.0.1:\(port)" }
        var children: [Child] = []
        defer { for child in children { child.kill() } }
        func ingest(_ index: Int) throws -> Child {
            try Child(
                name: "ingest-\(index)", executable: Executables.named("roadsave-ingest"),
                arguments: [
                    "--gateway-endpoint", endpoint(gateway[index]), "--records-endpoint", endpoint(journal[index]),
                    "--shards", "2", "--data-dir", folder.appendingPathComponent("ingest-\(index)").path,
                ], environment: ["ROADSAVE_APPLICATIONS": "demo-app"])
        }
        func detect(_ shard: Int) throws -> Child {
            try Child(
                name: "detect-\(shard)", executable: Executables.named("roadsave-detect"),
                arguments: [
                    "--records-endpoint", "\(endpoint(journal[0])),\(endpoint(journal[1]))",
                    "--control-endpoint", endpoint(control[shard]), "--events-endpoint", endpoint(outbox[shard]),
                    "--shard", "\(shard)/2", "--reorder-window", "3", "--settings", settings, "--checkpoint-interval",
                    "0.5",
                    "--data-dir", folder.appendingPathComponent("detect-\(shard)").path,
                ])
        }
        children += [try ingest(0), try ingest(1), try detect(0), try detect(1)]
        let notifier = try Child(
            name: "notify", executable: Executables.named("roadsave-notify"),
            arguments: [
                "--events-endpoint", "\(endpoint(outbox[0])),\(endpoint(outbox[1]))", "--publish-endpoint",
                endpoint(publish),
                "--catch-up-endpoint", endpoint(catchUp), "--data-dir", folder.appendingPathComponent("notify").path,
            ])
        children.append(notifier)
        let tail = try Child(
            name: "tail", executable: PipelineDurabilityTests.roadsave,
            arguments: [
                "tail", "--endpoint", endpoint(publish), "--catch-up-endpoint", endpoint(catchUp), "--since", "0",
                "--show-position", "--timeout", "300",
            ])
        children.append(tail)
        let logs = { children.map { $0.tail(15) }.joined(separator: "\n") }
        guard
            await eventually(
                timeout: 15,
                { ([publish, catchUp] + gateway + journal + control + outbox).allSatisfy(Ports.isListening) })
        else { throw TestFailure("the services did not start listening\n\(logs())") }

        let senders = try send(gateway.map(endpoint))
        children += senders
        if killingShard {
            // Shard 1 dies in the middle of the stream and comes back on its data directory.
            try await Task.sleep(nanoseconds: 2_500_000_000)
            children[3].kill()
            try await Task.sleep(nanoseconds: 500_000_000)
            children[3] = try detect(1)
        }
        for sender in senders {
            #expect(await sender.waitForExit(timeout: 120) == 0, "\(sender.tail())\n\(logs())")
        }
        let complete = await eventually(timeout: 60) {
            PipelineDurabilityTests.printed(tail).count >= expected.events.count
        }
        try await Task.sleep(nanoseconds: 1_500_000_000)
        #expect(
            complete, "\(PipelineDurabilityTests.printed(tail).count) of \(expected.events.count) events\n\(logs())")
        PipelineDurabilityTests.checkExactlyOnce(
            PipelineDurabilityTests.printed(tail).map(\.event),
            expected: expected.events, "subscriber", context: "two shards")
        // Each shard keeps a position in each journal (0 in one whose devices all hash to the other shard).
        for shard in 0..<2 {
            let store = folder.appendingPathComponent("detect-\(shard)/detection.sqlite").path
            let sqlite = try Child(
                name: "sqlite3", executable: URL(fileURLWithPath: "/usr/bin/sqlite3"),
                arguments: [store, "SELECT count(*) FROM positions"])
            _ = await sqlite.waitForExit(timeout: 10)
            #expect(sqlite.stdout.map(\.text) == ["2"], "shard \(shard) positions: \(sqlite.tail())")
        }
    }
}
