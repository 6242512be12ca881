import Foundation
import RoadSaveTestKit
import Testing

/// /metrics, /healthz and /readyz of the three services (`--metrics-endpoint`), read as Prometheus reads them: each
/// scrape goes through `scrape_metrics.py`, which parses the text with prometheus_client's own parser, so a line the
/// format does not allow fails the test. Values are checked as differences across known traffic (the probes that
/// wait for the path to flow send records of their own).
@Suite("Metrics and health over HTTP")
struct MetricsEndpointTests {
    @Test func countsFollowKnownTrafficInEveryService() async throws {
        try await withPipelineSlot {
            let ports = Ports.reserve(3)
            var options = Services.Options()
            // The receiver refuses its first request (503): the notifier retries it.
            let webhook = try await WebhookReceiver(secret: options.webhookSecret, failFirst: 1)
            defer { webhook.kill() }
            options.webhooks = [webhook.url]
            options.ingestArguments = ["--metrics-endpoint", "127.0.0.1:\(ports[0])"]
            options.detectArguments = ["--metrics-endpoint", "127.0.0.1:\(ports[1])"]
            options.notifyArguments = ["--metrics-endpoint", "127.0.0.1:\(ports[2])"]
            let (services, subscriber) = try await Services.startFlowing(options)
            defer {
                subscriber.kill()
                services.kill()
            }
            // The probes' trips have ended and their events are all delivered before the baseline is taken.
            let settled = try await eventually(timeout: 30, interval: 0.5) {
                let detect = try Scrape.metrics(ports[1])
                let notify = try Scrape.metrics(ports[2])
                let started = detect.value("roadsave_detection_events_total", ["event": "tripDidStart"])
                let events = ["tripDidStart", "tripDidEnd", "crashDetected", "crashFollowUp", "tripBehaviour"].map {
                    detect.value("roadsave_detection_events_total", ["event": $0])
                }.reduce(0, +)
                return started >= 1
                    && detect.value("roadsave_detection_events_total", ["event": "tripDidEnd"]) == started
                    && notify.value("roadsave_notifier_deliveries_total", ["sink": "pub"]) == events
                    && notify.total("roadsave_notifier_webhook_deliveries_total", ["outcome": "delivered"]) == events
            }
            #expect(settled, "\(services.logs())")
            let ingestBefore = try Scrape.metrics(ports[0])
            let detectBefore = try Scrape.metrics(ports[1])
            let notifyBefore = try Scrape.metrics(ports[2])

            // The recorded crash (tripDidStart, crashDetected, its crashFollowUp, whose watch ends within the records
            // with the test's settings, tripDidEnd and tripBehaviour) and three bad records after it.
            let crash = try String(contentsOf: RecordedCrash.file(), encoding: .utf8)
            let good = crash.split(separator: "\n").count
            let bad = [
                [
                    "kind": "location", "app": "demo-app", "user": "bad-1", "t": 1.8e9, "lat": 91.0, "lon": 18.4,
                    "speed": 3.0,
                ],
                ["kind": "location", "app": "demo-app", "t": 1.8e9, "lat": -33.9, "lon": 18.4, "speed": 3.0],
                ["kind": "teleport", "app": "demo-app", "user": "bad-3", "t": 1.8e9],
            ].map(jsonLine)
            let file = try temporaryFile(crash + bad.joined(separator: "\n") + "\n", suffix: ".ndjson")
            defer { try? FileManager.default.removeItem(at: file) }
            let sent = try await Gateway.send(file, to: services.gatewayEndpoint, batchSize: 100)
            #expect(sent.status == 0, "\(sent.log)")

            let delivered = await eventually(timeout: 30) {
                subscriber.count("tripDidEnd", user: RecordedCrash.user) >= 1
                    && subscriber.count("crashFollowUp", user: RecordedCrash.user) >= 1
            }
            #expect(delivered, "\(services.logs())")
            // Detection and the notifier post every half second: wait until they show the events.
            let shown = try await eventually(timeout: 10) {
                try Scrape.metrics(ports[2]).value("roadsave_notifier_events_stored_total")
                    - notifyBefore.value("roadsave_notifier_events_stored_total") == 5
            }
            #expect(shown)

            let ingest = try Scrape.metrics(ports[0])
            #expect(
                ingest.value("roadsave_ingest_records_accepted_total")
                    - ingestBefore.value("roadsave_ingest_records_accepted_total")
                    == Double(good))
            for (field, reason) in [("lat", "out_of_range"), ("user", "missing"), ("kind", "unknown_value")] {
                let labels = ["field": field, "reason": reason]
                #expect(
                    ingest.value("roadsave_ingest_records_rejected_total", labels)
                        - ingestBefore.value("roadsave_ingest_records_rejected_total", labels) == 1,
                    "\(field) \(reason)")
            }
            let batches = Double(sent.batches.count)
            #expect(
                ingest.value("roadsave_ingest_batches_total", ["outcome": "acknowledged"])
                    - ingestBefore.value("roadsave_ingest_batches_total", ["outcome": "acknowledged"]) == batches)
            #expect(ingest.families["roadsave_ingest_batch_records"] == "histogram")
            #expect(
                ingest.value("roadsave_ingest_batch_records_count")
                    - ingestBefore.value("roadsave_ingest_batch_records_count")
                    == batches)
            #expect(
                ingest.value("roadsave_ingest_batch_records_sum")
                    - ingestBefore.value("roadsave_ingest_batch_records_sum")
                    == Double(good + bad.count))
            #expect(ingest.value("roadsave_ingest_journal_head_position") >= 1)
            // The sender's connection, as the gateway socket's monitor counted it.
            func gateway(_ name: String, _ labels: [String: String] = [:]) -> Double {
                let labels = labels.merging(["socket": "gateway"]) { a, _ in a }
                return ingest.value(name, labels) - ingestBefore.value(name, labels)
            }
            #expect(gateway("roadsave_ingest_connections_accepted_total") >= 1)
            #expect(gateway("roadsave_ingest_connections_handshakes_total", ["outcome": "succeeded"]) >= 1)
            #expect(gateway("roadsave_ingest_connections_handshakes_total", ["outcome": "not_finished"]) == 0)
            #expect(ingest.value("roadsave_ingest_connections_accept_failed_total", ["socket": "gateway"]) == 0)

            let detect = try Scrape.metrics(ports[1])
            for event in ["tripDidStart", "crashDetected", "crashFollowUp", "tripDidEnd", "tripBehaviour"] {
                #expect(
                    detect.value("roadsave_detection_events_total", ["event": event])
                        - detectBefore.value("roadsave_detection_events_total", ["event": event]) == 1, "\(event)")
            }
            #expect(
                detect.value("roadsave_detection_records_read_total")
                    - detectBefore.value("roadsave_detection_records_read_total")
                    == Double(good))
            #expect(detect.families["roadsave_detection_platform_call_seconds"] == "histogram")
            #expect(
                detect.value("roadsave_detection_platform_call_seconds_count", ["call": "evaluation"])
                    - detectBefore.value("roadsave_detection_platform_call_seconds_count", ["call": "evaluation"]) == 1)
            #expect(detect.value("roadsave_detection_platform_failures_total", ["call": "evaluation"]) == 0)
            #expect(detect.value("roadsave_detection_devices", ["state": "in_memory"]) >= 2)
            #expect(detect.value("roadsave_detection_lag_seconds") == 0)
            #expect(detect.value("process_resident_memory_bytes") > 1_000_000)
            #expect(
                detect.samples.contains {
                    $0.name == "roadsave_detection_connections_open" && $0.labels["socket"] == "control"
                })

            let notify = try Scrape.metrics(ports[2])
            #expect(
                notify.value("roadsave_notifier_deliveries_total", ["sink": "pub"])
                    - notifyBefore.value("roadsave_notifier_deliveries_total", ["sink": "pub"]) == 5)
            #expect(notify.value("roadsave_notifier_duplicates_dropped_total") == 0)
            // The test's subscriber is connected.
            #expect(notify.value("roadsave_notifier_connections_open", ["socket": "subscribers"]) >= 1)
            // The webhook's figures come from its sink a post later: wait for them.
            let webhookDelivered = try await eventually(timeout: 10) {
                try Scrape.metrics(ports[2]).total(
                    "roadsave_notifier_webhook_deliveries_total", ["outcome": "delivered"])
                    - notifyBefore.total("roadsave_notifier_webhook_deliveries_total", ["outcome": "delivered"]) == 5
            }
            #expect(webhookDelivered)
            let after = try Scrape.metrics(ports[2])
            #expect(after.total("roadsave_notifier_webhook_retries_total") >= 1)
            #expect(after.total("roadsave_notifier_webhook_deliveries_total", ["outcome": "failed"]) == 0)
            #expect(
                after.samples.contains {
                    $0.name == "roadsave_notifier_outbox_events" && $0.labels["sink"]?.hasPrefix("webhook:") == true
                })
            // Everything stored was taken by both sinks.
            #expect(after.total("roadsave_notifier_outbox_events") == 0)

            for port in ports {
                let ready = try Scrape.page(port, "/readyz")
                #expect(ready.status == 200 && ready.body == "ready\n", "\(port): \(ready.body)")
                let health = try Scrape.page(port, "/healthz")
                #expect(health.status == 200 && health.body == "ok\n")
            }
            #expect(try Scrape.page(ports[0], "/other").status == 404)
        }
    }

    /// Detection alone is alive but not ready until a journal has answered; with ingest started it becomes ready.
    @Test func detectionIsReadyOnlyOnceCaughtUpWithIngest() async throws {
        let port = Ports.reserve(1)[0]
        var options = Services.Options()
        options.detectArguments = ["--metrics-endpoint", "127.0.0.1:\(port)"]
        let services = try Services(options)
        defer { services.kill() }
        try services.startDetect()
        let serving = await eventually(timeout: 10) { Ports.isListening(port) }
        #expect(serving, "\(services.logs())")
        let waiting = try Scrape.page(port, "/readyz")
        #expect(waiting.status == 503, "\(waiting.body)")
        #expect(waiting.body.contains("not ready: "), "\(waiting.body)")
        #expect(try Scrape.page(port, "/healthz").status == 200)

        try services.startIngest()
        let ready = try await eventually(timeout: 15) { try Scrape.page(port, "/readyz").status == 200 }
        #expect(ready, "\(services.logs())")
    }

    /// A metrics endpoint that cannot be served stops the service at start with the reason; a malformed one is a
    /// usage error naming the flag.
    @Test func endpointProblemsAreClearAtStart() async throws {
        let taken = Ports.reserve(1)[0]
        let holder = try Child(
            name: "holder", executable: Executables.env,
            arguments: ["python3", "-m", "http.server", String(taken), "--bind", "127.0.0.1"])
        defer { holder.kill() }
        _ = await eventually(timeout: 10) { Ports.isListening(taken) }
        let services = try Services(Services.Options(ingestArguments: ["--metrics-endpoint", "127.0.0.1:\(taken)"]))
        defer { services.kill() }
        try services.startIngest()
        let ingest = try #require(services.ingest)
        #expect(await ingest.waitForExit(timeout: 10) == 1)
        #expect(ingest.tail().contains("cannot serve metrics on 127.0.0.1:\(taken)"), "\(ingest.tail())")

        let bad = try Child(
            name: "detect", executable: Executables.named("roadsave-detect"),
            arguments: ["--metrics-endpoint", "localhost", "--data-dir", services.dataDirectory("detect")])
        defer { bad.kill() }
        #expect(await bad.waitForExit(timeout: 10) == 2)
        #expect(bad.tail().contains("--metrics-endpoint"), "\(bad.tail())")
    }
}

