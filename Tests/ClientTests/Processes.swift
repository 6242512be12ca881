import Foundation
import RoadSaveClient
import RoadSaveTestKit

#if canImport(Glibc)
    import Glibc
#endif

// The services as processes for the library's tests: the notifier fed by the fake detection feed of the integration
// tests (`event_feed.py`, pyzmq: not the project's code), sensor-ingest alone, and `roadsave up` for the example.

typealias Child = ChildProcess

/// `roadsave-notify` on a data directory and ports of its own, reading `feed`; killed and started again at will.
final class Notifier {
    let data = FileManager.default.temporaryDirectory.appendingPathComponent("roadsave-client-\(UUID().uuidString)")
    let publishPort: Int
    let catchUpPort: Int
    let arguments: [String]
    private(set) var runs: [Child] = []

    init(feed: EventFeed, extra: [String] = []) {
        let ports = Ports.reserve(2)
        (publishPort, catchUpPort) = (ports[0], ports[1])
        arguments =
            [
                "--data-dir", data.path, "--events-endpoint", feed.endpoint,
                "--publish-endpoint", Ports.tcp(publishPort), "--catch-up-endpoint", Ports.tcp(catchUpPort),
                "--heartbeat", "0.2",
            ] + extra
    }

    var publishEndpoint: String { Ports.tcp(publishPort) }
    var catchUpEndpoint: String { Ports.tcp(catchUpPort) }
    var current: Child? { runs.last }

    /// Starts a run and waits until both endpoints listen.
    func start() async throws {
        let child = try Child(
            name: "notify#\(runs.count + 1)", executable: Executables.named("roadsave-notify"), arguments: arguments)
        runs.append(child)
        let up = await eventually(timeout: 20) {
            !child.isRunning || [publishPort, catchUpPort].allSatisfy(Ports.isListening)
        }
        guard up, child.isRunning else { throw TestFailure("the notifier did not start listening\n\(logs())") }
    }

    /// SIGHUP, and the notifier's word that it re-read its allow-list (the `count`-th time).
    func reload(count: Int) async throws {
        let current = try requireCurrent()
        current.signal(SIGHUP)
        let reloaded = await eventually(timeout: 20) {
            current.stderr.filter { $0.text.contains("allow-list re-read") }.count >= count
        }
        guard reloaded else { throw TestFailure("the notifier did not re-read its allow-list\n\(logs())") }
    }

    func requireCurrent() throws -> Child {
        guard let current else { throw TestFailure("the notifier is not running") }
        return current
    }

    func stop() {
        for child in runs { child.kill() }
        try? FileManager.default.removeItem(at: data)
    }

    func logs() -> String { runs.map { $0.tail(30) }.joined(separator: "\n") }
}

/// `roadsave-ingest` on ports and a data directory of its own; killed and started again at will.
final class Ingest {
    let data = FileManager.default.temporaryDirectory.appendingPathComponent("roadsave-client-\(UUID().uuidString)")
    let gatewayPort: Int
    let arguments: [String]
    private(set) var runs: [Child] = []

    init(applications: String = "app-1", extra: [String] = []) {
        let ports = Ports.reserve(2)
        gatewayPort = ports[0]
        arguments =
            [
                "--applications", applications, "--gateway-endpoint", Ports.tcp(ports[0]),
                "--records-endpoint", Ports.tcp(ports[1]), "--data-dir", data.path,
            ] + extra
    }

    var endpoint: String { Ports.tcp(gatewayPort) }
    var current: Child? { runs.last }
    var journal: String { data.appendingPathComponent("journal.sqlite").path }

    func start() async throws {
        let child = try Child(
            name: "ingest#\(runs.count + 1)", executable: Executables.named("roadsave-ingest"), arguments: arguments)
        runs.append(child)
        let up = await eventually(timeout: 20) {
            !child.isRunning || child.stderr.contains { $0.text.contains("msg=listening") }
        }
        guard up, child.isRunning else { throw TestFailure("ingest did not start listening\n\(logs())") }
    }

    func stop() {
        for child in runs { child.kill() }
        try? FileManager.default.removeItem(at: data)
    }

    func logs() -> String { runs.map { $0.tail(30) }.joined(separator: "\n") }
}

extension ChildProcess {
    /// Python code run by the `python3` on the PATH, with `arguments` as its `sys.argv[1:]`.
    static func python(code: String, _ arguments: [String], name: String = "python") throws -> ChildProcess {
        try ChildProcess(name: name, executable: Executables.env, arguments: ["python3", "-c", code] + arguments)
    }
}
