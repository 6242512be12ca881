import CommandSettings
import DetectionEngine
import Foundation
import Logging
import Metrics
import PlatformHTTP
import ServiceKit
import ZeroMQ

/// detection's settings: flags, environment or a JSON file (see `ServiceConfiguration`).
public struct DetectionConfiguration: Sendable {
    /// sensor-ingest journals to read records from (each a ROUTER serving its journal feed).
    public var recordsEndpoints = Settings.recordsEndpoint.defaultValue
    /// Control commands (ROUTER; clients use REQ or DEALER).
    public var controlEndpoint = Settings.controlEndpoint.defaultValue
    /// The outbox feed the notifier reads events from (ROUTER).
    public var eventsEndpoint = Settings.eventsEndpoint.defaultValue
    /// Where the checkpoint, the inputs since and the outbox are kept.
    public var dataDirectory = Settings.dataDirectory.defaultValue
    /// Seconds between checkpoints of the fleet (a restart re-runs at most about this much of the journals).
    public var checkpointInterval = Settings.checkpointInterval.defaultValue
    /// Seconds on the clock without a record after which a device with nothing in flight leaves memory (written to
    /// the store with the next checkpoint, read back when it sends again); 0 keeps every device in memory.
    public var deviceMemoryIdle = Settings.deviceMemoryIdle.defaultValue
    /// Seconds a journal may leave detection without an answer before the clock runs on without it: silent
    /// devices' timers fire again (a dead ingest must not hold a crash decision for ever), and records it still
    /// holds are then late.
    public var silentJournalGrace = 10.0
    /// Seconds a journal may leave detection without an answer before it is taken as gone: until then its
    /// gateways' watermarks are held (a partition is not a gateway standing still); then the clock decides for
    /// every device, so a dead ingest holds a crash decision at most this long.
    public var journalSilenceLimit = Settings.journalSilenceLimit.defaultValue
    /// The platform's base URL; nil for the embedded platform.
    public var platformURL: URL?
    public var platformTimeout = PlatformSettings.timeout.defaultValue
    public var platformAttempts = PlatformSettings.attempts.defaultValue
    /// Thresholds replacing the platform's (a JSON file of DetectionSettings fields).
    public var settingsFile: String?
    /// Configure and monitor a device (mode all, automatic trips) when its first record arrives, as `replay` does.
    public var autoMonitor = Settings.autoMonitor.defaultValue
    /// Seconds of event time a record may arrive late and still be put in order (gateways that send no watermark).
    public var reorderWindow = OrderingSettings.reorderWindow.defaultValue
    /// Seconds a gateway's watermark may stand still while its devices wait for it, before the clock releases them.
    public var watermarkHold = Settings.watermarkHold.defaultValue
    /// Only the devices of this shard (`i/n`, by a stable hash of the device), for running several detections.
    public var shard: (index: Int, count: Int)?
    public var logLevel = ServiceSettings.logLevel.defaultValue
    /// How its ZeroMQ connections notice a dead peer and come back (`--link-heartbeat` and the rest).
    public var linkTimings = LinkTimings.standard
    /// Where /metrics, /healthz and /readyz are served (`--metrics-endpoint`); nil: nowhere.
    public var metricsEndpoint: MetricsEndpoint?
    /// CurveZMQ on the control socket (`--curve-secret-key`, `--allow`: operator keys) and the outbox feed (service
    /// keys); nil: plaintext (loopback or `--insecure`).
    public var curve: CurveServerKeys?
    /// CurveZMQ client keys of the links to `recordsEndpoints`, one each in order (`--curve-server-key`, ingest's
    /// public key; this service's own pair as the client key); nil: plaintext (loopback or `--insecure`).
    public var recordsCurve: [CurveClientKeys]?

    public init() {}

    /// The fleet's options from these settings.
    public var fleetOptions: DeviceFleet.Options {
        var options = DeviceFleet.Options()
        options.ordering.window = reorderWindow
        options.autoMonitor = autoMonitor
        options.watermarkHold = watermarkHold
        return options
    }