/// One scrape, as `scrape_metrics.py` parsed it.
struct Scrape {
    var status: Int
    var families: [String: String]
    var samples: [(name: String, labels: [String: String], value: Double)]

    /// The value of the sample `name` with exactly these labels (0 when absent: a counter not yet counted).
    func value(_ name: String, _ labels: [String: String] = [:]) -> Double {
        samples.first { $0.name == name && $0.labels.filter { $0.key != "le" } == labels && $0.labels["le"] == nil }?
            .value ?? 0
    }

    /// The sum of the samples `name` whose labels include these (over every other label, a sink's for example).
    func total(_ name: String, _ labels: [String: String] = [:]) -> Double {
        samples.filter { sample in sample.name == name && labels.allSatisfy { sample.labels[$0.key] == $0.value } }
            .reduce(0) { $0 + $1.value }
    }

    static func metrics(_ port: Int) throws -> Scrape {
        let object = try run("http://127.0.0.1:\(port)/metrics")
        let samples = ((object["samples"] as? [[String: Any]]) ?? []).map {
            (
                name: $0.string("name") ?? "", labels: ($0["labels"] as? [String: String]) ?? [:],
                value: $0.number("value") ?? .nan
            )
        }
        return Scrape(
            status: Int(object.number("status") ?? 0), families: (object["families"] as? [String: String]) ?? [:],
            samples: samples)
    }

    static func page(_ port: Int, _ path: String) throws -> (status: Int, body: String) {
        let object = try run("http://127.0.0.1:\(port)\(path)")
        return (Int(object.number("status") ?? 0), object.string("body") ?? "")
    }

    /// Runs the scraper to its end (a scrape takes milliseconds).
    private static func run(_ url: String) throws -> [String: Any] {
        let process = Process()
        process.executableURL = Executables.env
        process.arguments = ["python3", SupportScripts.folder.appendingPathComponent("scrape_metrics.py").path, url]
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        let problem = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0,
            let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        else {
            throw TestFailure("scrape of \(url) failed (\(process.terminationStatus)): \(problem)")
        }
        return object
    }
}
