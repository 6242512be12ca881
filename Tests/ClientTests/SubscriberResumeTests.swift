import Foundation
import RoadSaveClient
import RoadSaveTestKit
import SystemKit
import Testing

/// `RoadSaveSubscriber` against the notifier as a process (`roadsave-notify`, fed by the fake detection feed) over
/// real ZeroMQ: resuming from a stored position, through a notifier SIGKILLed and started again, through a reload of
/// its allow-list, and a subscriber's own process killed: every event once, in order per device, each typed.
@Suite("RoadSaveSubscriber resuming", .serialized)
struct SubscriberResumeTests {
    /// Each event of `events` once in `keys`, positions rising, in the feed's order per device.
    static func expectEachOnce(
        _ keys: [String], positions: [UInt64], of events: [[String: Any]], _ context: @autoclosure () -> String
    ) {
        let expected = events.map(Fleet.key)
        #expect(keys.count == expected.count, "\(keys.count) of \(expected.count) events\n\(context())")
        #expect(Set(keys) == Set(expected), "\(context())")
        #expect(zip(positions, positions.dropFirst()).allSatisfy { $0 < $1 }, "positions \(positions)")
        for device in Set(events.compactMap { $0["user"] as? String }) {
            #expect(Fleet.ofDevice(keys, device) == Fleet.ofDevice(expected, device), "\(device)")
        }
    }

    static func subscriber(_ notifier: Notifier, keys: RoadSaveKeys? = nil) throws -> RoadSaveSubscriber {
        try RoadSaveSubscriber(
            RoadSaveSubscriber.Configuration(
                endpoint: notifier.publishEndpoint, catchUpEndpoint: notifier.catchUpEndpoint, keys: keys))
    }

    @Test func everyEventOnceAcrossANotifierKilledAndRestarted() async throws {
        let events = Fleet.events(devices: 6, journeys: 4)
        let feed = try await EventFeed(events, rate: 25, paused: true)
        defer { feed.kill() }
        let notifier = Notifier(feed: feed)
        defer { notifier.stop() }
        try await notifier.start()
        let collector = Collector(try Self.subscriber(notifier), after: 0)
        feed.resume()
        let some = await eventually(timeout: 30) { collector.deliveries.count >= 20 || collector.ended }
        try #require(some, "\(collector.deliveries.count) delivered, \(String(describing: collector.error))")
        try notifier.requireCurrent().kill()
        try await notifier.start()
        let all = await eventually(timeout: 60) { collector.deliveries.count >= events.count || collector.ended }
        #expect(all, "\(collector.deliveries.count) delivered\n\(notifier.logs())")
        // A moment for a repeat to show is no proof; the positions are: a repeat would come with a position seen.
        await collector.stop()
        #expect(collector.error == nil, "\(String(describing: collector.error))")
        Self.expectEachOnce(
            collector.keys, positions: collector.deliveries.map(\.position), of: events, notifier.logs())
        #expect(collector.deliveries.allSatisfy { $0.event != nil && $0.json.contains("\"eventID\"") })
    }

    /// A subscriber stopped part of the way (its task cancelled: what a process that dies loses) and a new one from
    /// the last position it handled: together every event once.
    @Test func aNewSubscriptionResumesFromTheStoredPosition() async throws {
        let events = Fleet.events(devices: 4, journeys: 3)
        let feed = try await EventFeed(events, rate: 30, paused: true)
        defer { feed.kill() }
        let notifier = Notifier(feed: feed)
        defer { notifier.stop() }
        try await notifier.start()
        let subscriber = try Self.subscriber(notifier)
        let first = Collector(subscriber, after: 0)
        feed.resume()
        try #require(await eventually(timeout: 30) { first.deliveries.count >= 10 || first.ended })
        await first.stop()
        let stored = try #require(first.lastPosition)
        let second = Collector(subscriber, after: stored)
        let rest = await eventually(timeout: 60) {
            first.deliveries.count + second.deliveries.count >= events.count || second.ended
        }
        #expect(rest, "\(first.deliveries.count) + \(second.deliveries.count)\n\(notifier.logs())")
        await second.stop()
        let deliveries = first.deliveries + second.deliveries
        Self.expectEachOnce(
            first.keys + second.keys, positions: deliveries.map(\.position), of: events, notifier.logs())
    }