    /// `0/2`, or `all` without `--shard`: kept in the store, so two shards never share a data directory.
    public var shardDescription: String {
        shard.map { "\($0.index)/\($0.count)" } ?? "all"
    }

    /// How this detection names itself to the journals (they keep what each consumer has not checkpointed).
    public var consumerName: String {
        shard.map { "detection shard \($0.index)/\($0.count)" } ?? "detection"
    }

    /// detection's own settings; the platform's and the ordering's are shared with `replay` and `report`.
    public enum Settings {
        public static let recordsEndpoint = ServiceSettings.connected(
            flag: "--records-endpoint", environment: "ROADSAVE_RECORDS_CONNECT", key: "recordsEndpoint",
            default: ["tcp://127.0.0.1:5551"],
            help: "sensor-ingest journal(s) to read records from, comma-separated (one per ingest)",
            none: "--records-endpoint: give at least one sensor-ingest journal endpoint")
        public static let controlEndpoint = ServiceSettings.bound(
            flag: "--control-endpoint", environment: "ROADSAVE_CONTROL_ENDPOINT", key: "controlEndpoint",
            default: "tcp://*:5552", help: "ZeroMQ endpoint for control commands (ROUTER; clients use REQ)")
        public static let eventsEndpoint = ServiceSettings.bound(
            flag: "--events-endpoint", environment: "ROADSAVE_EVENTS_ENDPOINT", key: "eventsEndpoint",
            default: "tcp://*:5553", help: "ZeroMQ endpoint the notifier reads events from (ROUTER, pull)")
        // "dataDir" until the key was made the one sensor-ingest and the notifier use.
        public static let dataDirectory = ServiceSettings.dataDirectory(
            key: "dataDirectory", default: "roadsave-data/detect",
            help: "directory of detection's store (checkpoint, inputs since, outbox); one per shard"
        ).formerly("dataDir")
        public static let checkpointInterval = Setting<Double>(
            flag: "--checkpoint-interval", environment: "ROADSAVE_CHECKPOINT_INTERVAL", key: "checkpointInterval",
            default: 2, range: 0.1...3600,
            help: "seconds between checkpoints (a restart re-runs about this much of the journals)")
        public static let deviceMemoryIdle = Setting<Double>(
            flag: "--device-memory-idle", environment: "ROADSAVE_DEVICE_MEMORY_IDLE", key: "deviceMemoryIdle",
            default: 3600, range: 0...31_536_000,
            help:
                "seconds without a record after which an idle device (no trip, no crash pending) leaves memory for the store, back when it sends again; 0 keeps all in memory"
        )
        public static let autoMonitor = Setting<Bool>(
            flag: "--auto-monitor", environment: "ROADSAVE_AUTO_MONITOR", key: "autoMonitor", default: true,
            help: "configure and monitor a device when its first record arrives (true/false)")
        public static let watermarkHold = Setting<Double>(
            flag: "--watermark-hold", environment: "ROADSAVE_WATERMARK_HOLD", key: "watermarkHold",
            default: DeviceFleet.Options.defaultWatermarkHold, range: 0...3600,
            help:
                "seconds a gateway's watermark may stand still (the gateway, its link or ingest down) while its devices' records and decisions wait for it; then the clock releases them, logged and counted"
        )
        public static let journalSilenceLimit = Setting<Double>(
            flag: "--journal-silence-limit", environment: "ROADSAVE_JOURNAL_SILENCE_LIMIT", key: "journalSilenceLimit",
            default: DetectionCore.Options.defaultJournalSilenceLimit, range: 10...86_400,
            help:
                "seconds a journal may go unanswered (ingest or the link to it down) while its gateways' watermarks are held; after it the ingest is taken as gone and the clock decides for its devices (crash decisions included), and records it gives later may be too late"
        )
        public static let shard = Setting<String?>.text(
            flag: "--shard", environment: "ROADSAVE_SHARD", key: "shard",
            help: "take only shard I of N of the devices, as I/N (N as sensor-ingest's --shards)")
        public static let shardBase = Setting<Int>(
            flag: "--shard-base", environment: "ROADSAVE_SHARD_BASE", key: "shardBase", default: 0, shown: "0",
            help:
                "the number --shard gives the first shard: 0, or 1 for an orchestrator's task slot (Docker Swarm's {{.Task.Slot}} counts from 1)"
        ) {
            text, flag throws(CommandLineOptions.UsageError) in
            guard let base = Int(text), [0, 1].contains(base) else {
                throw .init("\(flag) must be 0 or 1, got \"\(text)\"")
            }
            return base
        }
        public static let curveServerKey = CurveSettings.upstreamSpec(upstream: "sensor-ingest")
    }

