import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The fake detection outbox feed (`Tests/IntegrationTests/Support/event_feed.py`, pyzmq: not the project's code)
/// that the notifier reads in the tests that start it: the events of a list, at a rate, all at once, or one at each
/// `resume()`. One for the integration and the client library's tests.
public final class EventFeed {
    static let script = TestPaths.target("IntegrationTests").appendingPathComponent("Support/event_feed.py")
    public let child: ChildProcess
    public let port: Int
    private let file: URL

    /// `paused`: nothing is served until `resume()`; `step`: one more event at each `resume()`.
    public init(_ events: [[String: Any]], rate: Double = 0, paused: Bool = false, step: Bool = false) async throws {
        let data = try JSONSerialization.data(withJSONObject: events)
        file = try temporaryFile(String(decoding: data, as: UTF8.self), suffix: ".events.json")
        let child = try ChildProcess.python(
            Self.script,
            ["--events", file.path, "--rate", String(rate)] + (paused ? ["--paused"] : []) + (step ? ["--step"] : []),
            name: "event feed")
        self.child = child
        guard await eventually(timeout: 10, { !child.stdout.isEmpty || !child.isRunning }),
            let first = child.stdout.first, let port = Int(first.text)
        else {
            child.kill()
            throw TestFailure("the event feed did not start\n\(child.tail())")
        }
        self.port = port
    }

    public var endpoint: String { Ports.tcp(port) }

    /// Starts the events of a paused feed (at its rate from now); releases the next event of a stepped one.
    public func resume() { child.signal(SIGUSR1) }

    /// The last position the notifier acknowledged (0 before any).
    public var acknowledged: Int {
        child.jsonLines.compactMap { (($0.value as? [String: Any])?["ack"] as? NSNumber)?.intValue }.last ?? 0
    }

    public func kill() {
        child.kill()
        try? FileManager.default.removeItem(at: file)
    }
}
