import Foundation
import RoadSaveTestKit
import Testing

/// `roadsave tail` on its own: options, timeout and signals.
@Suite struct TailCommandTests {
    @Test func timeoutEndsItWithStatusZero() async throws {
        let port = Ports.reserveRange(1)
        let started = Date()
        let result = try await Roadsave.run(["tail", "--endpoint", Ports.tcp(port), "--timeout", "0.5"], limit: 20)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.isEmpty)
        let elapsed = Date().timeIntervalSince(started)
        #expect(elapsed >= 0.5 && elapsed < 10, "took \(elapsed) s")
    }

    @Test(arguments: [SIGTERM, SIGINT])
    func signalEndsItCleanly(signal: Int32) async throws {
        let port = Ports.reserveRange(1)
        let tail = try RunningProcess(["tail", "--endpoint", Ports.tcp(port), "--log-level", "info"])
        defer { tail.kill() }
        #expect(await waitForError(tail, containing: "msg=subscribed", timeout: 10))
        tail.signal(signal)
        let status = await tail.waitForExit(timeout: 5)
        #expect(status == 0, "\(tail.stderr)")
        #expect(!tail.wasSignalled)
    }

    @Test func reportsBadOptions() async throws {
        for (arguments, mention) in [
            (["tail", "--event", "tripDidExplode"], "--event: unknown event \"tripDidExplode\""),
            (["tail", "--event"], "--event needs a value"),
            (["tail", "--topic", "crash", "--event", "crashDetected"], "--topic"),
            (["tail", "--topic", "crash", "--app", "x"], "--topic"),
            (["tail", "--count", "0"], "--count"),
            (["tail", "--timeout", "never"], "--timeout"),
            (["tail", "--endpoint", "tcp://127.0.0.1"], "--endpoint"),
            (["tail", "extra"], "unexpected argument"),
        ] {
            let result = try await Roadsave.run(arguments)
            #expect(result.status == 2, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains(mention), "\(arguments): \(result.stderr)")
        }
        let help = try await Roadsave.run(["tail", "--help"])
        #expect(help.status == 0)
        #expect(help.stdout.hasPrefix("Usage: roadsave tail"))
    }
}
