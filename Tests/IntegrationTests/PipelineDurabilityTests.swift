import Foundation
import GatewayKit
import RoadSaveTestKit
import Testing

/// PROTOCOL §8 under faults: the three services as processes, a gateway streaming a simulated fleet, and each service
/// SIGKILLed at a moment the test does not choose (seeded, printed; `ROADSAVE_TEST_SEED` replays a run) and started
/// again on its data directory. Every event that `roadsave replay` gives for the same records and settings must come
/// out: once each, with the same eventIDs and contents, at a subscriber (`roadsave tail --since 0`, which drops
/// positions it has seen and catches up what it missed) and in the NDJSON sink; at least once at a webhook.
@Suite("Durability of the whole pipeline", .serialized)
struct PipelineDurabilityTests {
    static let roadsave = Executables.named("roadsave")

    /// Runs `roadsave ARGUMENTS` to completion.
    static func run(_ arguments: [String], timeout: Double = 120) async throws -> Child {
        let child = try Child(name: "roadsave \(arguments.first ?? "")", executable: roadsave, arguments: arguments)
        let status = await child.waitForExit(timeout: timeout)
        guard status == 0 else {
            child.kill()
            throw TestFailure(
                "roadsave \(arguments.joined(separator: " ")) ended with \(status.map(String.init) ?? "no exit")\n\(child.tail())"
            )
        }
        return child
    }

    /// A simulated fleet and the events replay gives for it, by eventID.
    struct Expected {
        var recording: URL
        var events: [String: [String: Any]]
    }

    static func expected(
        in folder: URL, devices: Int, crashes: Int, duration: Int, seed: UInt64,
        settings values: [String: Any] = Services.quickSettings
    ) async throws -> Expected {
        let recording = folder.appendingPathComponent("fleet.ndjson")
        let settings = folder.appendingPathComponent("settings.json")
        try jsonLine(values).write(to: settings, atomically: true, encoding: .utf8)
        _ = try await run([
            "simulate", "--devices", String(devices), "--crashes", String(crashes), "--duration",
            String(duration), "--seed", String(seed % 1000), "--output", recording.path,
        ])
        return try await replayed(recording, ["--settings", settings.path, "--reorder-window", "3"])
    }

    /// The events `roadsave replay RECORDING OPTIONS` gives, by eventID.
    static func replayed(_ recording: URL, _ options: [String] = []) async throws -> Expected {
        let replay = try await run(["replay", recording.path, "--quiet"] + options)
        var events: [String: [String: Any]] = [:]
        for line in replay.jsonLines {
            guard let event = line.value as? [String: Any], let id = event.string("eventID") else { continue }
            events[id] = event
        }
        return Expected(recording: recording, events: events)
    }

    /// `roadsave tail --since 0 --show-position`: what it printed, in order.
    static func printed(_ tail: Child) -> [(position: Int, event: [String: Any])] {
        tail.jsonLines.compactMap { line in
            guard let object = line.value as? [String: Any], let position = object.number("position"),
                let event = object["event"] as? [String: Any]
            else { return nil }
            return (Int(position), event)
        }
    }

