import Feeds
import Logging
import RoadSaveModel
import SystemKit
import Wire
import ZeroMQ

/// Pulling from detection: what the notifier asks each detection feed for, what it stores of a reply (and skips),
/// when it asks again, and when a feed counts as silent.
extension NotifierServing {
    func fetch(_ upstream: UpstreamFeed) {
        guard !stopping, let client = upstream.client else { return }
        client.fetch(
            FeedRequest(
                id: 0, feed: upstream.feed, after: upstream.position, maxItems: Self.fetchSize,
                acknowledged: upstream.position, consumer: "notifier",
                waitMilliseconds: Int(configuration.heartbeatInterval * 1000), pack: true))
    }

    private func fetchLater(_ upstream: UpstreamFeed, loop: ReactorLoop) {
        guard !stopping, upstream.retry == nil else { return }
        upstream.retry = loop.schedule(after: Self.retryPause) { [unowned self] in
            upstream.retry = nil
            fetch(upstream)
        }
    }

    func replied(
        _ upstream: UpstreamFeed, loop: ReactorLoop, header: FeedReplyHeader, items: FeedItems
    ) {
        if case .answersAgain(let unanswered) = upstream.hearing.answered(at: loop.now) {
            log.info(
                "detection's feed answers again",
                ["endpoint": upstream.endpoint, "silentSeconds": String(Int(unanswered.rounded()))])
        }
        guard !stopping, let store else { return }
        if let error = header.error {
            log.warning(
                "detection's feed refused the request; asking again shortly",
                [
                    "endpoint": upstream.endpoint, "feed": header.feed, "after": String(upstream.position),
                    "error": error,
                ])
            return fetchLater(upstream, loop: loop)
        }
        guard header.feed == upstream.feed else {
            // First contact, or detection has a new store: read that feed from the position stored for it.
            do {
                upstream.position = try store.upstreamPosition(feed: header.feed)
            } catch {
                log.error(
                    "cannot read the stored feed position; asking again shortly",
                    ["endpoint": upstream.endpoint, "error": "\(error)"])
                return fetchLater(upstream, loop: loop)
            }
            log.info(
                "reading detection's outbox",
                [
                    "endpoint": upstream.endpoint, "feed": header.feed,
                    "after": String(upstream.position), "head": String(header.head),
                    "previousFeed": upstream.feed ?? "none",
                ])
            upstream.feed = header.feed
            return fetch(upstream)
        }
        guard header.after == upstream.position else { return fetch(upstream) }
        upstream.caughtUp = items.isEmpty || header.to >= header.head
        var events: [(event: RoadSaveEvent, body: [UInt8])] = []
        events.reserveCapacity(items.count)
        for (offset, item) in items.enumerated() {
            do {
                events.append((try EventBody.decode(item), Array(item)))
            } catch {
                // It can never be read: waiting for it would stop every later event. Said loudly, with its place.
                log.error(
                    "unreadable event from detection skipped",
                    [
                        "endpoint": upstream.endpoint, "feed": header.feed, "item": String(offset + 1),
                        "after": String(header.after), "error": "\(error)",
                    ])
            }
        }
        if !items.isEmpty || header.to != upstream.position {
            do {
                let stored = try store.store(events, feed: header.feed, position: header.to)
                counters.stored(stored.count, duplicates: events.count - stored.count)
                if stored.count < events.count {
                    log.info(
                        "events already stored dropped (same eventID)",
                        ["endpoint": upstream.endpoint, "events": String(events.count - stored.count)])
                }
                upstream.position = header.to
                if !stored.isEmpty {
                    for outlet in outlets {
                        outlet.window.stored()
                        pump(outlet, loop: loop)
                    }
                    // Held catch-up long-polls that may now have something: answered after the commit.
                    catchUp?.stored()
                }
            } catch {
                log.error(
                    "events not stored; asking detection again shortly",
                    ["endpoint": upstream.endpoint, "events": String(events.count), "error": "\(error)"])
                return fetchLater(upstream, loop: loop)
            }
        }
        fetch(upstream)
    }

    /// A feed answers at least once a fetch's wait while it is there: one that has not for that long plus the
    /// time heartbeats take to find a dead connection is silent (detection or the link to it is down).
    var upstreamSilentAfter: Double { configuration.heartbeatInterval + configuration.linkTimings.heartbeatTimeout }

    func checkSilence(_ loop: ReactorLoop) {
        for upstream in upstreams {
            guard case .fellSilent(let unanswered) = upstream.hearing.check(at: loop.now) else { continue }
            log.warning(
                "no answer from detection's feed: detection or the link to it is down",
                ["endpoint": upstream.endpoint, "silentSeconds": String(Int(unanswered.rounded()))])
        }
    }
}
