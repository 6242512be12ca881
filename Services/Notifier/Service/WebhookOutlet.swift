import Foundation
import Logging
import NotifierSinks
import RoadSaveModel
import ZeroMQ

/// A webhook fed from its outbox, the one owner of its events' durability. The `WebhookSink` keeps per-device order
/// and retries without giving up (capped backoff); an entry is taken when its event was answered 2xx, or refused for
/// good by the receiver (a 4xx other than 408/429, or a 3xx: logged as dropped by the receiver, not retried). The
/// sink holds at most the outbox window, and events still held at a stop stay in the outbox and are sent again after
/// the next start (with the same eventID: receivers drop duplicates by it).
///
/// Lives on the reactor thread (made there, not `Sendable`); the sink's settlements and figures reach it through
/// `Reactor.post` and a `ReactorBound` (weak: the sink's callback does not keep the outlet alive).
final class WebhookOutlet: SinkOutlet {
    let key: String
    let name: String
    var window: OutboxWindow
    private var sink: WebhookSink!
    private let reactor: Reactor
    private let log: Log
    private let report: (OutletReport) -> Void
    /// The positions of the events in the sink's hands, by eventID (unique in the store).
    private var positions: [String: UInt64] = [:]
    /// Hands events to the sink in order (one task awaits each `deliver` before the next).
    private let feed: AsyncStream<RoadSaveEvent>.Continuation
    private let stream: AsyncStream<RoadSaveEvent>
    private var feeder: Task<Void, Never>?
    /// The sink's figures as last asked (`refreshStats`), for /metrics: the sink is an actor, the scrape is not.
    private(set) var lastStats: WebhookSink.Stats?
    private var statsAsked = false

    /// The outbox key of a webhook: its host and a hash of the whole URL (its path or query may carry a token).
    static func key(for url: URL) -> String {
        var host = url.host ?? "?"
        if let port = url.port { host += ":\(port)" }
        return "webhook:\(host)/\(StableID.make("webhook", url.absoluteString).prefix(8))"
    }

    init(
        options: WebhookSink.Options, capacity: Int, reactor: Reactor, log: Log,
        report: @escaping (OutletReport) -> Void
    ) {
        key = Self.key(for: options.url)
        window = OutboxWindow(capacity: capacity)
        self.reactor = reactor
        self.log = log
        self.report = report
        (stream, feed) = AsyncStream<RoadSaveEvent>.makeStream(bufferingPolicy: .unbounded)
        name = "webhook(\(WebhookSink.displayURL(options.url)))"
        let bound = ReactorBound(WeakReference(self), on: reactor)
        sink = WebhookSink(
            options: options, log: log,
            onSettled: { eventID, _ in
                reactor.post { _ in bound.value.object?.settled(eventID) }
            })
        let sink = sink!
        let stream = stream
        feeder = Task {
            for await event in stream { await sink.deliver(event) }
        }
    }

    /// Asks the sink for its figures; they arrive on the reactor thread into `lastStats`, one ask at a time.
    func refreshStats() {
        guard !statsAsked else { return }
        statsAsked = true
        let sink = sink!
        let reactor = reactor
        let bound = ReactorBound(WeakReference(self), on: reactor)
        Task {
            let stats = await sink.stats
            reactor.post { _ in
                bound.value.object?.lastStats = stats
                bound.value.object?.statsAsked = false
            }
        }
    }

    func take(_ entries: [StoredEvent]) {
        for entry in entries {
            positions[entry.event.eventID] = entry.position
            feed.yield(entry.event)
        }
    }

    /// On the reactor thread.
    private func settled(_ eventID: String) {
        guard let position = positions.removeValue(forKey: eventID) else { return }
        // Delivered, or refused for good by the receiver (the sink logged it): done with either way.
        report(OutletReport(sink: key, taken: [position]))
    }

    func stopTaking() {
        feed.finish()
    }

    func finisher(deadline: Double) -> @Sendable () async -> Void {
        let feeder = feeder
        let sink = sink!
        let log = log
        let name = name
        return {
            await feeder?.value
            let left = await sink.shutdown(deadline: deadline)
            if left > 0 {
                log.info(
                    "events left in the outbox at stop: sent after the next start",
                    ["sink": name, "events": String(left)])
            }
        }
    }
}
