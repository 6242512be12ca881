import Foundation
import RoadSaveTestKit

// Wrappers around the Python clients of `Support/` — programs that are not the project's code, speaking the wire
// protocols of PROTOCOL §7 with pyzmq and msgpack as an outside gateway, subscriber or operator would — and around
// the stub platform of the CLI tests.

/// What `gateway.py` reported: one line per batch, and its exit status.
struct GatewayRun {
    struct Batch {
        var first: Int
        var count: Int
        var attempts: Int
        var ack: [String: Any]?

        var accepted: Int? { ack?.number("accepted").map { Int($0) } }
        /// (index, field, reason) of every rejected record.
        var rejected: [(index: Int, field: String, reason: String)] {
            ((ack?["rejected"] as? [[String: Any]]) ?? []).map {
                (Int($0.number("index") ?? -999), $0.string("field") ?? "?", $0.string("reason") ?? "")
            }
        }
    }

    var status: Int32?
    var batches: [Batch]
    /// When the last acknowledgement was printed (stamped by the thread reading the gateway's output, so a busy
    /// test runner does not move it).
    var lastAcknowledgedAt: Double?
    var log: String
}

enum Gateway {
    /// Sends an NDJSON file to sensor-ingest with `gateway.py` and waits for every acknowledgement.
    /// With `raw`, the file's bytes are sent unread as the body of one batch.
    static func send(
        _ file: URL, to endpoint: String, batchSize: Int = 200, contentType: String = "msgpack",
        raw: Bool = false, timeout: Double = 30
    ) async throws -> GatewayRun {
        let child = try Child.python(
            "gateway.py",
            [
                file.path, "--endpoint", endpoint, "--batch-size", String(batchSize),
                "--content-type", contentType, "--timeout", "5",
            ]
                + (raw ? ["--raw"] : []))
        defer { child.kill() }
        let status = await child.waitForExit(timeout: timeout)
        let batches = child.jsonLines.compactMap { $0.value as? [String: Any] }.map { line in
            GatewayRun.Batch(
                first: Int(line.number("first") ?? -1), count: Int(line.number("count") ?? -1),
                attempts: Int(line.number("attempts") ?? -1), ack: line["ack"] as? [String: Any])
        }
        return GatewayRun(
            status: status, batches: batches, lastAcknowledgedAt: child.jsonLines.last?.time, log: child.tail())
    }
}

enum Control {
    /// Sends control requests in order with `control.py` (REQ) and returns the replies.
    /// `extra`: more control.py options (`--server-key`, `--key` for CurveZMQ).
    static func send(
        _ requests: [[String: Any]], to endpoint: String, timeout: Double = 15,
        extra: [String] = []
    ) async throws -> [[String: Any]] {
        let child = try Child.python(
            "control.py", ["--endpoint", endpoint, "--timeout", "10"] + extra + requests.map(jsonLine))
        defer { child.kill() }
        _ = await child.waitForExit(timeout: timeout)
        return child.jsonLines.compactMap { $0.value as? [String: Any] }
    }
}

/// `subscriber.py`: a SUB socket on the notifier, printing every message as it comes.
final class Subscriber {
    struct Message {
        var time: Double
        var topic: String
        var body: [String: Any]
        var event: String { body.string("event") ?? "" }
        var user: String { body.string("user") ?? "" }
    }

    let child: Child

    init(endpoint: String, topics: [String] = [], timeout: Double = 300) throws {
        child = try Child.python(
            "subscriber.py",
            ["--endpoint", endpoint, "--timeout", String(timeout)]
                + topics.flatMap { ["--topic", $0] }, name: "subscriber")
    }

    /// Every message received so far, in order (raw: no deduplication of any kind).
    var messages: [Message] {
        child.jsonLines.compactMap { line in
            guard let pair = line.value as? [Any], pair.count == 2, let topic = pair[0] as? String,
                let body = pair[1] as? [String: Any]
            else { return nil }
            return Message(time: line.time, topic: topic, body: body)
        }
    }

