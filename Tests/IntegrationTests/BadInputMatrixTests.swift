import Foundation
import RoadSaveTestKit
import Testing

/// The bad-input matrix (issue 7, point 5) against the three services as processes: oversized frames (over
/// ZMQ_MAXMSGSIZE), a lying frame length, bytes that are not ZMTP, wrong frame counts, malformed and deeply nested
/// bodies, random bytes, floods of connections, on the gateway, control and catch-up sockets (Support/bad_input.py).
/// After each attack the services must still answer (a batch acknowledged, a command and a catch-up answered), and at
/// the end every batch ever acknowledged must be in the journal and no service may have died.
///
/// The rows with keys (wrong keys, no keys, replayed CURVE handshakes) are `BadInputMatrixCurveTests`.
@Suite("Bad-input matrix", .serialized)
struct BadInputMatrixTests {
    @Test func everyServiceSurvivesEveryRowAndLosesNothingAcknowledged() async throws {
        try await withPipelineSlot {
            // Ingest's /metrics lets the lying-length row send its header once ingest has taken the accept (whose
            // peer address its log line names), not before: on a loaded machine the drop could come first.
            let metrics = Ports.reserve(1)[0]
            let services = try await Services.start(
                Services.Options(ingestArguments: ["--metrics-endpoint", "127.0.0.1:\(metrics)"]))
            defer { services.kill() }
            let endpoints = [
                "--gateway", services.gatewayEndpoint, "--control", services.controlEndpoint,
                "--catch-up", services.catchUpEndpoint,
            ]
            // Acknowledged before the attacks: must survive them.
            let before = try Child.python(
                "bad_input.py", endpoints + ["--case", "gateway-one-frame"], name: "baseline")
            #expect(await before.waitForExit(timeout: 60) == 0, "\(before.tail())\n\(services.logs())")

            let rows = try await BadInputMatrix.run(
                "bad_input.py", endpoints + ["--ingest-metrics", "http://127.0.0.1:\(metrics)"], services: services,
                minimumCases: 30)
            // The baseline's probe too.
            await BadInputMatrix.checkJournal(services, probes: BadInputMatrix.acknowledgedProbes(rows) + 1)

            // The socket monitor names the disconnect libzmq makes silently for a frame over ZMQ_MAXMSGSIZE: the
            // lying-length row's connection (an 8 GiB frame header), by its port.
            let ingest = try #require(services.ingest)
            let lying = rows.first { $0.string("case") == "gateway-lying-length-header" }?["observed"] as? [String: Any]
            let port = try #require(lying?.number("port").map { Int($0) }, "\(rows)")
            // The monitor's event is read on ingest's loop when it comes: waited for, not looked for at once.
            func line() -> Child.Line? {
                ingest.stderr.first {
                    $0.text.contains("msg=\"connection closed\"") && $0.text.contains("peer=127.0.0.1:\(port) ")
                }
            }
            _ = await eventually(timeout: 20) { line() != nil }
            let line = line()
            #expect(
                line.map {
                    $0.text.contains("socket=gateway")
                        && $0.text.contains("over the limit of 67108864 bytes (ZMQ_MAXMSGSIZE)")
                } == true,
                "no log line names the disconnect of port \(port)\n\(ingest.tail(60))")
        }
    }
}
