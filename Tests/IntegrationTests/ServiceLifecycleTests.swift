import Foundation
import RoadSaveTestKit
import Testing

/// Control commands, test crashes, restarts and graceful stops of the services as separate processes.
@Suite("Control and service life")
struct ServiceLifecycleTests {
    /// Every command but `configure`, for a device never seen, fails with `notConfigured`; after `configure` the
    /// same device gets past that check.
    @Test func controlCommandBeforeConfigureIsNotConfigured() async throws {
        try await withPipelineSlot {
            let services = try Services(Services.Options())
            defer { services.kill() }
            try services.startDetect()
            let endpoint = services.controlEndpoint
            let user = "never-seen-\(UUID().uuidString.prefix(8))"
            let device: [String: Any] = ["app": "demo-app", "user": user]
            func request(_ command: String, _ extra: [String: Any] = [:]) -> [String: Any] {
                var request = device
                request["command"] = command
                request.merge(extra) { $1 }
                return request
            }
            let refused = [
                request("startMonitoring"), request("stopMonitoring"),
                request("setAutoTripDetection", ["enabled": true]),
                request("setAutoTripDetection", ["enabled": false]), request("setDetectionMode", ["mode": "crashOnly"]),
                request("raiseTestCrash"),
            ]
            let replies = try await Control.send(refused, to: endpoint)
            #expect(replies.count == refused.count, "\(replies)\n\(services.logs())")
            for (sent, reply) in zip(refused, replies) {
                #expect(reply.bool("ok") == false, "\(sent["command"]!): \(reply)")
                #expect(reply.string("error") == "notConfigured", "\(sent["command"]!): \(reply)")
                #expect(!(reply.string("message") ?? "").isEmpty)
            }
            // After configure, the next check is reached: monitoring has not started.
            let after = try await Control.send([request("configure"), request("raiseTestCrash")], to: endpoint)
            #expect(after.first?.bool("ok") == true, "\(after)")
            #expect(after.last?.string("error") == "notMonitoring", "\(after)")
            #expect(services.detect?.isRunning == true)
        }
    }

    /// `raiseTestCrash` (through the Python control client) reaches the subscriber as a crash flagged isTest.
    @Test func testCrashThroughControlReachesSubscriberFlaggedIsTest() async throws {
        try await withPipelineSlot {
            let (services, subscriber) = try await Services.startFlowing()
            defer {
                subscriber.kill()
                services.kill()
            }

            let user = "drill-\(UUID().uuidString.prefix(6))"
            let replies = try await Control.send(
                [
                    ["command": "configure", "app": "demo-app", "user": user],
                    ["command": "startMonitoring", "app": "demo-app", "user": user],
                    ["command": "raiseTestCrash", "app": "demo-app", "user": user],
                ], to: services.controlEndpoint)
            #expect(replies.count == 3 && replies.allSatisfy { $0.bool("ok") == true }, "\(replies)")
            let arrived = await eventually(timeout: 15) { subscriber.count("crashDetected", user: user) >= 1 }
            #expect(arrived, "the test crash did not arrive\n\(services.logs())")
            try await Task.sleep(nanoseconds: 1_000_000_000)
            let crashes = subscriber.messages(user: user).filter { $0.event == "crashDetected" }
            #expect(crashes.count == 1)
            let crash = try #require(crashes.first)
            #expect(crash.topic == "crashDetected.demo-app.\(user)")
            #expect(crash.body.bool("isTest") == true)
            #expect(crash.body.string("confidence") != nil && crash.body.string("crashID") != nil)
            #expect(crash.body.string("eventID") != nil && crash.body.string("detectedAt") != nil)
        }
    }

    /// Stopping the notifier (SIGTERM) leaves ingest and detection running; a new notifier on the same endpoints
    /// picks up, and a new drive's events reach the subscriber that stayed connected throughout.
    @Test func restartingTheNotifierLeavesTheOthersRunning() async throws {
        try await withPipelineSlot {
            let (services, subscriber) = try await Services.startFlowing()
            defer {
                subscriber.kill()
                services.kill()
            }
            let ingest = try #require(services.ingest)
            let detect = try #require(services.detect)

            let notify = try #require(services.notify)
            notify.signal(SIGTERM)
            #expect(await notify.waitForExit(timeout: 15) == 0, "\(notify.tail())")
            // The others keep going without it: ingest still acknowledges, detection still answers.
            let during = try Drive.commute(app: "demo-app", user: "while-notifier-down").write()
            defer { try? FileManager.default.removeItem(at: during) }
            let sent = try await Gateway.send(during, to: services.gatewayEndpoint)
            #expect(sent.status == 0 && sent.batches.first?.accepted != nil, "\(sent.log)")
            let answer = try await Control.send(
                [["command": "configure", "app": "demo-app", "user": "operator"]],
                to: services.controlEndpoint)
            #expect(answer.first?.bool("ok") == true, "\(answer)")
            try await Task.sleep(nanoseconds: 500_000_000)
            #expect(ingest.isRunning && detect.isRunning, "\(services.logs())")

            try services.startNotify()
            try await services.waitUntilListening()
            try await services.waitUntilFlowing(to: subscriber)
            try await expectNewDriveArrives(services, subscriber, user: "after-notifier-restart")
            #expect(ingest.isRunning && detect.isRunning, "\(services.logs())")
        }
    }

