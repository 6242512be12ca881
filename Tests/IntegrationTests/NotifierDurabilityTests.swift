import Foundation
import GatewayKit
import RoadSaveTestKit
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The notifier as a real process (`roadsave-notify`), fed by a fake detection outbox feed (`Support/event_feed.py`)
/// serving a fixed list of events: its durable store and per-sink outboxes seen from outside.
@Suite("Notifier durability")
struct NotifierDurabilityTests {
    /// A fleet's events in the MessagePack body fields of `EventBody.encode`, in feed order: per device, journeys
    /// of start, crash, end; devices interleaved; `duplicates` of them served a second time later (redeliveries).
    static func fleet(devices: Int, journeys: Int, duplicates: Int = 0) -> [[String: Any]] {
        var perDevice: [[[String: Any]]] = []
        for device in 0..<devices {
            let user = "driver-\(device)"
            var events: [[String: Any]] = []
            for journey in 0..<journeys {
                let trip = "\(user)-trip-\(journey)"
                let start = 1_700_000_000.5 + Double(journey * 3600 + device)
                events.append([
                    "event": "tripDidStart", "app": "demo-app", "user": user, "tripID": trip, "startDate": start,
                ])
                events.append([
                    "event": "crashDetected", "app": "demo-app", "user": user, "crashID": "\(user)-crash-\(journey)",
                    "confidence": "high", "detectedAt": start + 300.25, "latitude": -33.9248685,
                    "longitude": 18.4240553, "isTest": false,
                ])
                events.append([
                    "event": "tripDidEnd", "app": "demo-app", "user": user, "tripID": trip, "startDate": start,
                    "endDate": start + 600.5, "distanceMetres": 5432.1, "endReason": "stopDelay",
                ])
            }
            perDevice.append(events)
        }
        var all: [[String: Any]] = []
        for index in 0..<(journeys * 3) {
            for device in perDevice { all.append(device[index]) }
        }
        // Redeliveries: copies of earlier events, spread over the second half.
        for copy in 0..<duplicates {
            let original = all[(copy * 7) % (all.count / 2)]
            all.insert(original, at: all.count / 2 + copy * 3)
        }
        return all
    }

    /// What identifies an event in the outputs (its eventID is derived from the same fields).
    static func key(_ event: [String: Any]) -> String {
        let id = event.string("tripID") ?? event.string("crashID") ?? "?"
        return "\(event.string("event") ?? "?").\(event.string("user") ?? "?").\(id)"
    }

    /// The keys in feed order, each once (redeliveries removed).
    static func distinctKeys(_ events: [[String: Any]]) -> [String] {
        var seen = Set<String>()
        return events.map(key).filter { seen.insert($0).inserted }
    }

    /// `roadsave-notify` with a data directory, a PUB and a catch-up endpoint of its own.
    final class Notifier {
        let data: String
        let publishPort: Int, catchUpPort: Int
        let arguments: [String]
        let environment: [String: String]
        private(set) var runs: [Child] = []

        init(feed: EventFeed, extra: [String] = [], environment: [String: String] = [:]) {
            data =
                FileManager.default.temporaryDirectory.appendingPathComponent("roadsave-notify-\(UUID().uuidString)")
                .path
            let ports = Ports.reserve(2)
            (publishPort, catchUpPort) = (ports[0], ports[1])
            arguments =
                [
                    "--data-dir", data, "--events-endpoint", feed.endpoint,
                    "--publish-endpoint", "tcp://127.0.0.1:\(publishPort)",
                    "--catch-up-endpoint", "tcp://127.0.0.1:\(catchUpPort)", "--heartbeat", "0.2",
                ] + extra
            self.environment = environment
        }

        var publishEndpoint: String { "tcp://127.0.0.1:\(publishPort)" }
        var catchUpEndpoint: String { "tcp://127.0.0.1:\(catchUpPort)" }
        var current: Child? { runs.last }

        func start() async throws {
            let child = try Child(
                name: "notify#\(runs.count + 1)", executable: Executables.named("roadsave-notify"),
                arguments: arguments, environment: environment)
            runs.append(child)
            guard
                await eventually(
                    timeout: 15, { !child.isRunning || [publishPort, catchUpPort].allSatisfy(Ports.isListening) }),
                child.isRunning
            else {
                throw TestFailure("the notifier did not start listening\n\(logs())")
            }
        }

        func kill() {
            for child in runs { child.kill() }
        }

        func removeData() {
            try? FileManager.default.removeItem(atPath: data)
        }

        func logs() -> String { runs.map { $0.tail(40) }.joined(separator: "\n") }
    }

    /// `roadsave tail --since 0 --show-position`: the printed (position, event) pairs.
    static func printed(_ tail: Child) -> [(position: Int, event: [String: Any])] {
        tail.jsonLines.compactMap { line in
            guard let object = line.value as? [String: Any], let position = object.number("position"),
                let event = object["event"] as? [String: Any]
            else { return nil }
            return (Int(position), event)
        }
    }

