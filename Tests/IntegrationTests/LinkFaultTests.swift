import Foundation
import RoadSaveTestKit
import Testing

/// Network faults between the services, which no process kill shows: the three services as processes, detection
/// reading ingest's journal and the notifier detection's outbox each through a `LinkRelay` that the test cuts
/// without a word (no FIN, no RST: both ends stay ESTABLISHED and go quiet) and heals. A gateway streams a fleet
/// with disorder (`simulate --disorder`) through `roadsave send` meanwhile. The ingest–detection cut outlasts the
/// watermark hold (`--watermark-hold 4`): a partition is not the gateway standing still, so the events stay replay's,
/// each once, with nothing unapplied. Each cut must show in the downstream service's /readyz and its
/// `feed_unanswered_seconds` gauge, and be dropped by the heartbeats (short ones here: `--link-heartbeat 0.2
/// --link-timeout 1`), and traffic must flow again after the heal. How fast, on a real network and with the default
/// timings, is measured by `make partition-test`, not asserted here: this machine's speed is not a test's verdict.
@Suite("Link faults", .serialized)
struct LinkFaultTests {
    static let link = ["--link-heartbeat", "0.2", "--link-timeout", "1", "--connect-timeout", "0.5"]

    @Test func theServicesGiveReplaysEventsThroughSilentCutsOfTheirLinks() async throws {
        try await withPipelineSlot {
            let seed = TestSeed.make()
            let context = "seed \(seed) (ROADSAVE_TEST_SEED replays it)"
            print("link fault test: \(context)")
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                "roadsave-links-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let expected = try await OutageTests.fleet(in: folder, seed: seed % 1000)
            #expect(expected.events.values.contains { $0.string("event") == "crashDetected" }, "\(context)")

            let metrics = Ports.reserve(2)
            var options = Services.Options()
            options.settings = OutageTests.settings
            options.detectArguments =
                ["--reorder-window", OutageTests.reorderWindow, "--watermark-hold", "4"]
                + ["--metrics-endpoint", "127.0.0.1:\(metrics[0])"] + Self.link
            options.notifyArguments = ["--metrics-endpoint", "127.0.0.1:\(metrics[1])"] + Self.link
            var relays: [LinkRelay] = []
            let services = try await Services.start(options) { services in
                let journal = try LinkRelay(to: services.recordsPort)
                let outbox = try LinkRelay(to: services.eventsPort)
                relays = [journal, outbox]
                services.recordsEndpointForDetection = journal.endpoint
                services.eventsEndpointForNotifier = outbox.endpoint
            }
            defer {
                services.kill()
                for relay in relays { relay.stop() }
            }
            let (journal, outbox) = (relays[0], relays[1])
            let tail = try Child.tailFromStart(services)
            defer { tail.kill() }
            let gateway = try Child(
                name: "send", executable: OutageTests.roadsave,
                arguments: [
                    "send", expected.recording.path, "--endpoint", services.gatewayEndpoint, "--batch", "100",
                    "--rate", "500", "--timeout", "5", "--attempts", "100", "--log-level", "debug",
                ])
            defer { gateway.kill() }
            func acknowledged() -> Int {
                gateway.stderr.filter { $0.text.contains("msg=\"batch acknowledged\"") }.count
            }
            func detection() throws -> Scrape { try Scrape.metrics(metrics[0]) }

            // Ingest–detection: cut once detection has read some of the stream; the gateway goes on meanwhile.
            #expect(await eventually(timeout: 60) { acknowledged() >= 3 }, "\(context)\n\(gateway.tail())")
            journal.cut()
            let cutAt = now()
            let shown = try await eventually(timeout: 60) {
                let ready = try Scrape.page(metrics[0], "/readyz")
                return ready.status == 503 && ready.body.contains("no answer from the journal")
            }
            #expect(shown, "detection's readiness never showed the silent journal (\(context))\n\(services.logs())")
            #expect(
                try detection().total("roadsave_detection_feed_unanswered_seconds") > 1,
                "the gauge of the journal's silence (\(context))")
            // The cut's length is the test's input: past the hold (4 s) and the 10 s a journal is waited for by
            // gateways without watermarks; the gateway goes on meanwhile.
            _ = await eventually(timeout: 60) { now() - cutAt > 14 && acknowledged() >= 8 }
            journal.heal()
            #expect(
                try await eventually(timeout: 60) {
                    try detection().total("roadsave_detection_feed_connections_lost_total") >= 1
                        && Scrape.page(metrics[0], "/readyz").status == 200
                }, "detection did not come back after the heal (\(context))\n\(services.logs())")

