import Feeds
import Metrics

/// The ZeroMQ request/reply sequence of the pull feeds a service reads (detection: ingest's journals; the notifier:
/// detection's outboxes), for /metrics. Data cannot have gaps on these links (each reply is taken only at the position
/// asked for); what can happen is a request unanswered and sent again, or an answer to an earlier request arriving
/// after it was sent again (out of sequence, dropped). Both are counted here, per endpoint.
public enum FeedLinkMetrics {
    public static func families(service: String, links: [(endpoint: String, statistics: FeedClient.Statistics)])
        -> [MetricFamily]
    {
        func family(_ name: String, _ help: String, _ value: (FeedClient.Statistics) -> Int) -> MetricFamily {
            MetricFamily(
                name: "roadsave_\(service)_feed_\(name)_total", help: help, kind: .counter,
                samples: links.map {
                    MetricFamily.Sample(labels: [("endpoint", $0.endpoint)], value: Double(value($0.statistics)))
                })
        }
        return [
            family("requests_resent", "Feed requests sent again because no answer came in time.", \.resent),
            family(
                "replies_out_of_sequence", "Feed answers to an earlier request than the one outstanding (dropped).",
                \.outOfSequence),
            family("replies_unreadable", "Feed answers that could not be read (dropped).", \.unreadable),
        ]
    }
}
