import Foundation
import RoadSaveTestKit
import Testing

/// The project's own clients against the real services: `roadsave ctl`, and `roadsave up` + `send` + `tail` as a
/// user runs them (PROTOCOL §6), checked against what outside programs see and against `roadsave replay`.
@Suite("roadsave up, send, tail and ctl")
struct CommandFlowTests {
    static let roadsave = Executables.named("roadsave")

    /// Runs `roadsave ARGUMENTS` to completion (at most `timeout` seconds).
    static func run(
        _ arguments: [String], environment: [String: String] = [:],
        timeout: Double = 60
    ) async throws -> (status: Int32?, child: Child) {
        let child = try Child(
            name: "roadsave \(arguments.first ?? "")", executable: roadsave, arguments: arguments,
            environment: environment)
        let status = await child.waitForExit(timeout: timeout)
        child.kill()
        return (status, child)
    }

    /// `roadsave ctl raiseTestCrash` reaches the (Python) subscriber as a crash flagged isTest; before `configure`
    /// ctl reports `notConfigured` with exit status 1.
    @Test func raiseTestCrashThroughCtlReachesSubscriberFlaggedIsTest() async throws {
        try await withPipelineSlot {
            let (services, subscriber) = try await Services.startFlowing()
            defer {
                subscriber.kill()
                services.kill()
            }

            let user = "ctl-drill-\(UUID().uuidString.prefix(6))"
            // The applicationID as a credential: from the environment, not the command line.
            let environment = ["ROADSAVE_APP": "demo-app"]
            func ctl(_ command: String) async throws -> (status: Int32?, reply: [String: Any]?, log: String) {
                let (status, child) = try await Self.run(
                    [
                        "ctl", command, "--user", user,
                        "--endpoint", services.controlEndpoint,
                    ],
                    environment: environment, timeout: 20)
                return (status, child.jsonLines.last?.value as? [String: Any], child.tail())
            }
            let early = try await ctl("raiseTestCrash")
            #expect(early.status == 1, "\(early.log)")
            #expect(early.reply?.string("error") == "notConfigured", "\(early.log)")

            for command in ["configure", "startMonitoring", "raiseTestCrash"] {
                let result = try await ctl(command)
                #expect(result.status == 0, "ctl \(command)\n\(result.log)")
                #expect(result.reply?.bool("ok") == true, "ctl \(command)\n\(result.log)")
            }
            let arrived = await eventually(timeout: 15) { subscriber.count("crashDetected", user: user) >= 1 }
            #expect(arrived, "the test crash did not arrive\n\(services.logs())")
            try await Task.sleep(nanoseconds: 1_000_000_000)
            let crashes = subscriber.messages(user: user).filter { $0.event == "crashDetected" }
            #expect(crashes.count == 1)
            #expect(crashes.first?.body.bool("isTest") == true)
            #expect(crashes.first?.topic == "crashDetected.demo-app.\(user)")
        }
    }

