import Foundation
import RoadSaveTestKit
import Testing

/// Overload (issue 6, point 7): a gateway sending as fast as acknowledgements allow. Nothing acknowledged may be lost,
/// and no service's memory may grow with the stream: what detection cannot take at once waits in the journal on disk.
@Suite("Overload", .serialized)
struct OverloadTests {
    /// Resident memory of a process, in MiB (from /proc).
    static func residentMiB(_ pid: Int32) -> Double? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "")
        else { return nil }
        return kilobytes / 1024
    }

    /// One value of a `sqlite3` query.
    static func query(_ database: String, _ sql: String) async -> String? {
        guard
            let child = try? Child(
                name: "sqlite3", executable: URL(fileURLWithPath: "/usr/bin/sqlite3"),
                arguments: [database, sql])
        else { return nil }
        _ = await child.waitForExit(timeout: 10)
        return child.stdout.first?.text
    }

    @Test func floodingKeepsEveryAcknowledgedRecordAndMemoryFlat() async throws {
        try await withPipelineSlot {
            let services = try await Services.start()
            defer { services.kill() }
            let seconds = Double(ProcessInfo.processInfo.environment["ROADSAVE_OVERLOAD_SECONDS"] ?? "") ?? 20
            let flood = try Child.python(
                "flood_gateway.py",
                [
                    "--endpoint", services.gatewayEndpoint, "--devices", "500",
                    "--seconds", String(seconds), "--batch", "1000", "--window", "16",
                ])
            defer { flood.kill() }
            var samples: [(time: Double, memory: [String: Double])] = []
            let start = now()
            while flood.isRunning, now() - start < seconds + 60 {
                var memory: [String: Double] = [:]
                for child in [services.ingest, services.detect, services.notify].compactMap({ $0 }) {
                    memory[child.name] = Self.residentMiB(child.pid)
                }
                samples.append((now() - start, memory))
                try await Task.sleep(nanoseconds: 500_000_000)
            }
            #expect(await flood.waitForExit(timeout: 30) == 0, "\(flood.tail())\n\(services.logs())")
            let summary = try #require(flood.jsonLines.last?.value as? [String: Any], "\(flood.tail())")
            let acknowledged = Int(summary.number("acknowledged") ?? 0)
            #expect(acknowledged > 0 && summary.number("refused") == 0 && summary.number("rejected") == 0, "\(summary)")

            // Everything acknowledged is in the journal.
            let journal = services.dataDirectory("ingest") + "/journal.sqlite"
            let stored = Int(await Self.query(journal, "SELECT coalesce(sum(records), 0) FROM chunks") ?? "") ?? -1
            #expect(stored == acknowledged, "journal holds \(stored) records, \(acknowledged) were acknowledged")

            // Detection reads it all, at its own pace, and checkpoints past it.
            let head = await Self.query(journal, "SELECT max(position) FROM chunks") ?? "?"
            let detection = services.dataDirectory("detect") + "/detection.sqlite"
            let caughtUp = await eventually(timeout: 120, interval: 0.5) {
                // The file read with the sqlite3 shell; its exit waited for (with its output read), not slept past.
                let child = try? Child(
                    name: "sqlite3", executable: URL(fileURLWithPath: "/usr/bin/sqlite3"),
                    arguments: [detection, "SELECT max(position) FROM positions"])
                defer { child?.kill() }
                _ = await child?.waitForExit(timeout: 30)
                return child?.stdout.first?.text == head
            }
            let caughtUpAfter = now() - start - seconds
            #expect(caughtUp, "detection did not read the journal to its head \(head)\n\(services.logs())")

            // Memory: printed, and flat — the last third of the flood holds no more than the first third.
            func peak(_ name: String, from: Double, to: Double) -> Double {
                samples.filter { $0.time >= from && $0.time < to }.compactMap { $0.memory[name] }.max() ?? 0
            }
            print(
                String(
                    format:
                        "overload: %d records acknowledged in %.1f s (%.0f a second); detection caught up %.1f s after the flood",
                    acknowledged, summary.number("seconds") ?? 0, summary.number("rate") ?? 0, caughtUpAfter))
            for name in ["ingest", "detect", "notify"] {
                let early = peak(name, from: seconds / 3, to: 2 * seconds / 3)
                let late = peak(name, from: 2 * seconds / 3, to: seconds + 60)
                print(
                    String(
                        format: "overload: %@ resident memory: %.0f MiB in the middle third, %.0f MiB at most after",
                        name, early, late))
                #expect(late < 512, "\(name) grew to \(late) MiB")
                #expect(late <= early * 1.5 + 48, "\(name)'s memory grew with the stream: \(early) → \(late) MiB")
            }
        }
    }
}
