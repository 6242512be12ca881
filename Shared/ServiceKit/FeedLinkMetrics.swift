import Feeds
import Metrics

/// The ZeroMQ request/reply sequence of the pull feeds a service reads (detection: ingest's journals; the notifier:
/// detection's outboxes), for /metrics. Data cannot have gaps on these links (each reply is taken only at the position
/// asked for); what can happen is a request unanswered and sent again, an answer to an earlier request arriving
/// after it was sent again (out of sequence, dropped), or the connection lost. Each is counted here, per endpoint,
/// with the seconds since the feed last answered (a live feed answers at least once per request's wait).
public enum FeedLinkMetrics {
    /// One feed as the service sees it.
    public struct Link: Sendable {
        public var endpoint: String
        public var statistics: FeedClient.Statistics
        /// Seconds since the feed last answered.
        public var unanswered: Double

        public init(endpoint: String, statistics: FeedClient.Statistics, unanswered: Double) {
            self.endpoint = endpoint
            self.statistics = statistics
            self.unanswered = unanswered
        }
    }

    public static func families(service: String, links: [Link]) -> [MetricFamily] {
        func family(_ name: String, _ help: String, _ value: (FeedClient.Statistics) -> Int) -> MetricFamily {
            MetricFamily(
                name: "roadsave_\(service)_feed_\(name)_total", help: help, kind: .counter,
                samples: links.map {
                    MetricFamily.Sample(labels: [("endpoint", $0.endpoint)], value: Double(value($0.statistics)))
                })
        }
        return [
            family("replies", "Feed answers taken (to the request outstanding).", \.replies),
            family("requests_resent", "Feed requests sent again because no answer came in time.", \.resent),
            family(
                "replies_out_of_sequence", "Feed answers to an earlier request than the one outstanding (dropped).",
                \.outOfSequence),
            family("replies_unreadable", "Feed answers that could not be read (dropped).", \.unreadable),
            family(
                "connections_lost",
                "Connections to the feed lost (the server went, or the link: heartbeats unanswered).",
                \.connectionsLost),
            MetricFamily(
                name: "roadsave_\(service)_feed_unanswered_seconds",
                help: "Seconds since the feed last answered (a live feed answers at least once a request's wait).",
                kind: .gauge,
                samples: links.map {
                    MetricFamily.Sample(labels: [("endpoint", $0.endpoint)], value: ($0.unanswered * 10).rounded() / 10)
                }),
        ]
    }
}