    /// `roadsave up`, then `roadsave send` of a simulated recording (3 devices, one crash, 20 minutes): `roadsave
    /// tail` prints its events — exactly the events `roadsave replay` gives for the same file and settings, once
    /// each — and SIGTERM stops `up` and its services with status 0.
    @Test func upSendTailPrintsTheEventsOfASimulatedRecording() async throws {
        try await withPipelineSlot {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                "roadsave-it-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let recording = folder.appendingPathComponent("fleet.ndjson").path
            let settings = folder.appendingPathComponent("settings.json")
            try jsonLine(Services.quickSettings).write(to: settings, atomically: true, encoding: .utf8)

            let simulated = try await Self.run([
                "simulate", "--devices", "3", "--crashes", "1", "--duration", "20",
                "--seed", "11", "--output", recording,
            ])
            #expect(simulated.status == 0, "\(simulated.child.tail())")
            let replayed = try await Self.run([
                "replay", recording, "--settings", settings.path, "--reorder-window", "3",
                "--quiet",
            ])
            #expect(replayed.status == 0, "\(replayed.child.tail())")
            let expected = replayed.child.jsonLines.compactMap { ($0.value as? [String: Any])?.string("eventID") }
            #expect(!expected.isEmpty)
            #expect(
                replayed.child.jsonLines.contains { ($0.value as? [String: Any])?.string("event") == "crashDetected" })

            let base = Ports.reserveRange(6)
            let up = try Child(
                name: "roadsave up", executable: Self.roadsave,
                arguments: [
                    "up", "--base-port", String(base), "--settings", settings.path,
                    "--data-dir", folder.appendingPathComponent("data").path,
                ],
                environment: ["ROADSAVE_APPLICATIONS": "demo-app"])
            defer { up.kill() }
            let ready = await eventually(timeout: 30) { up.stdout.contains { $0.text == "ready" } || !up.isRunning }
            #expect(ready && up.isRunning, "roadsave up did not get ready\n\(up.tail())")
            guard ready && up.isRunning else { return }
            let gateways = "tcp://127.0.0.1:\(base)"
            let subscribers = "tcp://127.0.0.1:\(base + 4)"
            #expect(up.stdout.contains { $0.text.contains(gateways) }, "up does not say where gateways connect")
            #expect(up.stdout.contains { $0.text.contains(subscribers) }, "up does not say where subscribers connect")

            let tail = try Child(
                name: "roadsave tail", executable: Self.roadsave,
                arguments: ["tail", "--endpoint", subscribers, "--timeout", "240"])
            defer { tail.kill() }
            func printed() -> [[String: Any]] { tail.jsonLines.compactMap { $0.value as? [String: Any] } }

            // Probes (sent with `roadsave send`) until tail sees one: the whole path is connected.
            var flowing = false
            for attempt in 1...10 where !flowing {
                let user = "probe-\(attempt)"
                let probe = try Drive.probe(app: "demo-app", user: user).write()
                defer { try? FileManager.default.removeItem(at: probe) }
                _ = try await Self.run(["send", probe.path, "--endpoint", gateways], timeout: 20)
                flowing = await eventually(timeout: 3) { printed().contains { $0.string("user") == user } }
            }
            #expect(flowing, "no probe reached roadsave tail\n\(tail.tail())\n\(up.tail(60))")
            guard flowing else { return }

            let sent = try await Self.run(["send", recording, "--endpoint", gateways], timeout: 60)
            #expect(sent.status == 0, "\(sent.child.tail())")
            let lines = try String(contentsOfFile: recording, encoding: .utf8).split(separator: "\n").count
            #expect(
                sent.child.stdout.contains { $0.text.contains("accepted \(lines),") && $0.text.contains("rejected 0") },
                "\(sent.child.tail())")

            func fleetEventIDs() -> [String] {
                printed().filter { !($0.string("user") ?? "").hasPrefix("probe-") }.compactMap { $0.string("eventID") }
            }
            let all = await eventually(timeout: 40) { Set(fleetEventIDs()).isSuperset(of: expected) }
            #expect(
                all,
                "tail printed \(fleetEventIDs().count) of the \(expected.count) events of the replay\n\(tail.tail())\n\(up.tail(60))"
            )
            try await Task.sleep(nanoseconds: 1_500_000_000)
            let received = fleetEventIDs()
            #expect(
                Set(received) == Set(expected), "events other than the replay's: \(Set(received).subtracting(expected))"
            )
            #expect(received.count == Set(received).count, "an event was printed twice")

            // SIGTERM stops up and every service it started.
            up.signal(SIGTERM)
            let status = await up.waitForExit(timeout: 15)
            #expect(status == 0, "\(up.tail(60))")
            #expect(
                !Ports.isListening(base) && !Ports.isListening(base + 2) && !Ports.isListening(base + 4),
                "a service of roadsave up still listens after it stopped")
        }
    }
}
