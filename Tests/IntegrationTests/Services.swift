import Foundation
import RoadSaveTestKit

/// The three services as separate processes (`roadsave-ingest`, `roadsave-detect`, `roadsave-notify`), on loopback
/// ports of their own, every endpoint given explicitly, so that tests run in parallel without meeting.
final class Services {
    struct Options {
        /// Accepted applicationIDs (given through `ROADSAVE_APPLICATIONS`, as a credential would be).
        var applications = ["demo-app"]
        /// Thresholds for `--settings` (short delays so the tests run in seconds).
        var settings: [String: Any]? = Services.quickSettings
        /// `--platform URL`; nil for the embedded platform.
        var platform: String?
        var ingestArguments: [String] = []
        var detectArguments: [String] = []
        var notifyArguments: [String] = []
        /// Webhook URLs for the notifier, signed with `webhookSecret` (given through `ROADSAVE_WEBHOOK_SECRET`).
        var webhooks: [String] = []
        var webhookSecret = "integration-secret-\(UUID().uuidString.prefix(8))"
    }

    /// Short delays: trips end 5 s after the last movement (and 5 s into a device's silence: `tripOfflineGrace`),
    /// crashes are decided 8 s after the impact and followed up 20 s after that (within the simulated crash's time
    /// at the scene, so from its records). Not shorter: the simulated crash vehicle slows over a few seconds, and
    /// with speeds judged 1–3 s after the impact 2 of 60 seeds' crashes read as a pothole
    /// (`speedMaintainedAfterImpact`), which made a test's premise depend on its seed.
    static var quickSettings: [String: Any] {
        [
            "stopDelay": 5, "tripOfflineGrace": 5, "crashDecisionDelay": 8, "crashSettleTime": 3,
            "crashClusterWindow": 10,
            "crashFollowUpDelay": 20,
        ]
    }

    let options: Options
    let gatewayPort: Int, recordsPort: Int, controlPort: Int, eventsPort: Int, publishPort: Int, catchUpPort: Int
    /// The services' data directories live under this one (removed by `kill()`).
    let dataDirectory: URL
    private(set) var ingest: Child?
    private(set) var detect: Child?
    private(set) var notify: Child?
    /// Every process started (restarts included), for logs and cleanup.
    private(set) var all: [Child] = []
    private let settingsFile: URL?
    /// Where detection reads the journal and the notifier detection's outbox, when not straight from the ports
    /// (through a `LinkRelay` the test cuts); set before the service starts.
    var recordsEndpointForDetection: String?
    var eventsEndpointForNotifier: String?