    // MARK: Tests

    /// A webhook receiver that is down while the notifier takes the events, and comes up later: it gets every event,
    /// each with its eventID and a valid signature, in order per device.
    @Test func webhookReceiverDownFirstGetsEverythingLaterInOrderPerDevice() async throws {
        try await withPipelineSlot {
            let events = Self.fleet(devices: 6, journeys: 3)
            let feed = try await EventFeed(events)
            defer { feed.kill() }
            let receiverPort = Ports.reserve(1)[0]
            let secret = "durability-secret-\(UUID().uuidString.prefix(8))"
            let notifier = Notifier(
                feed: feed,
                extra: [
                    "--webhooks", "http://127.0.0.1:\(receiverPort)/roadsave/events",
                    "--webhook-max-backoff", "0.5",
                ],
                environment: ["ROADSAVE_WEBHOOK_SECRET": secret])
            defer {
                notifier.kill()
                notifier.removeData()
            }
            try await notifier.start()

            // Everything is stored (and acknowledged to detection) while nobody receives.
            #expect(
                await eventually(timeout: 20) { feed.acknowledged == events.count },
                "\(feed.child.tail())\n\(notifier.logs())")
            // Waited for, not looked for after a pause: a busy machine may be slow to make the first attempt.
            let failed = await eventually(timeout: 20) {
                notifier.current?.stderr.contains { $0.text.contains("delivery failed, will retry") } == true
            }
            #expect(failed, "no failed delivery while the receiver was down\n\(notifier.logs())")
            // A graceful stop while nothing can be delivered is quick; the events wait in the outbox for the next run.
            let first = try #require(notifier.current)
            first.signal(SIGTERM)
            #expect(await first.waitForExit(timeout: 10) == 0, "\(first.tail())")
            try await notifier.start()

            let receiver = try Child.python(
                "webhook_receiver.py", ["--port", String(receiverPort), "--secret", secret],
                name: "late webhook receiver")
            defer { receiver.kill() }
            let deliveries = { receiver.jsonLines.dropFirst().compactMap { $0.value as? [String: Any] } }
            let expected = Self.distinctKeys(events)
            let all = await eventually(timeout: 30) {
                Set(deliveries().compactMap { ($0["body"] as? [String: Any]).map(Self.key) }).count >= expected.count
            }
            #expect(all, "not every event reached the receiver\n\(receiver.tail())\n\(notifier.logs())")

            let received = deliveries()
            #expect(received.allSatisfy { $0.bool("signatureValid") == true })
            for delivery in received {
                let body = try #require(delivery["body"] as? [String: Any])
                #expect(delivery.string("eventID") == body.string("eventID") && body.string("eventID") != nil)
            }
            // In order per device: the first delivery of each event comes after the first of the device's previous one.
            let firsts = Self.firstOccurrences(received.compactMap { $0["body"] as? [String: Any] }.map(Self.key))
            for device in 0..<6 {
                let user = "driver-\(device)"
                let order = firsts.filter { $0.contains(".\(user).") }
                #expect(order == expected.filter { $0.contains(".\(user).") }, "\(user) got \(order)")
            }
        }
    }

    /// The notifier SIGKILLed at a random moment (seeded, printed) while events flow, then started again on the same
    /// data directory: the NDJSON file holds each event exactly once, and a subscriber that drops positions it has
    /// seen and catches up (`roadsave tail --since 0`) gets each exactly once; a redelivered event is dropped.
    @Test func killedAndRestartedNotifierDeliversEachEventOnce() async throws {
        try await withPipelineSlot {
            let seed = TestSeed.make()
            var random = SplitMix64(state: seed)
            let killAfter = 0.3 + Double(random.next() % 2200) / 1000
            print("NotifierDurabilityTests: seed \(seed) (ROADSAVE_TEST_SEED), SIGKILL after \(killAfter) s")
            let context = "seed \(seed) (rerun with ROADSAVE_TEST_SEED=\(seed)), kill after \(killAfter) s"

            let events = Self.fleet(devices: 8, journeys: 7, duplicates: 12)
            let expected = Self.distinctKeys(events)
            let feed = try await EventFeed(events, rate: 50)
            defer { feed.kill() }
            let ndjson = FileManager.default.temporaryDirectory.appendingPathComponent(
                "roadsave-it-\(UUID().uuidString).ndjson")
            defer { try? FileManager.default.removeItem(at: ndjson) }
            let notifier = Notifier(feed: feed, extra: ["--ndjson", ndjson.path])
            defer {
                notifier.kill()
                notifier.removeData()
            }
            try await notifier.start()
            let feedStarted = now()
            let tail = try Child(
                name: "tail", executable: Executables.named("roadsave"),
                arguments: [
                    "tail", "--endpoint", notifier.publishEndpoint, "--catch-up-endpoint", notifier.catchUpEndpoint,
                    "--since", "0", "--show-position", "--timeout", "90",
                ])
            defer { tail.kill() }

            try await Task.sleep(nanoseconds: UInt64(max(0, feedStarted + killAfter - now()) * 1e9))
            notifier.current?.kill()
            try await notifier.start()

            #expect(
                await eventually(timeout: 40) { feed.acknowledged == events.count },
                "the notifier did not take every event (\(context))\n\(feed.child.tail())\n\(notifier.logs())")
            let ndjsonKeys = {
                ((try? String(contentsOf: ndjson, encoding: .utf8)) ?? "").split(separator: "\n").compactMap { line in
                    (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
                }.map(Self.key)
            }
            #expect(
                await eventually(timeout: 20) {
                    ndjsonKeys().count >= expected.count && Self.printed(tail).count >= expected.count
                },
                "\(context)\n\(tail.tail())\n\(notifier.logs())")
            // Anything written or printed twice would come within this.
            try await Task.sleep(nanoseconds: 1_500_000_000)

            // NDJSON: each event exactly once, in feed order per device.
            let written = ndjsonKeys()
            #expect(
                written.count == expected.count,
                "NDJSON lines: \(written.count), events: \(expected.count) (\(context))")
            #expect(Set(written) == Set(expected), "\(context)")
            for device in 0..<8 {
                let user = ".driver-\(device)."
                #expect(written.filter { $0.contains(user) } == expected.filter { $0.contains(user) }, "\(context)")
            }

            // The subscriber: each event once, with distinct positions, in position order.
            let printed = Self.printed(tail)
            #expect(
                printed.count == expected.count,
                "tail printed \(printed.count) of \(expected.count) (\(context))\n\(tail.tail())")
            #expect(Set(printed.map { Self.key($0.event) }) == Set(expected), "\(context)")
            #expect(
                printed.map(\.position) == printed.map(\.position).sorted()
                    && Set(printed.map(\.position)).count == printed.count,
                "positions \(printed.map(\.position)) (\(context))")

            // A subscriber that arrives afterwards catches up on everything: positions 1…N, each event once.
            let late = try Child(
                name: "late tail", executable: Executables.named("roadsave"),
                arguments: [
                    "tail", "--endpoint", notifier.publishEndpoint, "--catch-up-endpoint", notifier.catchUpEndpoint,
                    "--since", "0", "--show-position", "--count", String(expected.count), "--timeout", "20",
                ])
            defer { late.kill() }
            #expect(await late.waitForExit(timeout: 30) == 0, "\(late.tail())")
            let caughtUp = Self.printed(late)
            #expect(caughtUp.map(\.position) == Array(1...expected.count), "\(context)")
            #expect(caughtUp.map { Self.key($0.event) } == printed.map { Self.key($0.event) }, "\(context)")

            // Resuming after an eventID: the events after it. An unknown one is an error that says so.
            let middle = try #require(printed.dropFirst(expected.count / 2).first)
            let resumed = try Child(
                name: "resumed tail", executable: Executables.named("roadsave"),
                arguments: [
                    "tail", "--endpoint", notifier.publishEndpoint, "--catch-up-endpoint", notifier.catchUpEndpoint,
                    "--since", try #require(middle.event.string("eventID")), "--show-position",
                    "--count", String(expected.count - middle.position), "--timeout", "20",
                ])
            defer { resumed.kill() }
            #expect(await resumed.waitForExit(timeout: 30) == 0, "\(resumed.tail())")
            #expect(Self.printed(resumed).map(\.position) == Array((middle.position + 1)...expected.count))
            let unknown = try Child(
                name: "unknown tail", executable: Executables.named("roadsave"),
                arguments: [
                    "tail", "--endpoint", notifier.publishEndpoint, "--catch-up-endpoint", notifier.catchUpEndpoint,
                    "--since", "00000000-0000-8000-8000-000000000000", "--timeout", "20",
                ])
            defer { unknown.kill() }
            #expect(await unknown.waitForExit(timeout: 30) == 1)
            #expect(
                unknown.stderr.contains { $0.text.contains("unknown eventID 00000000-0000-8000-8000-000000000000") },
                "\(unknown.tail())")

            // The store says the same: sqlite3, as an operator would look.
            let store = notifier.data + "/notifier.sqlite"
            let count = try Child(
                name: "sqlite3", executable: Executables.env,
                arguments: [
                    "sqlite3", store,
                    "SELECT count(*), count(DISTINCT event_id) FROM events; SELECT count(*) FROM outbox;",
                ])
            _ = await count.waitForExit(timeout: 10)
            #expect(
                count.stdout.map(\.text) == ["\(expected.count)|\(expected.count)", "0"], "\(count.tail()) (\(context))"
            )
        }
    }

    static func firstOccurrences(_ keys: [String]) -> [String] {
        var seen = Set<String>()
        return keys.filter { seen.insert($0).inserted }
    }
}
