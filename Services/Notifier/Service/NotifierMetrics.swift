import Metrics
import NotifierSinks

/// What the notifier counts for /metrics: events stored and dropped as duplicates, deliveries per sink, catch-up
/// requests by outcome. Touched only on the reactor thread.
struct NotifierMetrics {
    enum CatchUpOutcome: String, CaseIterable {
        /// Answered with events (or nothing new, at the head).
        case served
        /// Asked from a position older than the retention window: the subscriber has a gap it cannot fill here.
        case gap
        /// Not a valid request, or one this key may not make.
        case refused
    }

    private(set) var stored = 0
    private(set) var duplicates = 0
    private(set) var deliveredBySink: [String: Int] = [:]
    /// Outbox rows per sink: events stored and not yet taken by that sink. Counted once at the start, then kept by
    /// what is stored (a row for every sink) and taken, so a large backlog costs no count on every post.
    private(set) var outbox: [String: Int] = [:]
    /// Catch-up requests by outcome, as the catch-up server counted them.
    private(set) var catchUps = Dictionary(uniqueKeysWithValues: CatchUpOutcome.allCases.map { ($0.rawValue, 0) })

    /// The sinks and the rows their outboxes held at the start.
    mutating func opened(outboxes: [String: Int]) {
        outbox = outboxes
        for sink in outboxes.keys { deliveredBySink[sink, default: 0] += 0 }
    }

    mutating func stored(_ count: Int, duplicates: Int) {
        stored += count
        self.duplicates += duplicates
        for sink in outbox.keys { outbox[sink]! += count }
    }

    mutating func delivered(_ count: Int, sink: String) {
        deliveredBySink[sink, default: 0] += count
        outbox[sink, default: 0] -= count
    }

    mutating func setCatchUps(_ counts: [CatchUpOutcome: Int]) {
        for outcome in CatchUpOutcome.allCases { catchUps[outcome.rawValue] = counts[outcome] ?? 0 }
    }

    struct Gauges {
        /// Per webhook sink, the sink's own figures (retries happen inside it).
        var webhooks: [String: WebhookSink.Stats]
        var heldCatchUps: Int
        var silentUpstreams: Int
    }

    func families(_ gauges: Gauges) -> [MetricFamily] {
        let webhooks = gauges.webhooks.sorted { $0.key < $1.key }
        func webhookFamily(
            _ name: String, _ kind: MetricFamily.Kind, _ help: String,
            _ samples: (WebhookSink.Stats) -> [(outcome: String?, value: Int)]
        ) -> MetricFamily {
            MetricFamily(
                name: name, help: help, kind: kind,
                samples: webhooks.flatMap { sink, stats in
                    samples(stats).map { entry in
                        MetricFamily.Sample(
                            labels: [("sink", sink)] + (entry.outcome.map { [("outcome", $0)] } ?? []),
                            value: Double(entry.value))
                    }
                })
        }
        return [
            .single("roadsave_notifier_events_stored_total", .counter, "Events stored (once per eventID).", stored),
            .single(
                "roadsave_notifier_duplicates_dropped_total", .counter,
                "Events fetched again that were stored already (dropped by eventID).", duplicates),
            .labelled(
                "roadsave_notifier_deliveries_total", .counter, "Events taken by each sink.", label: "sink",
                deliveredBySink),
            .labelled(
                "roadsave_notifier_outbox_events", .gauge, "Events stored and not yet taken, by sink.", label: "sink",
                outbox),
            webhookFamily(
                "roadsave_notifier_webhook_deliveries_total", .counter,
                "Webhook events settled, by outcome (failed: refused for good by the receiver)."
            ) {
                [("delivered", $0.delivered), ("failed", $0.failed)]
            },
            webhookFamily(
                "roadsave_notifier_webhook_retries_total", .counter, "Webhook attempts after an event's first."
            ) {
                [(nil, $0.retried)]
            },
            webhookFamily(
                "roadsave_notifier_webhook_queued", .gauge,
                "Webhook events in the sink's hands: waiting, backing off or in flight."
            ) { [(nil, $0.queued)] },
            .labelled(
                "roadsave_notifier_catch_up_requests_total", .counter, "Catch-up requests, by outcome.",
                label: "outcome", catchUps),
            .single(
                "roadsave_notifier_catch_up_held", .gauge, "Catch-up long-polls waiting for events.",
                gauges.heldCatchUps),
            .single(
                "roadsave_notifier_upstreams_silent", .gauge, "Detection feeds that have not answered for a while.",
                gauges.silentUpstreams),
        ]
    }
}