    init(_ options: Options = Options()) throws {
        self.options = options
        let ports = Ports.reserve(6)
        (gatewayPort, recordsPort, controlPort, eventsPort, publishPort, catchUpPort) = (
            ports[0], ports[1], ports[2], ports[3], ports[4], ports[5]
        )
        dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "roadsave-it-\(UUID().uuidString)")
        if let settings = options.settings {
            settingsFile = try temporaryFile(jsonLine(settings), suffix: ".settings.json")
        } else {
            settingsFile = nil
        }
    }

    /// Starts all three and waits until each listens on its TCP ports; `prepare` sees them first (their ports).
    static func start(
        _ options: Options = Options(), prepare: (Services) throws -> Void = { _ in }
    ) async throws -> Services {
        let services = try Services(options)
        do {
            try prepare(services)
            try services.startIngest()
            try services.startDetect()
            try services.startNotify()
            try await services.waitUntilListening()
        } catch {
            services.kill()
            throw error
        }
        return services
    }

    /// Starts all three and a subscriber (`subscriber.py`), and waits until a probe drive has gone the whole way to it
    /// (`waitUntilFlowing`). The caller kills both.
    static func startFlowing(_ options: Options = Options()) async throws -> (Services, Subscriber) {
        let services = try await start(options)
        do {
            let subscriber = try Subscriber(endpoint: services.subscriberEndpoint)
            do {
                try await services.waitUntilFlowing(to: subscriber)
                return (services, subscriber)
            } catch {
                subscriber.kill()
                throw error
            }
        } catch {
            services.kill()
            throw error
        }
    }

    var gatewayEndpoint: String { "tcp://127.0.0.1:\(gatewayPort)" }
    var controlEndpoint: String { "tcp://127.0.0.1:\(controlPort)" }
    var subscriberEndpoint: String { "tcp://127.0.0.1:\(publishPort)" }
    var catchUpEndpoint: String { "tcp://127.0.0.1:\(catchUpPort)" }

    /// A service's own data directory.
    func dataDirectory(_ service: String) -> String { dataDirectory.appendingPathComponent(service).path }

    func startIngest() throws {
        let child = try Child(
            name: "ingest", executable: Executables.named("roadsave-ingest"),
            arguments: [
                "--gateway-endpoint", "tcp://127.0.0.1:\(gatewayPort)",
                "--records-endpoint", "tcp://127.0.0.1:\(recordsPort)",
                "--data-dir", dataDirectory("ingest"),
            ] + options.ingestArguments,
            environment: ["ROADSAVE_APPLICATIONS": options.applications.joined(separator: ",")])
        ingest = child
        all.append(child)
    }

    func startDetect() throws { try startDetect(dataDirectory: "detect") }

    /// `dataDirectory`: the name of its data directory under the services' one (another name: a detection moved to
    /// a node with an empty volume).
    func startDetect(dataDirectory name: String) throws {
        var arguments = [
            "--records-endpoint", recordsEndpointForDetection ?? "tcp://127.0.0.1:\(recordsPort)",
            "--control-endpoint", "tcp://127.0.0.1:\(controlPort)",
            "--events-endpoint", "tcp://127.0.0.1:\(eventsPort)",
            "--reorder-window", "3",
            "--data-dir", dataDirectory(name),
            "--checkpoint-interval", "0.5",
        ]
        if let settingsFile { arguments += ["--settings", settingsFile.path] }
        if let platform = options.platform { arguments += ["--platform", platform] }
        let child = try Child(
            name: "detect", executable: Executables.named("roadsave-detect"),
            arguments: arguments + options.detectArguments)
        detect = child
        all.append(child)
    }

    func startNotify() throws {
        var arguments = [
            "--events-endpoint", eventsEndpointForNotifier ?? "tcp://127.0.0.1:\(eventsPort)",
            "--publish-endpoint", "tcp://127.0.0.1:\(publishPort)",
            "--catch-up-endpoint", "tcp://127.0.0.1:\(catchUpPort)",
            "--data-dir", dataDirectory("notify"),
        ]
        var environment: [String: String] = [:]
        if !options.webhooks.isEmpty {
            arguments += ["--webhooks", options.webhooks.joined(separator: ",")]
            environment["ROADSAVE_WEBHOOK_SECRET"] = options.webhookSecret
        }
        let child = try Child(
            name: "notify", executable: Executables.named("roadsave-notify"),
            arguments: arguments + options.notifyArguments,
            environment: environment)
        notify = child
        all.append(child)
    }

    /// Waits until the bound TCP endpoints accept connections (binding done; not yet "the data flows").
    func waitUntilListening(timeout: Double = 15) async throws {
        let ports = [gatewayPort, recordsPort, controlPort, eventsPort, publishPort, catchUpPort]
        let listening = await eventually(timeout: timeout) {
            [ingest, detect, notify].allSatisfy { $0?.isRunning ?? true } && ports.allSatisfy(Ports.isListening)
        }
        guard listening else { throw TestFailure("the services did not start listening\n\(logs())") }
    }

    /// Kills every process started (SIGKILL), for cleanup.
    func kill() {
        for child in all { child.kill() }
        if let settingsFile { try? FileManager.default.removeItem(at: settingsFile) }
        try? FileManager.default.removeItem(at: dataDirectory)
    }

    /// The services' last log lines, for failure messages.
    func logs() -> String {
        all.map { $0.tail() }.joined(separator: "\n")
    }

    // MARK: Readiness of the whole path

    private var probes = 0

    /// ZeroMQ's slow joiner: a SUB socket receives nothing published before its subscription reached the publisher,
    /// and `connect` succeeds before the peer even exists. So the tests send nothing that matters until a probe has
    /// gone the whole way — gateway → ingest → detection → notifier → `subscriber` — : a short drive of a device
    /// of its own, whose `tripDidStart` must reach the subscriber; another probe is sent until one does.
    func waitUntilFlowing(to subscriber: Subscriber, app: String? = nil, timeout: Double = 30) async throws {
        let deadline = now() + timeout
        var history: [String] = []
        while now() < deadline {
            probes += 1
            let user = "probe-\(probes)-\(UUID().uuidString.prefix(6))"
            let file = try Drive.probe(app: app ?? options.applications[0], user: user).write()
            defer { try? FileManager.default.removeItem(at: file) }
            let sent = try await Gateway.send(file, to: gatewayEndpoint, timeout: 10)
            history.append(
                "\(user): gateway status \(sent.status.map(String.init) ?? "none"), accepted "
                    + sent.batches.map { $0.accepted.map(String.init) ?? "no ack" }.joined(separator: "+"))
            guard sent.status == 0 else {
                try? await Task.sleep(nanoseconds: 200_000_000)
                continue
            }
            if await eventually(timeout: 3, { subscriber.count("tripDidStart", user: user) > 0 }) { return }
        }
        throw TestFailure(
            "no probe drive reached the subscriber within \(timeout) s (subscriber connections: "
                + "\(subscriber.connections), messages: \(subscriber.messages.count))\n"
                + history.joined(separator: "\n") + "\n\(subscriber.child.tail())\n\(logs())")
    }
}
