import DetectionEngine
import Foundation
import Metrics
import PlatformHTTP
import RoadSaveModel
import ServiceKit
import ZeroMQ

/// detection's settings: flags, environment or a JSON file (see `ServiceConfiguration`).
public struct DetectionConfiguration: Sendable {
    /// sensor-ingest journals to read records from (each a ROUTER serving its journal feed).
    public var recordsEndpoints = ["tcp://127.0.0.1:5551"]
    /// Control commands (ROUTER; clients use REQ or DEALER).
    public var controlEndpoint = "tcp://*:5552"
    /// The outbox feed the notifier reads events from (ROUTER).
    public var eventsEndpoint = "tcp://*:5553"
    /// Where the checkpoint, the inputs since and the outbox are kept.
    public var dataDirectory = "roadsave-data/detect"
    /// Seconds between checkpoints of the fleet (a restart re-runs at most about this much of the journals).
    public var checkpointInterval = 2.0
    /// Seconds on the clock without a record after which a device with nothing in flight leaves memory (written to
    /// the store with the next checkpoint, read back when it sends again); 0 keeps every device in memory.
    public var deviceMemoryIdle = 3600.0
    /// Seconds a journal may leave detection without an answer before the clock runs on without it: silent
    /// devices' timers fire again (a dead ingest must not hold a crash decision for ever), and records it still
    /// holds are then late.
    public var silentJournalGrace = 10.0
    /// The platform's base URL; nil for the embedded platform.
    public var platformURL: URL?
    public var platformTimeout = 5.0
    public var platformAttempts = 3
    /// Thresholds replacing the platform's (a JSON file of DetectionSettings fields).
    public var settingsFile: String?
    /// Configure and monitor a device (mode all, automatic trips) when its first record arrives, as `replay` does.
    public var autoMonitor = true
    /// Seconds of event time a record may arrive late and still be put in order (gateways that send no watermark).
    public var reorderWindow = DeviceFleet.Options().ordering.window
    /// Seconds a gateway's watermark may stand still while its devices wait for it, before the clock releases them.
    public var watermarkHold = DeviceFleet.Options.defaultWatermarkHold
    /// Only the devices of this shard (`i/n`, by a stable hash of the device), for running several detections.
    public var shard: (index: Int, count: Int)?
    public var logLevel = Log.Level.info
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

    public static let specs: [SettingSpec] = [
        SettingSpec(flag: "--records-endpoint", environment: "ROADSAVE_RECORDS_CONNECT", key: "recordsEndpoint",
                    default: "tcp://127.0.0.1:5551",
                    help: "sensor-ingest journal(s) to read records from, comma-separated (one per ingest)"),
        SettingSpec(flag: "--control-endpoint", environment: "ROADSAVE_CONTROL_ENDPOINT", key: "controlEndpoint",
                    default: "tcp://*:5552", help: "ZeroMQ endpoint for control commands (ROUTER; clients use REQ)"),
        SettingSpec(flag: "--events-endpoint", environment: "ROADSAVE_EVENTS_ENDPOINT", key: "eventsEndpoint",
                    default: "tcp://*:5553", help: "ZeroMQ endpoint the notifier reads events from (ROUTER, pull)"),
        SettingSpec(flag: "--data-dir", environment: "ROADSAVE_DATA_DIR", key: "dataDir", default: "roadsave-data/detect",
                    help: "directory of detection's store (checkpoint, inputs since, outbox); one per shard"),
        SettingSpec(flag: "--checkpoint-interval", environment: "ROADSAVE_CHECKPOINT_INTERVAL", key: "checkpointInterval",
                    default: "2", help: "seconds between checkpoints (a restart re-runs about this much of the journals)"),
        SettingSpec(flag: "--device-memory-idle", environment: "ROADSAVE_DEVICE_MEMORY_IDLE", key: "deviceMemoryIdle",
                    default: "3600",
                    help: "seconds without a record after which an idle device (no trip, no crash pending) leaves memory for the store, back when it sends again; 0 keeps all in memory"),
        SettingSpec(flag: "--platform", environment: "ROADSAVE_PLATFORM_URL", key: "platform",
                    help: "RoadSave platform base URL (default: the embedded platform)"),
        SettingSpec(flag: "--platform-timeout", environment: "ROADSAVE_PLATFORM_TIMEOUT", key: "platformTimeout",
                    default: "5", help: "seconds per platform request"),
        SettingSpec(flag: "--platform-attempts", environment: "ROADSAVE_PLATFORM_ATTEMPTS", key: "platformAttempts",
                    default: "3", help: "attempts per platform call, with exponential backoff"),
        SettingSpec(flag: "--settings", environment: "ROADSAVE_SETTINGS_FILE", key: "settings",
                    help: "JSON thresholds replacing the platform's settings"),
        SettingSpec(flag: "--auto-monitor", environment: "ROADSAVE_AUTO_MONITOR", key: "autoMonitor", default: "true",
                    help: "configure and monitor a device when its first record arrives (true/false)"),
        SettingSpec(flag: "--reorder-window", environment: "ROADSAVE_REORDER_WINDOW", key: "reorderWindow",
                    default: "10", help: "seconds of event time a record may arrive late and still be put in order"),
        SettingSpec(flag: "--watermark-hold", environment: "ROADSAVE_WATERMARK_HOLD", key: "watermarkHold",
                    default: "60",
                    help: "seconds a gateway's watermark may stand still (the gateway, its link or ingest down) while its devices' records and decisions wait for it; then the clock releases them, logged and counted"),
        SettingSpec(flag: "--shard", environment: "ROADSAVE_SHARD", key: "shard",
                    help: "take only shard I of N of the devices, as I/N (N as sensor-ingest's --shards)"),
        SettingSpec(flag: "--shard-base", environment: "ROADSAVE_SHARD_BASE", key: "shardBase", default: "0",
                    help: "the number --shard gives the first shard: 0, or 1 for an orchestrator's task slot (Docker Swarm's {{.Task.Slot}} counts from 1)"),
        SettingSpec(flag: "--log-level", environment: "ROADSAVE_LOG_LEVEL", key: "logLevel", default: "info",
                    help: "debug, info, warning or error"),
        ServiceMetrics.spec,
    ] + CurveSettings.specs + [CurveSettings.upstreamSpec(upstream: "sensor-ingest")]

