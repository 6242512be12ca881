import Feeds
import SystemKit
import ZeroMQ

/// The notifier's link to one of detection's outbox feeds: the client, the feed's identity (learnt on first
/// contact) and the position stored for it. Used on the reactor thread only.
final class UpstreamFeed {
    let endpoint: String
    var client: FeedClient?
    /// The feed's ID, once the server has told it; the position is then the one stored for that ID.
    var feed: String?
    var position: UInt64 = 0
    /// When the feed last answered (monotonic seconds), and whether it has fallen silent since: one log line each
    /// way, readiness and the unanswered gauge.
    var hearing: LinkHearing
    /// The last reply reached the feed's head (the notifier has every event detection had then).
    var caughtUp = false
    var retry: TimerID?

    init(endpoint: String, silentAfter: Double, now: Double) {
        self.endpoint = endpoint
        hearing = LinkHearing(silentAfter: silentAfter, since: now)
    }
}
