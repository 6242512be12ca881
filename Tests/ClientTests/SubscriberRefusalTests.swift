import Foundation
import RoadSaveClient
import RoadSaveTestKit
import Testing

/// What a subscriber cannot get past, as the typed errors a caller acts on, from a real notifier: a key its
/// allow-list does not list, a position older than the retention window or ahead of the newest event, a catch-up
/// endpoint that does not answer; and a key limited to one application, which the live endpoint of a notifier with
/// an older libzmq refuses and the catch-up endpoint takes: followed by catch-up, that application's events only.
@Suite("RoadSaveSubscriber refusals", .serialized)
struct SubscriberRefusalTests {
    static func configuration(_ notifier: Notifier, keys: RoadSaveKeys? = nil) -> RoadSaveSubscriber.Configuration {
        RoadSaveSubscriber.Configuration(
            endpoint: notifier.publishEndpoint, catchUpEndpoint: notifier.catchUpEndpoint, keys: keys)
    }

    /// The first error of a subscription from `position`.
    static func failure(_ subscriber: RoadSaveSubscriber, after position: UInt64?) async -> RoadSaveClientError? {
        do {
            for try await _ in subscriber.deliveries(after: position) {}
            return nil
        } catch {
            return error
        }
    }

    @Test func aKeyTheAllowListDoesNotListIsRefused() async throws {
        let folder = try await KeyFolder(
            prefix: "roadsave-client-keys", servers: ["notify"],
            clients: [("listed", ["--role", "subscriber"]), ("stranger", ["--role", "subscriber"])],
            listing: ["listed"])
        defer { folder.remove() }
        let feed = try await EventFeed(Fleet.events(devices: 1, journeys: 1))
        defer { feed.kill() }
        let notifier = Notifier(
            feed: feed, extra: ["--curve-secret-key", folder.serverSecret, "--allow", folder.allowList])
        defer { notifier.stop() }
        try await notifier.start()
        let stranger = RoadSaveKeys(
            secretKeyFile: folder.path("stranger.key"), serverPublicKeyFile: folder.serverPublic)
        let subscriber = try RoadSaveSubscriber(Self.configuration(notifier, keys: stranger))
        for position in [0, nil] as [UInt64?] {
            let error = await Self.failure(subscriber, after: position)
            guard case .keyRefused(let endpoint, _)? = error else {
                Issue.record("from \(String(describing: position)): \(String(describing: error))\n\(notifier.logs())")
                continue
            }
            #expect([notifier.publishEndpoint, notifier.catchUpEndpoint].contains(endpoint))
            #expect("\(error!)".contains("allow-list"), "says what to do: \(error!)")
        }
        // A key file that is not one is said before anything connects.
        do {
            _ = try RoadSaveSubscriber(
                Self.configuration(
                    notifier,
                    keys: RoadSaveKeys(secretKeyFile: folder.allowList, serverPublicKeyFile: folder.serverPublic)))
            Issue.record("an allow-list taken for a key file")
        } catch {
            guard case .unusableKey(let path, _) = error else { throw error }
            #expect(path == folder.allowList)
        }
    }

    /// A key listed for demo-app only, events of demo-app and other-app: the subscription gets demo-app's, each
    /// once, whatever the notifier's libzmq (before 4.3.5 its live endpoint refuses such a key and the subscriber
    /// follows by catch-up; from 4.3.5 it filters live).
    @Test func aKeyLimitedToAnApplicationGetsThatApplicationsEventsOnly() async throws {
        let folder = try await KeyFolder(
            prefix: "roadsave-client-limited", servers: ["notify"],
            clients: [("dash", ["--role", "subscriber", "--apps", "demo-app"])])
        defer { folder.remove() }
        let events = Fleet.events(devices: 4, journeys: 2, other: [1: "other-app", 3: "other-app"])
        let feed = try await EventFeed(events, rate: 20, paused: true)
        defer { feed.kill() }
        let notifier = Notifier(
            feed: feed, extra: ["--curve-secret-key", folder.serverSecret, "--allow", folder.allowList])
        defer { notifier.stop() }
        try await notifier.start()
        let dash = RoadSaveKeys(secretKeyFile: folder.path("dash.key"), serverPublicKeyFile: folder.serverPublic)
        let collector = Collector(try RoadSaveSubscriber(Self.configuration(notifier, keys: dash)), after: 0)
        feed.resume()
        let mine = events.filter { $0["app"] as? String == "demo-app" }
        let all = await eventually(timeout: 60) { collector.deliveries.count >= mine.count || collector.ended }
        #expect(all, "\(collector.keys), \(String(describing: collector.error))\n\(notifier.logs())")
        await collector.stop()
        #expect(collector.error == nil, "\(String(describing: collector.error))")
        SubscriberResumeTests.expectEachOnce(
            collector.keys, positions: collector.deliveries.map(\.position), of: mine, notifier.logs())
        let refusedLive = notifier.runs.contains { run in
            run.stderr.contains { $0.text.contains("live filtering needs libzmq 4.3.5") && $0.text.contains("dash") }
        }
        print("limited key: \(refusedLive ? "refused live, followed by catch-up" : "filtered live")")
    }