    /// `roadsave tail` (built on the library) SIGKILLed mid-stream, then started again with `--since` the last
    /// position it printed: the two runs print every event once.
    @Test func aSubscriberProcessKilledResumesFromTheLastPositionItPrinted() async throws {
        let events = Fleet.events(devices: 4, journeys: 4)
        let feed = try await EventFeed(events, rate: 20, paused: true)
        defer { feed.kill() }
        let notifier = Notifier(feed: feed)
        defer { notifier.stop() }
        try await notifier.start()
        func tail(since: Int, count: Int? = nil) throws -> Child {
            try Child(
                name: "tail", executable: Executables.roadsave,
                arguments: [
                    "tail", "--endpoint", notifier.publishEndpoint, "--catch-up-endpoint", notifier.catchUpEndpoint,
                    "--since", String(since), "--show-position", "--timeout", "120",
                ] + (count.map { ["--count", String($0)] } ?? []))
        }
        func printed(_ child: Child) -> [(position: Int, key: String)] {
            child.jsonLines.compactMap { line in
                guard let object = line.value as? [String: Any], let position = object["position"] as? Int,
                    let event = object["event"] as? [String: Any]
                else { return nil }
                return (position, Fleet.key(event))
            }
        }
        let first = try tail(since: 0)
        defer { first.kill() }
        feed.resume()
        try #require(await eventually(timeout: 30) { printed(first).count >= 12 }, "\(first.tail())")
        first.kill()
        _ = await first.waitForExit(timeout: 10)
        let before = printed(first)
        let stored = try #require(before.last?.position)
        let second = try tail(since: stored, count: events.count - before.count)
        defer { second.kill() }
        #expect(await second.waitForExit(timeout: 90) == 0, "\(second.tail())\n\(notifier.logs())")
        let all = before + printed(second)
        Self.expectEachOnce(
            all.map(\.key), positions: all.map { UInt64($0.position) }, of: events,
            "\(first.tail())\n\(second.tail())")
    }

    /// Sparse crash alerts (one at a time, as the test releases them) to a subscriber with a key, across a reload
    /// that drops every live connection (another subscriber key removed: SIGHUP), an alert released right after it,
    /// and a notifier SIGKILLed and started again: each once. The removed key's subscription ends with `keyRefused`.
    @Test func everyEventOnceAcrossAKeyReload() async throws {
        var folder = try await KeyFolder(
            prefix: "roadsave-client-reload", servers: ["notify"],
            clients: [("kept", ["--role", "subscriber"]), ("removed", ["--role", "subscriber"])])
        defer { folder.remove() }
        try await folder.add("other", ["--role", "subscriber"])
        try folder.writeAllowList(["kept", "removed"])
        let events = (0..<5).map { Fleet.crash("demo-app", user: "driver-\($0)", id: "reload-crash-\($0)", at: 1.7e9) }
        let feed = try await EventFeed(events, step: true)
        defer { feed.kill() }
        let notifier = Notifier(
            feed: feed, extra: ["--curve-secret-key", folder.serverSecret, "--allow", folder.allowList])
        defer { notifier.stop() }
        try await notifier.start()
        func keys(_ name: String) -> RoadSaveKeys {
            RoadSaveKeys(secretKeyFile: folder.path("\(name).key"), serverPublicKeyFile: folder.serverPublic)
        }
        let kept = Collector(try Self.subscriber(notifier, keys: keys("kept")), after: 0)
        let removed = Collector(try Self.subscriber(notifier, keys: keys("removed")), after: 0)
        func delivered(_ count: Int) async -> Bool {
            await eventually(timeout: 30) { kept.deliveries.count >= count || kept.ended }
        }
        feed.resume()
        try #require(await delivered(1), "\(notifier.logs())")
        try #require(await eventually(timeout: 30) { removed.deliveries.count >= 1 }, "\(notifier.logs())")

        // The reload drops every live connection; the next alert is released at once, while they reconnect.
        try folder.writeAllowList(["kept", "other"])
        try await notifier.reload(count: 1)
        feed.resume()
        #expect(await delivered(2), "\(kept.keys)\n\(notifier.logs())")
        feed.resume()
        #expect(await delivered(3), "\(kept.keys)\n\(notifier.logs())")
        let refused = await eventually(timeout: 30) { removed.ended }
        #expect(refused, "the removed key's subscription goes on: \(removed.keys)")
        if case .keyRefused? = removed.error {
        } else {
            Issue.record("the removed key ended with \(String(describing: removed.error)), not keyRefused")
        }

        // SIGKILL and a new start; the next alert right after it.
        try notifier.requireCurrent().kill()
        try await notifier.start()
        feed.resume()
        #expect(await delivered(4), "\(kept.keys)\n\(notifier.logs())")
        feed.resume()
        #expect(await delivered(5), "\(kept.keys)\n\(notifier.logs())")
        await kept.stop()
        #expect(kept.error == nil, "\(String(describing: kept.error))")
        Self.expectEachOnce(kept.keys, positions: kept.deliveries.map(\.position), of: events, notifier.logs())
        #expect(removed.keys == [Fleet.key(events[0])], "\(removed.keys)")
    }

