import Foundation
import RoadSaveTestKit
import Testing

/// Issue 7, per-gateway-key rate limits at sensor-ingest, with real processes: one gateway key floods and gets `rate`
/// refusals with `retryAfterMs` while another key is still acknowledged; afterwards every acknowledged record is in
/// the journal, nothing refused is, and the service still answers. `roadsave send` against a low limit delivers
/// everything, only more slowly.
@Suite("RateLimits", .serialized)
struct RateLimitTests {
    /// A series of batches through `curve_gateway.py --batches`: its per-batch lines and the file of its records.
    struct Series {
        let child: Child
        let records: URL
        let started: Double

        init(
            keys: KeyFolder, endpoint: String, key: String, user: String, batches: Int, records: Int,
            pause: Double = 0
        ) throws {
            self.records = keys.folder.appendingPathComponent("\(user).ndjson")
            started = now()
            child = try Child.python(
                "curve_gateway.py",
                [
                    "--endpoint", endpoint, "--server-key", keys.serverPublic, "--key", key, "--app", "app-1",
                    "--batches", String(batches), "--records", String(records), "--user", user, "--batch-id", user,
                    "--records-out", self.records.path, "--pause", String(pause), "--timeout", "5",
                ], name: user)
        }

        var acks: [[String: Any]] {
            child.jsonLines.compactMap { ($0.value as? [String: Any])?["ack"] as? [String: Any] }
        }
        var summary: [String: Any]? {
            child.jsonLines.compactMap { $0.value as? [String: Any] }.first { $0["done"] != nil }
        }

        /// `journal_check.py` over this series: the gateway's lines are its acknowledgements.
        func check(_ data: URL) async throws -> [String: Any] {
            let acks = try temporaryFile(child.stdout.map(\.text).joined(separator: "\n") + "\n", suffix: ".jsonl")
            defer { try? FileManager.default.removeItem(at: acks) }
            let checker = try Child.python(
                "journal_check.py",
                [
                    "--journal", data.appendingPathComponent("journal.sqlite").path,
                    "--records", records.path, "--acks", acks.path,
                ])
            defer { checker.kill() }
            _ = await checker.waitForExit(timeout: 30)
            return try #require(checker.jsonLines.last?.value as? [String: Any], "\(checker.tail())")
        }
    }

    @Test func aFloodingKeyIsRefusedWithRetryAfterWhileAnotherKeyIsServedAndNothingAcknowledgedIsLost() async throws {
        let keys = try await SecurityTests.keys()
        defer { keys.remove() }
        // A second gateway key, listed too.
        let second = try await KeyFolder.keygen([
            "gw-2", "--directory", keys.folder.path, "--role", "gateway",
            "--apps", "app-1",
        ])
        let line = try #require(second.first { $0.hasPrefix("allow-list line: ") }).dropFirst("allow-list line: ".count)
        let handle = try #require(FileHandle(forWritingAtPath: keys.allowList))
        handle.seekToEndOfFile()
        handle.write(Data((line + "\n").utf8))
        handle.closeFile()
        let calmKey = keys.folder.appendingPathComponent("gw-2.key").path

        let (ingest, endpoint, data) = try await SecurityTests.startIngest(
            keys,
            extra: [
                "--rate-limit", "200",
                "--rate-burst", "200",
            ])
        defer { ingest.kill() }
        #expect(
            ingest.stderr.contains { $0.text.contains("msg=listening") && $0.text.contains("200/s burst 200") },
            "\(ingest.tail())")

        // Batches of a whole second's allowance, one after the other: each after the burst is refused unless its
        // round trip took a second (batches of 50 needed only a quarter of one, which a busy machine can take).
        let flood = try Series(
            keys: keys, endpoint: endpoint, key: keys.gatewaySecret, user: "flood-user",
            batches: 30, records: 200)
        let calm = try Series(
            keys: keys, endpoint: endpoint, key: calmKey, user: "calm-user", batches: 5, records: 20,
            pause: 0.3)
        defer {
            flood.child.kill()
            calm.child.kill()
        }
        #expect(await flood.child.waitForExit(timeout: 60) == 0, "\(flood.child.tail())")
        let floodSeconds = now() - flood.started
        #expect(await calm.child.waitForExit(timeout: 60) == 0, "\(calm.child.tail())")