    public static let specs: [any AnySetting] =
        [
            Settings.recordsEndpoint, Settings.controlEndpoint, Settings.eventsEndpoint, Settings.dataDirectory,
            Settings.checkpointInterval, Settings.deviceMemoryIdle,
        ]
        + PlatformSettings.all + [Settings.autoMonitor] + OrderingSettings.all
        + [
            Settings.watermarkHold, Settings.journalSilenceLimit, Settings.shard, Settings.shardBase,
            ServiceSettings.logLevel, ServiceMetrics.spec,
        ]
        + LinkSettings.specs + CurveSettings.specs + [Settings.curveServerKey]

    public static func load(_ source: ServiceConfiguration) throws(CommandLineOptions.UsageError)
        -> DetectionConfiguration
    {
        var configuration = DetectionConfiguration()
        let records = try source.value(Settings.recordsEndpoint)
        guard Set(records).count == records.count else {
            throw .init("--records-endpoint: an endpoint is listed twice")
        }
        configuration.recordsEndpoints = records
        configuration.controlEndpoint = try source.value(Settings.controlEndpoint)
        configuration.eventsEndpoint = try source.value(Settings.eventsEndpoint)
        configuration.platformURL = try source.value(PlatformSettings.url)
        configuration.platformTimeout = try source.value(PlatformSettings.timeout)
        configuration.platformAttempts = try source.value(PlatformSettings.attempts)
        configuration.settingsFile = try source.value(PlatformSettings.settingsFile)
        configuration.autoMonitor = try source.value(Settings.autoMonitor)
        configuration.reorderWindow = try source.value(OrderingSettings.reorderWindow)
        configuration.watermarkHold = try source.value(Settings.watermarkHold)
        configuration.journalSilenceLimit = try source.value(Settings.journalSilenceLimit)
        configuration.dataDirectory = try source.value(Settings.dataDirectory)
        configuration.checkpointInterval = try source.value(Settings.checkpointInterval)
        configuration.deviceMemoryIdle = try source.value(Settings.deviceMemoryIdle)
        let base = try source.value(Settings.shardBase)
        if let text = try source.value(Settings.shard) {
            let parts = text.split(separator: "/").compactMap { Int($0) }
            guard parts.count == 2, parts[1] >= 1, (base..<parts[1] + base).contains(parts[0]) else {
                throw .init(
                    "--shard must be I/N with \(base) ≤ I < N\(base == 0 ? "" : " + 1") (--shard-base \(base)), got \"\(text)\""
                )
            }
            // Kept 0-based from here on: the store's shard and the journal's requests count from 0.
            configuration.shard = (parts[0] - base, parts[1])
        }
        configuration.logLevel = try source.value(ServiceSettings.logLevel)
        configuration.metricsEndpoint = try ServiceMetrics.endpoint(source)
        configuration.linkTimings = try LinkSettings.timings(source)
        configuration.curve = try CurveSettings.serverKeys(
            source,
            endpoints: [
                ("--control-endpoint", configuration.controlEndpoint),
                ("--events-endpoint", configuration.eventsEndpoint),
            ])
        configuration.recordsCurve = try CurveSettings.upstreamKeys(
            source, flag: "--records-endpoint",
            endpoints: configuration.recordsEndpoints,
            own: configuration.curve)
        return configuration
    }

    /// The platform these settings describe (checked at start, so a bad settings file stops the service).
    public func makePlatform() throws -> any Platform {
        try PlatformSetup.platform(
            url: platformURL,
            options: .init(requestTimeout: platformTimeout, attempts: platformAttempts),
            settingsFile: settingsFile)
    }
}
