import Foundation
import RoadSaveTestKit
import Testing

/// What the bad-input matrices share (plaintext: `BadInputMatrixTests`, with keys: `BadInputMatrixCurveTests`): run
/// a matrix script against running services, check every row and its probe, check that no service died, and check
/// the journal against what was acknowledged.
enum BadInputMatrix {
    /// Runs `script` (a Support/*.py matrix, which prints one JSON line per row and a final `done` line) with
    /// `arguments`; every row must meet its expectation and every probe after it must succeed. Returns the rows.
    static func run(
        _ script: String, _ arguments: [String], services: Services, minimumCases: Int,
        timeout: Double = 600
    ) async throws -> [[String: Any]] {
        let seed = TestSeed.make()
        print("\(script): seed \(seed) (ROADSAVE_TEST_SEED=\(seed) repeats the random rows)")
        let matrix = try Child.python(script, arguments + ["--seed", String(seed)], name: script)
        defer { matrix.kill() }
        let status = await matrix.waitForExit(timeout: timeout)
        let rows = matrix.jsonLines.compactMap { $0.value as? [String: Any] }
        for row in rows where row["case"] != nil {
            print(
                "\(script): \(row.string("case") ?? "?"): ok=\(row.bool("ok") ?? false) "
                    + "probe=\(row["probe"] ?? "?") observed=\(String(describing: row["observed"] ?? "?").prefix(200))")
            #expect(row.bool("ok") == true, "\(row)")
            let probe = row["probe"] as? [String: Any] ?? [:]
            #expect(
                probe.number("gateway") == 2 && probe.bool("control") == true && probe.bool("catchUp") == true,
                "services did not answer after \(row.string("case") ?? "?"): \(probe)\n\(services.logs())")
        }
        let done = rows.last { $0["done"] != nil }
        #expect(done?.number("cases") ?? 0 >= Double(minimumCases), "\(matrix.tail())")
        #expect(status == 0, "\(matrix.tail())\n\(services.logs())")
        for child in [services.ingest, services.detect, services.notify].compactMap({ $0 }) {
            #expect(child.isRunning, "\(child.name) died\n\(child.tail())")
        }
        return rows
    }

    /// Rows whose probe batch (2 records, batchID `probe-<case>`) was acknowledged.
    static func acknowledgedProbes(_ rows: [[String: Any]]) -> Int {
        rows.filter { ($0["probe"] as? [String: Any])?.number("gateway") == 2 }.count
    }

    /// The journal holds 2 records for each of `probes` acknowledged probe batches, and of every other batch exactly
    /// the records in `others` (batchID: records), nothing else: an attack stored nothing, a replay no second copy.
    static func checkJournal(_ services: Services, probes: Int, others: [String: Int] = [:]) async {
        let journal = services.dataDirectory("ingest") + "/journal.sqlite"
        let stored =
            Int(
                await OverloadTests.query(
                    journal, "SELECT coalesce(sum(records), 0) FROM chunks WHERE batch LIKE 'probe-%'") ?? "") ?? -1
        #expect(stored == 2 * probes, "journal holds \(stored) probe records, \(2 * probes) were acknowledged")
        let rows = await lines(
            journal, "SELECT batch || ' ' || sum(records) FROM chunks WHERE batch NOT LIKE 'probe-%' GROUP BY batch")
        var found: [String: Int] = [:]
        for row in rows {
            let parts = row.split(separator: " ")
            if parts.count == 2 { found[String(parts[0])] = Int(parts[1]) }
        }
        #expect(found == others, "batches other than the probes in the journal: \(found), expected \(others)")
    }

    /// Every line `sqlite3` prints for `sql`.
    static func lines(_ database: String, _ sql: String) async -> [String] {
        guard
            let child = try? Child(
                name: "sqlite3", executable: URL(fileURLWithPath: "/usr/bin/sqlite3"),
                arguments: [database, sql])
        else { return [] }
        _ = await child.waitForExit(timeout: 10)
        return child.stdout.map(\.text)
    }
}