        // The flood: refused whole, with the field, the key, the limit and when to come back.
        let floodSummary = try #require(flood.summary, "\(flood.child.tail())")
        let floodAccepted = Int(floodSummary.number("accepted") ?? -1)
        #expect((floodSummary.number("rateRefused") ?? 0) > 0, "\(floodSummary)")
        #expect(floodAccepted >= 200, "the burst goes through: \(floodSummary)")
        #expect(
            Double(floodAccepted) <= 200 + 200 * floodSeconds + 50,
            "at most the burst plus 200 records a second (\(floodSeconds) s): \(floodSummary)")
        let refusal = try #require(
            flood.acks.first { ($0["rejected"] as? [[String: Any]])?.first?.string("field") == "rate" })
        let rejection = try #require((refusal["rejected"] as? [[String: Any]])?.first)
        #expect(refusal.number("accepted") == 0 && rejection.number("index") == -1)
        #expect(
            (refusal.number("retryAfterMs") ?? 0) > 0 && (refusal.number("retryAfterMs") ?? 0) <= 1000, "\(refusal)")
        let reason = rejection.string("reason") ?? ""
        #expect(
            reason.contains("gateway key \"gw-1\"") && reason.contains("200 records/s")
                && reason.contains("retryAfterMs"),
            "\(reason)")
        #expect(flood.acks.count == 30, "every batch answered: \(flood.child.tail())")

        // The other key, at its own pace, was never refused.
        let calmSummary = try #require(calm.summary, "\(calm.child.tail())")
        #expect(calmSummary.number("accepted") == 100 && calmSummary.number("rateRefused") == 0, "\(calmSummary)")

        // The journal: everything acknowledged, nothing refused.
        let floodCheck = try await flood.check(data)
        #expect(floodCheck.number("missingCount") == 0 && floodCheck.string("integrity") == "ok", "\(floodCheck)")
        #expect(floodCheck.number("acknowledged") == Double(floodAccepted))
        #expect(floodCheck.number("records") == Double(floodAccepted + 100), "stored = acknowledged: \(floodCheck)")
        #expect(floodCheck.number("duplicates") == 0)
        let calmCheck = try await calm.check(data)
        #expect(calmCheck.number("missingCount") == 0 && calmCheck.number("acknowledged") == 100, "\(calmCheck)")

        // The service still answers, the flooding key too once it has waited.
        try await Task.sleep(for: .seconds(1.2))
        let after = try await SecurityTests.send(
            apps: ["app-1"], to: endpoint, keys: keys, clientKey: keys.gatewaySecret)
        #expect(after?.number("accepted") == 1, "\(String(describing: after))")
        #expect(ingest.isRunning)
        #expect(
            ingest.stderr.contains { $0.text.contains("batches refused for the gateway rate limit") },
            "\(ingest.tail())")
    }

    @Test func sendAgainstALowLimitStillDeliversEverythingJustMoreSlowly() async throws {
        let ports = Ports.reserve(2)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "roadsave-rate-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: folder) }
        let data = folder.appendingPathComponent("data")
        let endpoint = "tcp://127.0.0.1:\(ports[0])"
        // Plaintext on loopback: every gateway shares one limit of 400 records a second.
        let ingest = try Child(
            name: "ingest", executable: Executables.named("roadsave-ingest"),
            arguments: [
                "--applications", "app-1", "--data-dir", data.path, "--gateway-endpoint", endpoint,
                "--records-endpoint", "tcp://127.0.0.1:\(ports[1])", "--rate-limit", "400",
            ])
        defer { ingest.kill() }
        let listening = await eventually(timeout: 15) { ingest.stderr.contains { $0.text.contains("msg=listening") } }
        try #require(listening, "\(ingest.tail())")

        let t = Date().timeIntervalSince1970 - 600
        let records = (0..<1600).map { seq in
            "{\"kind\":\"location\",\"app\":\"app-1\",\"user\":\"send-user\",\"seq\":\(seq),\"t\":\(t + Double(seq) * 0.01),"
                + "\"lat\":-33.9249,\"lon\":18.4241,\"speed\":1.5,\"course\":90,\"hacc\":5}"
        }
        let file = folder.appendingPathComponent("records.ndjson")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try (records.joined(separator: "\n") + "\n").write(to: file, atomically: true, encoding: .utf8)

        let started = now()
        let send = try await SecurityClientTests.roadsave(
            [
                "send", file.path, "--endpoint", endpoint, "--batch", "200",
                "--attempts", "1",
            ], timeout: 60)
        let seconds = now() - started
        #expect(send.status == 0, "\(send.child.tail())")
        #expect(
            send.child.stdout.contains { $0.text.contains("sent 1600, accepted 1600, rejected 0, batches 8") },
            "\(send.child.tail())")
        // 400 at once, then 1200 at 400 a second: at least 3 s (with one attempt, a refusal was no failed attempt).
        #expect(seconds >= 2.8, "\(seconds) s")
        #expect(send.child.stderr.contains { $0.text.contains("limits this gateway's rate") }, "\(send.child.tail())")
        #expect(!send.child.stderr.contains { $0.text.contains("rejected by sensor-ingest") }, "\(send.child.tail())")

        let acks = try temporaryFile(
            #"{"batch": "all", "first": 0, "count": 1600, "ack": {"accepted": 1600, "rejected": []}}"# + "\n",
            suffix: ".jsonl")
        defer { try? FileManager.default.removeItem(at: acks) }
        let checker = try Child.python(
            "journal_check.py",
            [
                "--journal", data.appendingPathComponent("journal.sqlite").path,
                "--records", file.path, "--acks", acks.path,
            ])
        defer { checker.kill() }
        _ = await checker.waitForExit(timeout: 30)
        let check = try #require(checker.jsonLines.last?.value as? [String: Any], "\(checker.tail())")
        #expect(
            check.number("missingCount") == 0 && check.number("records") == 1600 && check.number("duplicates") == 0,
            "\(check)")
    }
}