    /// Stopping detection (SIGTERM) leaves ingest and the notifier running; a new detection on the same endpoints
    /// picks up, and a new drive's events arrive.
    @Test func restartingDetectionLeavesTheOthersRunning() async throws {
        try await withPipelineSlot {
            let (services, subscriber) = try await Services.startFlowing()
            defer {
                subscriber.kill()
                services.kill()
            }
            let ingest = try #require(services.ingest)
            let notify = try #require(services.notify)

            let detect = try #require(services.detect)
            detect.signal(SIGTERM)
            #expect(await detect.waitForExit(timeout: 15) == 0, "\(detect.tail())")
            let during = try Drive.commute(app: "demo-app", user: "while-detection-down").write()
            defer { try? FileManager.default.removeItem(at: during) }
            let sent = try await Gateway.send(during, to: services.gatewayEndpoint)
            #expect(
                sent.status == 0 && sent.batches.first?.accepted != nil, "ingest stopped acknowledging: \(sent.log)")
            try await Task.sleep(nanoseconds: 500_000_000)
            #expect(ingest.isRunning && notify.isRunning, "\(services.logs())")

            try services.startDetect()
            try await services.waitUntilListening()
            try await services.waitUntilFlowing(to: subscriber)
            try await expectNewDriveArrives(services, subscriber, user: "after-detection-restart")
            #expect(ingest.isRunning && notify.isRunning, "\(services.logs())")
        }
    }

    /// SIGTERM makes each service exit 0 inside its container's grace period (docker-compose.yml: 15 s at least) —
    /// after traffic, with a trip still in progress and a webhook sink configured. The bound is the deployment's, not
    /// a guess of how quick a quiet machine is.
    @Test func sigtermStopsEachServiceWithStatusZero() async throws {
        try await withPipelineSlot {
            var options = Services.Options()
            let webhook = try await WebhookReceiver(secret: options.webhookSecret)
            defer { webhook.kill() }
            options.webhooks = [webhook.url]
            let (services, subscriber) = try await Services.startFlowing(options)
            defer {
                subscriber.kill()
                services.kill()
            }

            for child in [services.notify, services.detect, services.ingest].compactMap({ $0 }) {
                let started = now()
                child.signal(SIGTERM)
                let status = await child.waitForExit(timeout: 20)
                #expect(status == 0, "\(child.name) ended with \(String(describing: status))\n\(child.tail())")
                let took = (child.exitedAt ?? now()) - started
                #expect(took < 15, "\(child.name) took \(took) s to stop")
                #expect(!child.endedBySignal, "\(child.name) was killed by the signal instead of stopping")
            }
        }
    }

    /// A service stopped right after it started (no traffic yet) exits 0 as well.
    @Test(arguments: ["roadsave-ingest", "roadsave-detect", "roadsave-notify"])
    func sigtermRightAfterStartExitsZero(executable: String) async throws {
        try await withPipelineSlot {
            let services = try Services(Services.Options())
            defer { services.kill() }
            switch executable {
            case "roadsave-ingest": try services.startIngest()
            case "roadsave-detect": try services.startDetect()
            default: try services.startNotify()
            }
            let child = try #require(services.all.first)
            let port = [services.gatewayPort, services.controlPort, services.publishPort][
                ["roadsave-ingest", "roadsave-detect", "roadsave-notify"].firstIndex(of: executable)!]
            #expect(await eventually(timeout: 10) { Ports.isListening(port) }, "\(child.tail())")
            child.signal(SIGTERM)
            #expect(await child.waitForExit(timeout: 15) == 0, "\(child.tail())")
        }
    }
}

/// Sends a fresh commute for `user` and expects its tripDidStart and tripDidEnd, once each.
func expectNewDriveArrives(
    _ services: Services, _ subscriber: Subscriber, user: String,
    sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    let drive = Drive.commute(app: "demo-app", user: user)
    let file = try drive.write()
    defer { try? FileManager.default.removeItem(at: file) }
    let sent = try await Gateway.send(file, to: services.gatewayEndpoint)
    #expect(sent.status == 0, "\(sent.log)", sourceLocation: sourceLocation)
    let arrived = await eventually(timeout: 20) {
        subscriber.count("tripDidStart", user: user) >= 1 && subscriber.count("tripDidEnd", user: user) >= 1
    }
    #expect(
        arrived, "the new drive's events did not arrive\n\(subscriber.child.tail())\n\(services.logs())",
        sourceLocation: sourceLocation)
    try await Task.sleep(nanoseconds: 500_000_000)
    #expect(subscriber.count("tripDidStart", user: user) == 1, sourceLocation: sourceLocation)
    #expect(subscriber.count("tripDidEnd", user: user) == 1, sourceLocation: sourceLocation)
    let end = subscriber.messages(user: user).first { $0.event == "tripDidEnd" }
    #expect(end?.body.string("endDate") == drive.lastMovement.map(iso8601), sourceLocation: sourceLocation)
}
