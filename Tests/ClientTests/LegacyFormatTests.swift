import Foundation
import RoadSaveClient
import RoadSaveTestKit
import Testing

/// A notifier run with `--publish-format legacy` (3.x keys): the library delivers each event's JSON as published,
/// without a typed event where the legacy keys make none, and `roadsave tail` (on the library) prints it as it came,
/// with `--topic` taking a raw prefix.
@Suite("Legacy format and raw topics", .serialized)
struct LegacyFormatTests {
    @Test func legacyEventsAreDeliveredAsPublished() async throws {
        let events = Fleet.events(devices: 2, journeys: 2)
        let feed = try await EventFeed(events)
        defer { feed.kill() }
        let notifier = Notifier(feed: feed, extra: ["--publish-format", "legacy"])
        defer { notifier.stop() }
        try await notifier.start()
        let collector = Collector(
            try RoadSaveSubscriber(
                RoadSaveSubscriber.Configuration(
                    endpoint: notifier.publishEndpoint, catchUpEndpoint: notifier.catchUpEndpoint)), after: 0)
        let all = await eventually(timeout: 30) { collector.deliveries.count >= events.count || collector.ended }
        await collector.stop()
        #expect(all, "\(collector.deliveries.count), \(String(describing: collector.error))\n\(notifier.logs())")
        let crashes = collector.deliveries.filter { $0.topic.hasPrefix("crashDetected.") }
        #expect(crashes.count == 4)
        // Capitalised confidences and `timestamp`: the legacy keys, as published; no model event made of them.
        #expect(crashes.allSatisfy { $0.json.contains("\"confidence\":\"High\"") && $0.json.contains("\"timestamp\"") })
        #expect(crashes.allSatisfy { $0.event == nil })
        #expect(collector.deliveries.map(\.position) == Array(1...UInt64(events.count)))

        // tail prints them as they came; --topic is a raw prefix.
        let tail = try Child(
            name: "tail", executable: Executables.roadsave,
            arguments: [
                "tail", "--endpoint", notifier.publishEndpoint, "--catch-up-endpoint", notifier.catchUpEndpoint,
                "--since", "0", "--topic", "crashDetected.demo-app.driver-1", "--count", "2", "--timeout", "30",
            ])
        defer { tail.kill() }
        #expect(await tail.waitForExit(timeout: 40) == 0, "\(tail.tail())")
        let printed = tail.lines
        #expect(
            printed == crashes.filter { $0.topic == "crashDetected.demo-app.driver-1" }.map(\.json), "\(tail.tail())")
    }
}