    /// The events of an NDJSON file.
    static func ndjson(_ path: String) -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    /// Each expected event exactly once, with its contents; nothing else.
    static func checkExactlyOnce(
        _ events: [[String: Any]], expected: [String: [String: Any]], _ what: String,
        context: String
    ) {
        var counts: [String: Int] = [:]
        for event in events { counts[event.string("eventID") ?? "?", default: 0] += 1 }
        let missing = expected.keys.filter { counts[$0] == nil }.sorted()
        let repeated = counts.filter { $0.value > 1 }.keys.sorted()
        let unexpected = counts.keys.filter { expected[$0] == nil }.sorted()
        #expect(
            missing.isEmpty,
            "\(what): \(missing.count) of \(expected.count) events missing: \(missing.prefix(5)) (\(context))")
        #expect(repeated.isEmpty, "\(what): events more than once: \(repeated.prefix(5)) (\(context))")
        #expect(unexpected.isEmpty, "\(what): events replay does not give: \(unexpected.prefix(5)) (\(context))")
        for event in events {
            guard let id = event.string("eventID"), let want = expected[id] else { continue }
            #expect(jsonLine(event) == jsonLine(want), "\(what): event \(id) differs from replay's (\(context))")
        }
    }

    @Test func everyServiceKilledAtARandomMomentLosesNoEvent() async throws {
        try await withPipelineSlot {
            let seed = TestSeed.make()
            var random = SplitMix64(state: seed)
            let context = "seed \(seed); ROADSAVE_TEST_SEED=\(seed) replays it"
            print("durability test: \(context)")
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                "roadsave-it-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let expected = try await Self.expected(in: folder, devices: 10, crashes: 2, duration: 20, seed: seed)
            #expect(expected.events.values.contains { $0.string("event") == "crashDetected" }, "\(context)")
            #expect(expected.events.values.contains { $0.string("event") == "crashFollowUp" }, "\(context)")

            var options = Services.Options()
            let receiver = try await WebhookReceiver(secret: options.webhookSecret)
            defer { receiver.kill() }
            options.webhooks = [receiver.url]
            let sink = folder.appendingPathComponent("events.ndjson").path
            options.notifyArguments = ["--ndjson", sink, "--webhook-max-backoff", "1"]
            let services = try await Services.start(options)
            defer { services.kill() }
            let tail = try Child.tailFromStart(services)
            defer { tail.kill() }

            // About 15 s of stream; a gateway keeps a batch until it is acknowledged, whatever is killed meanwhile.
            let gateway = try Child(
                name: "send", executable: Self.roadsave,
                arguments: [
                    "send", expected.recording.path, "--endpoint", services.gatewayEndpoint, "--batch", "50",
                    "--rate", "1000", "--timeout", "1", "--attempts", "100",
                ])
            defer { gateway.kill() }
            let start = now()
            // Detection, then the notifier, then ingest, each at a random moment of its third of the stream.
            let kills: [(name: String, at: Double, restart: () throws -> Void, child: () -> Child?)] = [
                ("detect", Double.random(in: 1.5...4.5, using: &random), services.startDetect, { services.detect }),
                ("notify", Double.random(in: 5.5...8.5, using: &random), services.startNotify, { services.notify }),
                ("ingest", Double.random(in: 9.5...12.5, using: &random), services.startIngest, { services.ingest }),
            ]
            for kill in kills {
                while now() - start < kill.at { try await Task.sleep(nanoseconds: 20_000_000) }
                let victim = try #require(kill.child())
                #expect(victim.isRunning, "\(kill.name) ended before it was killed (\(context))\n\(victim.tail())")
                victim.kill()
                print("durability test: SIGKILL \(kill.name) at \(String(format: "%.2f", now() - start)) s")
                try await Task.sleep(nanoseconds: 300_000_000)
                try kill.restart()
            }
            #expect(
                await gateway.waitForExit(timeout: 120) == 0,
                "the gateway did not get every batch acknowledged (\(context))\n\(gateway.tail())\n\(services.logs())")

            // Trips end and crashes are decided on the services' clock once the devices fall silent.
            let complete = await eventually(timeout: 60) {
                Self.printed(tail).count >= expected.events.count && Self.ndjson(sink).count >= expected.events.count
                    && Set(receiver.requests.filter { $0.status == 200 }.compactMap(\.headerEventID)).count
                        >= expected.events.count
            }
            try await Task.sleep(nanoseconds: 1_500_000_000)
            #expect(
                complete,
                "not everything arrived (\(context)): tail \(Self.printed(tail).count), NDJSON \(Self.ndjson(sink).count), webhook \(receiver.requests.count) of \(expected.events.count)\n\(tail.tail())\n\(services.logs())"
            )
            Self.checkExactlyOnce(
                Self.printed(tail).map(\.event), expected: expected.events, "subscriber", context: context)
            Self.checkExactlyOnce(Self.ndjson(sink), expected: expected.events, "NDJSON", context: context)
            let positions = Self.printed(tail).map(\.position)
            #expect(
                positions == positions.sorted() && Set(positions).count == positions.count,
                "the subscriber's positions are not increasing (\(context))")
            let webhook = Set(
                receiver.requests.filter { $0.status == 200 && $0.signatureValid }.compactMap(\.headerEventID))
            #expect(
                webhook == Set(expected.events.keys),
                "webhook: \(webhook.count) of \(expected.events.count) (\(context))")
        }
    }

    /// The pids `roadsave up` printed for its services ("started NAME pid N").
    static func servicePIDs(_ up: Child) -> [Int32] {
        up.stdout.compactMap { line in
            let words = line.text.split(separator: " ")
            guard words.count == 4, words[0] == "started" || words[0] == "restarted", words[2] == "pid" else {
                return nil
            }
            return Int32(words[3])
        }
    }

    /// `roadsave up` SIGKILLed in the middle of a stream takes its services with it; a second `up` on the same data
    /// directory resumes, and the subscriber still gets each of replay's events once.
    @Test func upKilledAndStartedAgainOnItsDataDirectoryLosesNoEvent() async throws {
        try await withPipelineSlot {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                "roadsave-it-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            // Detection counts a device silent from its own restart (it cannot know what gateways still hold), and
            // the gateway here pauses up to 5 s between attempts: an offline grace longer than a restart plus that
            // pause keeps the trips in progress going, as production's half hour does (the stop delay with it: the
            // grace is never shorter).
            var settings = Services.quickSettings
            settings["stopDelay"] = 15
            settings["tripOfflineGrace"] = 15
            let expected = try await Self.expected(
                in: folder, devices: 6, crashes: 1, duration: 15, seed: 21,
                settings: settings)
            let base = Ports.reserveRange(6)
            let arguments = [
                "up", "--base-port", String(base), "--settings", folder.appendingPathComponent("settings.json").path,
                "--data-dir", folder.appendingPathComponent("data").path,
            ]
            func startUp() async throws -> Child {
                let up = try Child(
                    name: "roadsave up", executable: Self.roadsave, arguments: arguments,
                    environment: ["ROADSAVE_APPLICATIONS": "demo-app"])
                let ready = await eventually(timeout: 40) { up.stdout.contains { $0.text == "ready" } || !up.isRunning }
                guard ready, up.isRunning else { throw TestFailure("roadsave up did not get ready\n\(up.tail())") }
                return up
            }
            var up = try await startUp()
            defer { up.kill() }
            let tail = try Child.tailFromStart(
                subscribers: "tcp://127.0.0.1:\(base + 4)", catchUp: "tcp://127.0.0.1:\(base + 5)")
            defer { tail.kill() }
            let gateway = try Child(
                name: "send", executable: Self.roadsave,
                arguments: [
                    "send", expected.recording.path, "--endpoint", "tcp://127.0.0.1:\(base)", "--batch", "50", "--rate",
                    "800",
                    "--timeout", "1", "--attempts", "100",
                ])
            defer { gateway.kill() }
            try await Task.sleep(nanoseconds: 3_000_000_000)
            let services = Self.servicePIDs(up)
            #expect(services.count == 3, "\(up.tail())")
            up.kill()
            let gone = await eventually(timeout: 20) { services.allSatisfy { kill($0, 0) != 0 } }
            #expect(gone, "services outlived roadsave up: \(services.filter { kill($0, 0) == 0 })")
            up = try await startUp()
            #expect(await gateway.waitForExit(timeout: 120) == 0, "\(gateway.tail())\n\(up.tail())")
            let complete = await eventually(timeout: 80) { Self.printed(tail).count >= expected.events.count }
            try await Task.sleep(nanoseconds: 1_500_000_000)
            #expect(complete, "\(Self.printed(tail).count) of \(expected.events.count)\n\(tail.tail())\n\(up.tail(40))")
            Self.checkExactlyOnce(
                Self.printed(tail).map(\.event), expected: expected.events, "subscriber", context: "up killed")
        }
    }
}
