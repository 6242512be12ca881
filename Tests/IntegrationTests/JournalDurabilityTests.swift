import Foundation
import GatewayKit
import RoadSaveTestKit
import Testing

/// Torn writes at sensor-ingest: `roadsave ingest` is killed (SIGKILL) at random moments while a Python gateway
/// streams batches, and restarted on the same data directory each time. Every record the gateway saw acknowledged
/// must be in the journal, and the journal must open cleanly after each kill (whatever transaction was cut short is
/// rolled back). The moments come from a seed, printed (set `ROADSAVE_TEST_SEED` to replay one).
@Suite("Journal durability")
struct JournalDurabilityTests {
    /// `devices` devices, `each` location records apiece, interleaved as a fleet would send them.
    static func fleet(devices: Int, each: Int) -> String {
        var lines: [String] = []
        for index in 0..<each {
            for device in 0..<devices {
                let t = 1_772_433_000 + Double(index)
                lines.append(
                    "{\"kind\":\"location\",\"app\":\"demo-app\",\"user\":\"device-\(device)\",\"seq\":\(index + 1),"
                        + "\"t\":\(t),\"lat\":-33.9,\"lon\":\(18.4 + Double(index) * 1e-4),\"speed\":12,\"hacc\":5}")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    @Test func everyAcknowledgedRecordSurvivesSIGKILLOfIngest() async throws {
        try await withPipelineSlot {
            let seed = TestSeed.make()
            print("JournalDurabilityTests: seed \(seed) (ROADSAVE_TEST_SEED=\(seed) replays these kill moments)")
            var random = SplitMix64(state: seed)
            let ports = Ports.reserve(2)
            let dataDirectory = FileManager.default.temporaryDirectory
                .appendingPathComponent("roadsave-journal-\(UUID().uuidString.prefix(8))").path
            let records = try temporaryFile(Self.fleet(devices: 40, each: 500), suffix: ".ndjson")
            var incarnations: [Child] = []
            defer {
                for child in incarnations { child.kill() }
                try? FileManager.default.removeItem(at: records)
                try? FileManager.default.removeItem(atPath: dataDirectory)
            }

            func startIngest() async throws -> Child {
                let child = try Child(
                    name: "ingest #\(incarnations.count + 1)", executable: Executables.named("roadsave"),
                    arguments: [
                        "ingest", "--gateway-endpoint", "tcp://127.0.0.1:\(ports[0])",
                        "--records-endpoint", "tcp://127.0.0.1:\(ports[1])",
                        "--data-dir", dataDirectory, "--shards", "8",
                    ],
                    environment: ["ROADSAVE_APPLICATIONS": "demo-app"])
                incarnations.append(child)
                let listening = await eventually(timeout: 20) {
                    child.stderr.contains { $0.text.contains("msg=listening") } || !child.isRunning
                }
                guard listening, child.isRunning else {
                    throw TestFailure("ingest did not start on the journal\n\(child.tail())")
                }
                return child
            }

            var ingest = try await startIngest()
            // 20,000 records in 1,000 batches; a batch not acknowledged within half a second is sent again (same batchID).
            let gateway = try Child.python(
                "gateway.py",
                [
                    records.path, "--endpoint", "tcp://127.0.0.1:\(ports[0])",
                    "--batch-size", "20", "--timeout", "0.5", "--attempts", "100",
                ])
            incarnations.append(gateway)

            var killedAfter: [Int] = []
            for round in 0..<3 {
                // Kill while batches are flowing: once this incarnation has acknowledged some, after a random moment.
                let before = gateway.stdout.count
                _ = await eventually(timeout: 20) { gateway.stdout.count >= before + 10 || !gateway.isRunning }
                let delay = Double.random(in: 0...0.5, using: &random)
                try await Task.sleep(nanoseconds: UInt64(delay * 1e9))
                guard gateway.isRunning else { break }
                ingest.kill()
                let acknowledged = gateway.stdout.count
                killedAfter.append(acknowledged)
                print(
                    "JournalDurabilityTests: kill \(round + 1), \(String(format: "%.3f", delay)) s into a stream, "
                        + "\(acknowledged) batches acknowledged so far")
                ingest = try await startIngest()
            }
            let status = await gateway.waitForExit(timeout: 120)
            #expect(
                status == 0,
                "the gateway did not get every batch acknowledged (seed \(seed))\n\(gateway.tail())\n\(ingest.tail())")
            #expect(killedAfter.count >= 1, "the gateway finished before the first kill (seed \(seed))")

            // A graceful stop of the last one: it closes the journal.
            ingest.signal(SIGTERM)
            #expect(await ingest.waitForExit(timeout: 15) == 0, "\(ingest.tail())")

            // Each incarnation opened the journal cleanly, and its head never went back.
            var heads: [Int] = []
            for child in incarnations where child.name.hasPrefix("ingest") {
                #expect(!child.stderr.contains { $0.text.contains("level=error") }, "\(child.tail())")
                guard let opened = child.stderr.first(where: { $0.text.contains("msg=\"journal opened\"") }),
                    let head = opened.text.split(separator: " ").first(where: { $0.hasPrefix("head=") })
                        .flatMap({ Int($0.dropFirst(5)) })
                else {
                    Issue.record("\(child.name) did not report opening the journal\n\(child.tail())")
                    continue
                }
                heads.append(head)
            }
            #expect(heads == heads.sorted(), "positions went back after a kill: heads \(heads) (seed \(seed))")

            // The journal, read by a program of its own (Python's sqlite3 and msgpack), against the gateway's acks.
            let acks = try temporaryFile(gateway.stdout.map(\.text).joined(separator: "\n") + "\n", suffix: ".acks")
            defer { try? FileManager.default.removeItem(at: acks) }
            let check = try Child.python(
                "journal_check.py",
                [
                    "--journal", dataDirectory + "/journal.sqlite",
                    "--records", records.path, "--acks", acks.path,
                ])
            incarnations.append(check)
            let checked = await check.waitForExit(timeout: 60)
            let result = try #require(check.jsonLines.last?.value as? [String: Any], "\(check.tail())")
            print("JournalDurabilityTests: \(jsonLine(result))")
            #expect(checked == 0, "\(check.tail()) (seed \(seed))")
            #expect(result.string("integrity") == "ok", "\(result) (seed \(seed))")
            #expect(result.number("missingCount") == 0, "acknowledged records missing: \(result) (seed \(seed))")
            #expect(result.number("acknowledged") == 20_000, "\(result)")
            #expect(result.bool("positionsIncreasing") == true && result.bool("shardsMatch") == true, "\(result)")
        }
    }
}