    @Test func aPositionOlderThanTheRetentionWindowOrAheadOfTheNewestIsSaid() async throws {
        let events = Fleet.events(devices: 2, journeys: 2)
        let feed = try await EventFeed(events)
        defer { feed.kill() }
        let notifier = Notifier(feed: feed, extra: ["--retention-age", "1s"])
        defer { notifier.stop() }
        try await notifier.start()
        let subscriber = try RoadSaveSubscriber(Self.configuration(notifier))
        // Every event stored (and published: the live sink took them).
        let stored = Collector(subscriber, after: 0)
        try #require(await eventually(timeout: 30) { stored.deliveries.count >= events.count || stored.ended })
        await stored.stop()

        let ahead = await Self.failure(subscriber, after: UInt64(events.count + 100))
        guard case .positionAhead(_, let position, _)? = ahead else {
            Issue.record("\(String(describing: ahead))")
            return
        }
        #expect(position == UInt64(events.count + 100))

        // The notifier deletes events past their retention age at its start (and every minute): started again
        // until it says it did.
        let deleted = await eventually(timeout: 60, interval: 0.5) {
            guard let current = notifier.current else { return false }
            if current.stderr.contains(where: { $0.text.contains("events past the retention age deleted") }) {
                return true
            }
            current.kill()
            _ = await current.waitForExit(timeout: 10)
            try? await notifier.start()
            return false
        }
        try #require(deleted, "\(notifier.logs())")
        let old = await Self.failure(subscriber, after: 1)
        guard case .positionTooOld(let endpoint, 1, let reason)? = old else {
            Issue.record("\(String(describing: old))\n\(notifier.logs())")
            return
        }
        #expect(endpoint == notifier.catchUpEndpoint)
        #expect(reason.contains("retention window"), "\(reason)")
    }

    @Test func aCatchUpEndpointThatDoesNotAnswerIsSaid() async throws {
        let silent = Ports.reserve(2)
        let subscriber = try RoadSaveSubscriber(
            RoadSaveSubscriber.Configuration(endpoint: Ports.tcp(silent[0]), catchUpEndpoint: Ports.tcp(silent[1])))
        let error = await Self.failure(subscriber, after: 5)
        guard case .catchUpUnreachable(let endpoint, let seconds)? = error else {
            Issue.record("\(String(describing: error))")
            return
        }
        #expect(endpoint == Ports.tcp(silent[1]) && seconds == 10)
    }

    @Test func badConfigurationIsSaidBeforeAnythingConnects() throws {
        for (configuration, mention) in [
            (RoadSaveSubscriber.Configuration(endpoint: "localhost:5554"), "endpoint"),
            (RoadSaveSubscriber.Configuration(catchUpEndpoint: "tcp://*:5555"), "catchUpEndpoint"),
            (RoadSaveSubscriber.Configuration(filter: .init(application: "")), "application"),
            (
                RoadSaveSubscriber.Configuration(
                    link: RoadSaveLinkTimings(heartbeat: 5, timeout: 2, connectTimeout: 2, reconnectMaximum: 2)),
                "link.timeout"
            ),
        ] {
            do {
                _ = try RoadSaveSubscriber(configuration)
                Issue.record("\(configuration) accepted")
            } catch {
                guard case .invalidConfiguration(let text) = error else { throw error }
                #expect(text.contains(mention), "\(text)")
            }
        }
    }
}