    /// Messages about one device's events.
    func messages(user: String) -> [Message] { messages.filter { $0.user == user } }

    func count(_ event: String, user: String) -> Int { messages(user: user).filter { $0.event == event }.count }

    /// Whether the ZeroMQ handshake with the notifier happened (reported on the script's standard error).
    var connections: Int { child.stderr.filter { $0.text.contains("\"connected\"") }.count }

    func kill() { child.kill() }
}

/// `webhook_receiver.py`: an HTTP server that checks each request's HMAC signature and logs it.
final class WebhookReceiver {
    struct Request {
        var time: Double
        var status: Int
        var headerEvent: String?
        var headerEventID: String?
        var signatureValid: Bool
        var body: [String: Any]
        var user: String { body.string("user") ?? "" }
        var event: String { body.string("event") ?? "" }
    }

    let child: Child
    let port: Int
    let secret: String

    init(secret: String, failFirst: Int = 0) async throws {
        self.secret = secret
        child = try Child.python(
            "webhook_receiver.py", ["--secret", secret, "--fail-first", String(failFirst)],
            name: "webhook receiver")
        port = try await firstLinePort(child)
    }

    var url: String { "http://127.0.0.1:\(port)/roadsave/events" }

    var requests: [Request] {
        child.jsonLines.dropFirst().compactMap { line in
            guard let object = line.value as? [String: Any] else { return nil }
            return Request(
                time: line.time, status: Int(object.number("status") ?? 0), headerEvent: object.string("event"),
                headerEventID: object.string("eventID"), signatureValid: object.bool("signatureValid") ?? false,
                body: object["body"] as? [String: Any] ?? [:])
        }
    }

    /// Requests answered 200 (deliveries), for one device.
    func delivered(user: String) -> [Request] { requests.filter { $0.status == 200 && $0.user == user } }

    func kill() { child.kill() }
}

/// The stub platform of the CLI tests (`Tests/CLITests/Support/stub_platform.py`).
final class StubPlatform {
    let child: Child
    let port: Int

    init(_ arguments: [String] = []) async throws {
        let script = TestPaths.repository.appendingPathComponent("Tests/CLITests/Support/stub_platform.py")
        child = try Child(
            name: "stub platform", executable: Executables.env, arguments: ["python3", script.path] + arguments)
        port = try await firstLinePort(child)
    }

    var url: String { "http://127.0.0.1:\(port)" }

    /// Crash evaluation requests received, with the time each was logged (on arrival, before the answer).
    var evaluations: [(time: Double, body: [String: Any])] {
        child.jsonLines.dropFirst().compactMap { line in
            guard let object = line.value as? [String: Any], object.string("method") == "POST",
                object.string("path") == "/v1/crash-evaluations"
            else { return nil }
            return (line.time, object["body"] as? [String: Any] ?? [:])
        }
    }

    func kill() { child.kill() }
}

/// The port a helper prints on its first line.
private func firstLinePort(_ child: Child) async throws -> Int {
    guard await eventually(timeout: 10, { !child.stdout.isEmpty || !child.isRunning }),
        let first = child.stdout.first, let port = Int(first.text.trimmingCharacters(in: .whitespaces))
    else {
        child.kill()
        throw TestFailure("\(child.name) did not print its port\n\(child.tail())")
    }
    return port
}

extension ChildProcess {
    /// `roadsave tail` from position 0 with positions shown: every event of a run, those missed live caught up.
    static func tailFromStart(subscribers: String, catchUp: String) throws -> ChildProcess {
        try ChildProcess(
            name: "tail", executable: Executables.named("roadsave"),
            arguments: [
                "tail", "--endpoint", subscribers, "--catch-up-endpoint", catchUp, "--since", "0", "--show-position",
                "--timeout", "300",
            ])
    }

    static func tailFromStart(_ services: Services) throws -> ChildProcess {
        try tailFromStart(subscribers: services.subscriberEndpoint, catchUp: services.catchUpEndpoint)
    }
}