            // Detection–notifier: the same on the outbox feed.
            outbox.cut()
            let notifierShown = try await eventually(timeout: 60) {
                let ready = try Scrape.page(metrics[1], "/readyz")
                return ready.status == 503 && ready.body.contains("no answer from detection's feed")
            }
            #expect(notifierShown, "the notifier's readiness never showed the silent feed (\(context))")
            outbox.heal()

            #expect(
                await gateway.waitForExit(timeout: 180) == 0,
                "the gateway did not get every batch acknowledged (\(context))\n\(gateway.tail())\n\(services.logs())")
            let events = try await OutageTests.received(tail, count: expected.events.count)
            PipelineDurabilityTests.checkExactlyOnce(events, expected: expected.events, "subscriber", context: context)
            let late = try await OutageTests.query(
                services.dataDirectory("detect") + "/outbox.sqlite", "SELECT count(*) FROM unapplied")
            #expect(late == ["0"], "records found too late (\(context))\n\(services.logs())")
            #expect(
                try detection().value("roadsave_detection_watermark_forced_releases_total") == 0,
                "a watermark released by the clock during the cut (\(context))")
            let detectionLog = services.all.filter { $0.name == "detect" }.flatMap(\.stderr).map(\.text)
            #expect(detectionLog.contains { $0.contains("no answer from the journal") })
            #expect(detectionLog.contains { $0.contains("the journal answers again") })
            #expect(!detectionLog.contains { $0.contains("watermark has stood still too long") }, "\(context)")
        }
    }

    /// A subscriber that has heard nothing for a while has its connections forgotten by a NAT (silent for ever, while
    /// new ones pass): its heartbeats find it, it connects anew and catches up, and the next crash alert reaches it
    /// without a restart. Without heartbeats it would wait on a dead connection for the kernel's fifteen minutes.
    @Test func anIdleSubscriberWhoseConnectionWasForgottenGetsTheNextCrash() async throws {
        try await withPipelineSlot {
            let services = try await Services.start()
            defer { services.kill() }
            let publish = try LinkRelay(to: services.publishPort)
            let catchUp = try LinkRelay(to: services.catchUpPort)
            defer {
                publish.stop()
                catchUp.stop()
            }
            let tail = try Child(
                name: "tail", executable: OutageTests.roadsave,
                arguments: [
                    "tail", "--endpoint", publish.endpoint, "--catch-up-endpoint", catchUp.endpoint,
                    "--show-position", "--timeout", "300",
                ] + Self.link)
            defer { tail.kill() }
            func printed(_ event: String, user: String) -> Bool {
                PipelineDurabilityTests.printed(tail).contains {
                    $0.event.string("event") == event && $0.event.string("user") == user
                }
            }
            // Subscribed (a probe's trip reaches it), then idle.
            var probe = 0
            let subscribed = try await eventually(timeout: 60, interval: 0.5) {
                probe += 1
                let user = "probe-\(probe)"
                let file = try Drive.probe(app: "demo-app", user: user).write()
                defer { try? FileManager.default.removeItem(at: file) }
                _ = try await Gateway.send(file, to: services.gatewayEndpoint, timeout: 10)
                return await eventually(timeout: 3) { printed("tripDidStart", user: user) }
            }
            #expect(subscribed, "the subscriber never got a probe\n\(tail.tail())\n\(services.logs())")
            publish.forget()
            catchUp.forget()
            let crash = try RecordedCrash.file()
            defer { try? FileManager.default.removeItem(at: crash) }
            let gateway = try Child(
                name: "send", executable: OutageTests.roadsave,
                arguments: ["send", crash.path, "--endpoint", services.gatewayEndpoint])
            defer { gateway.kill() }
            #expect(await gateway.waitForExit(timeout: 60) == 0, "\(gateway.tail())")
            #expect(
                await eventually(timeout: 60) { printed("crashDetected", user: RecordedCrash.user) },
                "the crash never reached the subscriber whose connection was forgotten\n\(tail.tail())")
        }
    }
}