    /// The brief's delegate: each event as its method, and its delivery (position, device) after it.
    @Test func aDelegateIsToldOfEachEventOnce() async throws {
        let events = Fleet.events(devices: 2, journeys: 2)
        let feed = try await EventFeed(events)
        defer { feed.kill() }
        let notifier = Notifier(feed: feed)
        defer { notifier.stop() }
        try await notifier.start()
        let subscriber = try Self.subscriber(notifier)
        let recorder = Recorder()
        let run = Task {
            try await subscriber.run(after: 0, delegate: recorder) { recorder.handled($0) }
        }
        let all = await eventually(timeout: 30) { recorder.calls.count >= events.count }
        run.cancel()
        _ = await run.result
        #expect(all, "\(recorder.calls)\n\(notifier.logs())")
        let expected = events.map { "\($0["event"] as? String ?? "?") \(Fleet.key($0))" }
        #expect(recorder.calls == expected, "\(recorder.calls)")
        #expect(recorder.positions == Array(1...UInt64(events.count)), "\(recorder.positions)")
    }

    /// Records each delegate call (its method and the event's key) and each position handled.
    final class Recorder: RoadSaveDelegate, Sendable {
        private let state = Locked<(calls: [String], positions: [UInt64], pending: String?)>(([], [], nil))
        var calls: [String] { state.withLock { $0.calls } }
        var positions: [UInt64] { state.withLock { $0.positions } }

        private func called(_ method: String, _ id: String) {
            state.withLock { $0.pending = "\(method) \(id)" }
        }

        func handled(_ delivery: RoadSaveSubscriber.Delivery) {
            state.withLock { state in
                // The device comes with the delivery, after the method.
                if let pending = state.pending, let event = delivery.event {
                    let method = String(pending.split(separator: " ")[0])
                    state.calls.append("\(Self.eventName(method)) \(Fleet.key(event))")
                }
                state.pending = nil
                state.positions.append(delivery.position)
            }
        }

        static func eventName(_ method: String) -> String {
            ["crashDidFollowUp": "crashFollowUp", "tripWasScored": "tripBehaviour"][method] ?? method
        }

        func tripDidStart(_ tripInfo: TripStartInfo) { called("tripDidStart", tripInfo.tripID) }
        func tripDidEnd(_ tripInfo: TripInfo) { called("tripDidEnd", tripInfo.tripID) }
        func crashDetected(_ crashInfo: CrashInfo) { called("crashDetected", crashInfo.crashID) }
        func crashDidFollowUp(_ followUp: CrashFollowUpInfo) { called("crashDidFollowUp", followUp.crashID) }
        func tripWasScored(_ behaviour: TripBehaviour) { called("tripWasScored", behaviour.tripID) }
    }
}
