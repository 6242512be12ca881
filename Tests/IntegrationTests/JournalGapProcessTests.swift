import Foundation
import RoadSaveTestKit
import Testing

/// Losing a node: a detection shard moved to another node starts with an empty data directory and reads every
/// journal from its start. When ingest's retention has already deleted records of its shard, the shard must say so
/// loudly (an error line, a metric, /readyz not ready naming the gap) and go on with what remains, until an operator
/// acknowledges the gap with `roadsave ctl acknowledgeJournalGaps`.
@Suite("Journal gaps")
struct JournalGapProcessTests {
    @Test func aShardRebuiltAfterRetentionDeletedItsRecordsSaysSoUntilAcknowledged() async throws {
        try await withPipelineSlot {
            let metricsPorts = Ports.reserve(2)
            let (ingestMetrics, detectMetrics) = (metricsPorts[0], metricsPorts[1])
            var options = Services.Options()
            // Chunks go as soon as shard 0's detection has checkpointed past them (shard 1 has no reader: kept).
            options.ingestArguments = [
                "--shards", "2", "--retention-age", "0",
                "--metrics-endpoint", "127.0.0.1:\(ingestMetrics)",
            ]
            options.detectArguments = ["--shard", "0/2", "--metrics-endpoint", "127.0.0.1:\(detectMetrics)"]
            let services = try await Services.start(options)
            defer { services.kill() }

            // Eight devices (of both shards), 40 records each.
            let fleet = try temporaryFile(JournalDurabilityTests.fleet(devices: 8, each: 40), suffix: ".ndjson")
            defer { try? FileManager.default.removeItem(at: fleet) }
            let sent = try await Gateway.send(fleet, to: services.gatewayEndpoint, batchSize: 20)
            #expect(sent.status == 0, "\(sent.log)")

            // The first detection reads and checkpoints shard 0; ingest's retention (every 5 s) then deletes it.
            var deletedThrough = 0.0
            let deleted = await eventually(timeout: 60, interval: 0.2) {
                deletedThrough =
                    (try? Scrape.metrics(ingestMetrics))?
                    .value("roadsave_ingest_journal_deleted_through_position", ["shard": "0"]) ?? 0
                return deletedThrough > 0
            }
            try #require(deleted, "retention deleted nothing of shard 0\n\(services.logs())")
            let first = try #require(services.detect)
            #expect(
                !first.stderr.contains { $0.text.contains("journal records deleted") },
                "the shard that read everything found no gap\n\(first.tail())")

            // The node is lost: the shard starts elsewhere on an empty volume, and reads the journal from 0.
            first.signal(SIGTERM)
            #expect(await first.waitForExit(timeout: 30) == 0, "\(first.tail())")
            try services.startDetect(dataDirectory: "detect-moved")
            let moved = try #require(services.detect)

            var readiness = (status: 0, body: "")
            let notReady = await eventually(timeout: 30, interval: 0.2) {
                readiness = (try? Scrape.page(detectMetrics, "/readyz")) ?? (0, "")
                return readiness.status == 503 && readiness.body.contains("deleted records after position 0 through")
            }
            #expect(notReady, "readyz: \(readiness)\n\(moved.tail())")
            #expect(
                readiness.body.contains("shard 0/2") && readiness.body.contains("acknowledgeJournalGaps"),
                "\(readiness.body)")
            let scrape = try Scrape.metrics(detectMetrics)
            #expect(scrape.value("roadsave_detection_journal_gaps_total") == 1)
            #expect(scrape.value("roadsave_detection_journal_gaps_unacknowledged") == 1)
            #expect(
                scrape.families["roadsave_detection_journal_gaps"] == "counter",
                "prometheus_client names a counter without _total")
            // One error line, naming the journal, the endpoint, the shard and the positions, and what it means.
            let lines = moved.stderr.filter { $0.text.contains("journal records deleted by retention") }
            #expect(lines.count == 1, "\(moved.tail())")
            let line = lines.first?.text ?? ""
            for part in [
                "level=error", "journal=", "endpoint=tcp://127.0.0.1:\(services.recordsPort)", "shard=0/2",
                "position=0", "deletedThrough=\(Int(deletedThrough))", "trips and crashes from before",
            ] {
                #expect(line.contains(part), "\(part) in \(line)")
            }

            // The gap blocks nothing: records sent now are read while it is not acknowledged.
            let readBefore = scrape.value("roadsave_detection_records_read_total")
            let later = try temporaryFile(
                JournalDurabilityTests.fleet(devices: 8, each: 5)
                    .replacingOccurrences(of: "device-", with: "later-"), suffix: ".ndjson")
            defer { try? FileManager.default.removeItem(at: later) }
            #expect(try await Gateway.send(later, to: services.gatewayEndpoint, batchSize: 20).status == 0)
            let reading = await eventually(timeout: 30, interval: 0.2) {
                ((try? Scrape.metrics(detectMetrics))?.value("roadsave_detection_records_read_total") ?? 0) > readBefore
            }
            #expect(reading, "\(moved.tail())")
            #expect(try Scrape.page(detectMetrics, "/readyz").status == 503, "still not ready: not acknowledged")

            // The operator acknowledges: ready again, the gauge at 0, the counter still 1.
            let ctl = try Child(
                name: "ctl", executable: Executables.named("roadsave"),
                arguments: ["ctl", "acknowledgeJournalGaps", "--endpoint", services.controlEndpoint])
            defer { ctl.kill() }
            #expect(await ctl.waitForExit(timeout: 30) == 0, "\(ctl.tail())")
            let reply = ctl.jsonLines.first?.value as? [String: Any] ?? [:]
            #expect(reply.bool("ok") == true && reply.number("acknowledged") == 1, "\(ctl.tail())")
            let ready = await eventually(timeout: 30, interval: 0.2) {
                readiness = (try? Scrape.page(detectMetrics, "/readyz")) ?? (0, "")
                return readiness.status == 200
            }
            #expect(ready && readiness.body == "ready\n", "readyz: \(readiness)\n\(moved.tail())")
            let after = try Scrape.metrics(detectMetrics)
            #expect(after.value("roadsave_detection_journal_gaps_unacknowledged") == 0)
            #expect(after.value("roadsave_detection_journal_gaps_total") == 1)

            // A restart on the moved shard's store says nothing new: the gap is known and acknowledged.
            moved.signal(SIGTERM)
            #expect(await moved.waitForExit(timeout: 30) == 0, "\(moved.tail())")
            try services.startDetect(dataDirectory: "detect-moved")
            let restarted = try #require(services.detect)
            let readyAgain = await eventually(timeout: 30, interval: 0.2) {
                (try? Scrape.page(detectMetrics, "/readyz"))?.status == 200
            }
            #expect(readyAgain, "\(restarted.tail())")
            #expect(!restarted.stderr.contains { $0.text.contains("journal records deleted") }, "\(restarted.tail())")
        }
    }
}
