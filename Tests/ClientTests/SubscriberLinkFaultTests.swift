import Foundation
import RoadSaveClient
import RoadSaveTestKit
import SystemKit
import Testing

@testable import RoadSaveClient

/// A subscriber whose links to the notifier fail (issue 43's loss drill: a catch-up after a reconnect that the lossy
/// link leaves unanswered): the catch-up is asked again, the live events that came meanwhile wait for it, and every
/// event arrives once, in order, with no error for the caller.
@Suite("RoadSaveSubscriber through link faults", .serialized)
struct SubscriberLinkFaultTests {
    @Test func aCatchUpLeftUnansweredAfterAReconnectIsAskedAgainAndNothingIsMissed() async throws {
        let events = Fleet.events(devices: 4, journeys: 4)
        let feed = try await EventFeed(events, rate: 4, paused: true)
        defer { feed.kill() }
        let notifier = Notifier(feed: feed)
        defer { notifier.stop() }
        try await notifier.start()
        let publish = try LinkRelay(to: notifier.publishPort)
        let catchUp = try LinkRelay(to: notifier.catchUpPort)
        defer {
            publish.stop()
            catchUp.stop()
        }
        let subscriber = try RoadSaveSubscriber(
            RoadSaveSubscriber.Configuration(endpoint: publish.endpoint, catchUpEndpoint: catchUp.endpoint))
        let notices = Locked<[SubscriberNotice]>([])
        let collected = Locked<(deliveries: [RoadSaveSubscriber.Delivery], error: RoadSaveClientError?)>(([], nil))
        // The library's own way with a failed catch-up (`.ends`): an error would end the subscription.
        let deliveries = subscriber.deliveries(
            from: .position(0), reconnectCatchUpFailure: .ends,
            notices: { notice in notices.withLock { $0.append(notice) } })
        let task = Task {
            do throws(RoadSaveClientError) {
                for try await delivery in deliveries { collected.withLock { $0.deliveries.append(delivery) } }
            } catch {
                collected.withLock { $0.error = error }
            }
        }
        defer { task.cancel() }
        var count: Int { collected.withLock { $0.deliveries.count } }
        var failed: Bool { collected.withLock { $0.error != nil } }
        func unanswered() -> Int {
            notices.withLock { $0.count { if case .reconnectCatchUpUnanswered = $0 { true } else { false } } }
        }
        feed.resume()
        try #require(await eventually(timeout: 30) { count >= 4 || failed }, "\(notifier.logs())")
        // The catch-up endpoint unreachable, the live connection forgotten (silent): the subscriber's heartbeats drop
        // it, it connects anew, and its catch-up of what was published meanwhile goes unanswered.
        catchUp.cut()
        publish.forget()
        let asked = await eventually(timeout: 60) { unanswered() >= 1 || failed }
        #expect(asked && !failed, "\(notices.withLock { $0 })\n\(String(describing: collected.withLock { $0.error }))")
        catchUp.heal()
        let all = await eventually(timeout: 90) { count >= events.count || failed }
        task.cancel()
        _ = await task.value
        let (delivered, error) = collected.withLock { ($0.deliveries, $0.error) }
        #expect(all && error == nil, "\(delivered.count) of \(events.count), \(String(describing: error))")
        SubscriberResumeTests.expectEachOnce(
            delivered.compactMap(\.event).map(Fleet.key), positions: delivered.map(\.position), of: events,
            notifier.logs())
        #expect(notices.withLock { $0.contains { if case .catchingUp = $0 { true } else { false } } })
    }
}