    public static func load(_ source: ServiceConfiguration) throws(CommandLineOptions.UsageError) -> DetectionConfiguration {
        var configuration = DetectionConfiguration()
        var records: [String] = []
        for part in source.string("recordsEndpoint")!.split(separator: ",") {
            let text = part.trimmingCharacters(in: .whitespaces)
            guard !text.isEmpty else { continue }
            records.append(try Endpoint.validate(text, flag: "--records-endpoint", connecting: true))
        }
        guard !records.isEmpty else { throw .init("--records-endpoint: give at least one sensor-ingest journal endpoint") }
        guard Set(records).count == records.count else { throw .init("--records-endpoint: an endpoint is listed twice") }
        configuration.recordsEndpoints = records
        configuration.controlEndpoint = try Endpoint.validate(source.string("controlEndpoint")!, flag: "--control-endpoint")
        configuration.eventsEndpoint = try Endpoint.validate(source.string("eventsEndpoint")!, flag: "--events-endpoint")
        if let text = source.string("platform") {
            guard let url = URL(string: text), let scheme = url.scheme, ["http", "https"].contains(scheme), url.host != nil else {
                throw .init("--platform: \"\(text)\" is not an http:// or https:// URL")
            }
            configuration.platformURL = url
        }
        configuration.platformTimeout = try source.double("platformTimeout", range: 0.1...300) ?? 5
        configuration.platformAttempts = Int(try source.double("platformAttempts", range: 1...20) ?? 3)
        configuration.settingsFile = source.string("settings")
        configuration.autoMonitor = try source.bool("autoMonitor")
        configuration.reorderWindow = try source.double("reorderWindow", range: 0...600) ?? configuration.reorderWindow
        configuration.watermarkHold = try source.double("watermarkHold", range: 0...3600) ?? configuration.watermarkHold
        configuration.dataDirectory = source.string("dataDir") ?? configuration.dataDirectory
        guard !configuration.dataDirectory.isEmpty else { throw .init("--data-dir must not be empty") }
        configuration.checkpointInterval = try source.double("checkpointInterval", range: 0.1...3600) ?? 2
        configuration.deviceMemoryIdle = try source.double("deviceMemoryIdle", range: 0...31_536_000) ?? 3600
        let shardBase = source.string("shardBase") ?? "0"
        guard let base = Int(shardBase), [0, 1].contains(base) else {
            throw .init("--shard-base must be 0 or 1, got \"\(shardBase)\"")
        }
        if let text = source.string("shard") {
            let parts = text.split(separator: "/").compactMap { Int($0) }
            guard parts.count == 2, parts[1] >= 1, (base..<parts[1] + base).contains(parts[0]) else {
                throw .init("--shard must be I/N with \(base) ≤ I < N\(base == 0 ? "" : " + 1") (--shard-base \(base)), got \"\(text)\"")
            }
            // Kept 0-based from here on: the store's shard and the journal's requests count from 0.
            configuration.shard = (parts[0] - base, parts[1])
        }
        configuration.logLevel = try LogLevelSetting.parse(source.string("logLevel") ?? "info")
        configuration.metricsEndpoint = try ServiceMetrics.endpoint(source)
        configuration.curve = try CurveSettings.serverKeys(source, endpoints: [("--control-endpoint", configuration.controlEndpoint),
                                                                              ("--events-endpoint", configuration.eventsEndpoint)])
        configuration.recordsCurve = try CurveSettings.upstreamKeys(source, flag: "--records-endpoint",
                                                                    endpoints: configuration.recordsEndpoints,
                                                                    own: configuration.curve)
        return configuration
    }

    /// The platform these settings describe (checked at start, so a bad settings file stops the service).
    public func makePlatform() throws -> any Platform {
        try PlatformSetup.platform(url: platformURL,
                                   options: .init(requestTimeout: platformTimeout, attempts: platformAttempts),
                                   settingsFile: settingsFile)
    }
}
