import DetectionEngine
import Metrics

/// What detection shows on /metrics: the fleet's statistics, the core's counts (events by kind, crash dismissals by
/// reason, how far behind the journals), and what the shell measures itself, platform calls by kind with their
/// latency and failures. Touched only on the reactor thread.
struct DetectionMetrics {
    enum PlatformCall: String, CaseIterable {
        /// Settings for an application (auto-monitor, or a control command that needs them).
        case settings
        /// A suspected crash's evaluation.
        case evaluation
    }

    private var latency = Dictionary(uniqueKeysWithValues: PlatformCall.allCases.map { ($0, Histogram.seconds()) })
    private var failures = Dictionary(uniqueKeysWithValues: PlatformCall.allCases.map { ($0, 0) })

    /// How long detection may be behind and still be ready: a journal read to its head within this long is caught up.
    static let readyLag = 5.0

    mutating func called(_ call: PlatformCall, seconds: Double, failed: Bool) {
        latency[call]!.observe(seconds)
        if failed { failures[call]! += 1 }
    }

    /// Records behind the journals' heads, from the positions behind and the records a position has held so far
    /// (positions are chunks, of any size).
    static func lagRecords(positionsBehind: UInt64, counts: DetectionCore.Counts) -> Double {
        guard counts.positionsRead > 0 else { return Double(positionsBehind) }
        return (Double(positionsBehind) * Double(counts.recordsRead) / Double(counts.positionsRead)).rounded()
    }

    struct Gauges {
        var positionsBehind: UInt64
        var lagSeconds: Double?
        var devicesInMemory: Int
        var devicesOutOfMemory: Int
        var tripsInProgress: Int
        var outbox: Int?
        var platformCallsInFlight: Int
        var checkpoints: Int
        var streams: Int
        var journalGapsUnacknowledged = 0
    }

    func families(fleet: FleetStatistics, counts: DetectionCore.Counts, gauges: Gauges) -> [MetricFamily] {
        var families: [MetricFamily] = [
            .single(
                "roadsave_detection_records_read_total", .counter, "Records read from the journals.", counts.recordsRead
            ),
            .labelled(
                "roadsave_detection_records_total", .counter, "Records taken by the engines, by outcome.",
                label: "outcome",
                [
                    "applied": fleet.applied, "duplicate": fleet.duplicates, "late": fleet.late,
                    "far_in_future": fleet.farInFuture, "not_monitored": fleet.notMonitored,
                ]),
            .single(
                "roadsave_detection_lag_positions", .gauge,
                "Journal positions (stored batches) not read yet, all journals.",
                Double(gauges.positionsBehind)),
            .single(
                "roadsave_detection_lag_records", .gauge,
                "Records not read yet, all journals (positions behind times the records a position has held).",
                Self.lagRecords(positionsBehind: gauges.positionsBehind, counts: counts)),
            .labelled(
                "roadsave_detection_devices", .gauge, "Devices known, by where their state is.", label: "state",
                ["in_memory": gauges.devicesInMemory, "out_of_memory": gauges.devicesOutOfMemory]),
            .single(
                "roadsave_detection_devices_active", .gauge, "Devices in memory (sent within --device-memory-idle).",
                gauges.devicesInMemory),
            .single(
                "roadsave_detection_trips_in_progress", .gauge, "Devices in memory with a trip in progress.",
                gauges.tripsInProgress),
            .labelled(
                "roadsave_detection_events_total", .counter, "Events emitted, by kind.", label: "event",
                counts.eventsByKind),
            .labelled(
                "roadsave_detection_crash_dismissals_total", .counter, "Suspected crashes dismissed, by reason.",
                label: "reason", counts.dismissalsByReason),
            MetricFamily(
                name: "roadsave_detection_platform_call_seconds", help: "Platform calls, by kind: time to answer.",
                kind: .histogram,
                samples: PlatformCall.allCases.flatMap {
                    latency[$0]!.samples(labels: [("call", $0.rawValue)])
                }),
            .labelled(
                "roadsave_detection_platform_failures_total", .counter,
                "Platform calls that failed after their retries (settings unavailable, crash confidence unknown).",
                label: "call", Dictionary(uniqueKeysWithValues: failures.map { ($0.key.rawValue, $0.value) })),
            .single(
                "roadsave_detection_platform_calls_in_flight", .gauge, "Platform calls not answered yet.",
                gauges.platformCallsInFlight),
            .single("roadsave_detection_checkpoints_total", .counter, "Checkpoints written.", gauges.checkpoints),
            .single(
                "roadsave_detection_unapplied_records_total", .counter,
                "Records not applied (late, far in the future) kept in the store's unapplied table.",
                counts.unappliedKept),
            .single(
                "roadsave_detection_late_impacts_screened_total", .counter,
                "Impact records too late for ordering that were screened anyway.", fleet.lateImpactsScreened),
            .single(
                "roadsave_detection_watermark_forced_releases_total", .counter,
                "Devices of a gateway's stream released by the clock after its watermark stood still for --watermark-hold.",
                fleet.forcedReleases),
            .single(
                "roadsave_detection_gateway_streams", .gauge, "Gateways' streams (journal, shard, gateway) known.",
                gauges.streams),
            .single(
                "roadsave_detection_journal_gaps_total", .counter,
                "Journal gaps found by this process: records deleted by ingest's retention before detection read them.",
                counts.journalGapsFound),
            .single(
                "roadsave_detection_journal_gaps_unacknowledged", .gauge,
                "Journal gaps (found by this process or kept in the store) no operator has acknowledged: detection is not ready.",
                gauges.journalGapsUnacknowledged),
        ]
        if let lag = gauges.lagSeconds {
            families.append(
                .single(
                    "roadsave_detection_lag_seconds", .gauge,
                    "Seconds since every journal was last read to its head (0: caught up).", lag))
        }
        if let outbox = gauges.outbox {
            families.append(
                .single(
                    "roadsave_detection_outbox_events", .gauge,
                    "Events stored and not yet acknowledged by the notifier.", outbox))
        }
        return families
    }
}
