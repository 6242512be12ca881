import Foundation
import Logging
import RecordCodecs
import RoadSaveModel
import RoadSaveTestKit
import Storage
import Testing
import Wire

@testable import NotifierService

/// The notifier in this process against a real `FeedServer` over a fake source of events.
@Suite(.serialized) struct NotifierRunTests {
    func configuration(folder: String, events: String) -> NotifierConfiguration {
        var configuration = NotifierConfiguration()
        configuration.dataDirectory = folder + "/data"
        configuration.eventsEndpoints = [events]
        configuration.publishEndpoint = "tcp://127.0.0.1:*"
        configuration.catchUpEndpoint = "tcp://127.0.0.1:*"
        configuration.ndjsonPath = folder + "/events.ndjson"
        configuration.heartbeatInterval = 0.2
        configuration.logLevel = .error
        return configuration
    }

    /// Rows left in every outbox, read with a connection of the test's own.
    func outboxRows(_ storePath: String) throws -> Int64? {
        try SQLiteDatabase(path: storePath).integer("SELECT count(*) FROM outbox")
    }

    func lines(_ path: String) -> [String] {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    @Test func eventsFlowToEverySinkWithPositionsAndAreAcknowledgedOnlyOnceStored() async throws {
        let folder = Fixtures.folder()
        defer { Fixtures.remove(folder) }
        let storePath = folder + "/data/notifier.sqlite"
        let source = FakeEventSource(feedID: "detection-store-1", storePath: storePath)
        let detection = try await FakeDetection(source: source)
        let notifier = try RunningNotifier(configuration(folder: folder, events: detection.endpoint))
        let (publish, catchUpEndpoint) = try await notifier.service.boundEndpoints()
        let subscriber = try await TestSubscriber(endpoint: try #require(publish))
        // Slow joiner: the subscription reaches the PUB socket shortly after the connection.
        try await Task.sleep(for: .milliseconds(500))

        let events = (0..<10).flatMap { Fixtures.journey("user-\($0 % 4)", $0) }
        // A redelivered event (same eventID) at the end of detection's feed is dropped.
        try await detection.add(events + [events[4]])
        #expect(await eventually(timeout: 60) { subscriber.received.count >= events.count })
        let received = subscriber.received
        #expect(received.map(\.position) == Array(1...UInt64(events.count)))
        #expect(received.map(\.topic) == events.map { "\($0.name).\($0.device.app).\($0.device.user)" })
        #expect(received.map(\.body) == events.map { $0.json(.current) })

        // Every acknowledgement was of a position already committed, and they reach the feed's end.
        #expect(await eventually(timeout: 60) { source.acknowledgements.current.last?.acknowledged == 31 })
        let acknowledgements = source.acknowledgements.current
        #expect(!acknowledgements.isEmpty)
        for ack in acknowledgements { #expect(ack.acknowledged <= ack.committed, "acknowledged \(ack.acknowledged)") }
        #expect(zip(acknowledgements, acknowledgements.dropFirst()).allSatisfy { $0.acknowledged <= $1.acknowledged })

        // NDJSON: each event once, in order.
        let ndjson = folder + "/events.ndjson"
        #expect(await eventually(timeout: 60) { lines(ndjson).count >= events.count })
        #expect(lines(ndjson) == events.map { $0.json(.current) })

        // Catch-up: by position and by eventID, with a prefix.
        let endpoint = try #require(catchUpEndpoint).replacingOccurrences(of: "0.0.0.0", with: "127.0.0.1")
        let all = try await catchUp(endpoint, CatchUpRequest(start: .position(0)))
        #expect(all.events.map(\.position) == Array(1...30))
        #expect(all.head == 30 && all.next == 30)
        let crashes = try await catchUp(
            endpoint,
            CatchUpRequest(
                start: .eventID(events[2].eventID),
                prefix: "crashDetected.app-1.user-1"))
        #expect(crashes.events.map(\.topic).allSatisfy { $0 == "crashDetected.app-1.user-1" })
        #expect(crashes.events.map(\.position) == [5, 17, 29])

        // The outboxes are empty once every sink took every event.
        #expect(await eventually(timeout: 60) { (try? outboxRows(storePath)) == 0 })
        await notifier.stop()
        #expect(notifier.failure.current == nil)
        await subscriber.stop()

        // Restarted, with detection on a new store that serves everything again: only new events are stored and
        // published, after the positions already given.
        source.feedID = "detection-store-2"
        let more = Fixtures.journey("user-9", 99)
        try await detection.add(more)
        let again = try RunningNotifier(configuration(folder: folder, events: detection.endpoint))
        let subscriber2 = try await TestSubscriber(
            endpoint: try #require(try await again.service.boundEndpoints().publish))
        #expect(await eventually(timeout: 60) { lines(ndjson).count >= events.count + more.count })
        try await Task.sleep(for: .milliseconds(300))
        #expect(lines(ndjson) == (events + more).map { $0.json(.current) })
        let store = try NotifierStore(path: storePath, sinks: [PublisherOutlet.sinkKey, NDJSONOutlet.key(for: ndjson)])
        #expect(try store.head() == 33)
        #expect(try store.upstreamPosition(feed: "detection-store-2") == 34)
        #expect(try store.upstreamPosition(feed: "detection-store-1") == 31)
        store.close()
        await again.stop()
        #expect(again.failure.current == nil)
        await subscriber2.stop()
        await detection.stop()
    }
}
