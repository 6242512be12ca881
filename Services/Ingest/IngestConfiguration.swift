import CommandSettings
import Foundation
import Logging
import Metrics
import ServiceKit
import Wire
import ZeroMQ

/// sensor-ingest's settings: flags, environment or a JSON file (see `ServiceConfiguration`).
public struct IngestConfiguration: Sendable {
    /// Where gateways connect (ROUTER; gateways use DEALER).
    public var gatewayEndpoint = Settings.gatewayEndpoint.defaultValue
    /// Where detection pulls the journal's records (ROUTER serving the journal feed; detection uses DEALER).
    public var recordsEndpoint = Settings.recordsEndpoint.defaultValue
    /// The data directory; the journal is `journal.sqlite` in it.
    public var dataDirectory = Settings.dataDirectory.defaultValue
    /// Seconds a chunk of records is kept at least; after that it goes once every detection shard reading it has
    /// checkpointed past it.
    public var retentionAge = Settings.retentionAge.defaultValue
    /// Largest journal in bytes (0: no limit). Over it, checkpointed records go first, then the oldest even if
    /// unread (logged as a warning).
    public var journalMaximumBytes = Int64(Settings.journalMaximumBytes.defaultValue)
    /// The applicationIDs whose records are accepted. Credentials: from a file or the environment, never logged.
    public var applications: Set<String> = []
    /// Largest batch accepted, in records.
    public var maximumBatch = Settings.maximumBatch.defaultValue
    /// Largest frame a gateway may send, in bytes (ZMQ_MAXMSGSIZE on the gateway socket): a gateway that sends a
    /// larger one is disconnected unanswered, before any of it is held. The decoders refuse more than 64 MiB anyway.
    public var maximumMessageBytes = Int64(Settings.maximumMessageBytes.defaultValue)
    /// Most distinct devices (clientUserIDs) per application; records of further new devices are refused in the ack
    /// (field `user`). Known devices are kept in the journal, so the limit holds across restarts.
    public var maximumDevicesPerApplication = Settings.maximumDevicesPerApplication.defaultValue
    /// Records a second each gateway key may send on average (0: no limit); without keys every plaintext gateway
    /// shares one limit. A batch over it is refused whole in the ack (field `rate`, `retryAfterMs`). Default: 0 on a
    /// loopback gateway endpoint, `defaultRateLimit` on any other.
    public var rateLimit = 0.0
    /// Records a key may send at once after a pause; default one second's worth of `rateLimit`.
    public var rateBurst = 0.0
    /// The rate limit of a gateway endpoint that other machines can reach, when none is given: far above what one
    /// gateway of thousands of phones sends, low enough that one key cannot take a whole ingest.
    public static let defaultRateLimit = 100_000.0
    /// Seconds a device may send nothing before its slot (--max-devices-per-app) is freed; 0: never freed.
    public var deviceIdleAge = Settings.deviceIdleAge.defaultValue
    /// Records are stored per shard, by a stable hash of the device, so several detection processes can each read a
    /// share of the devices. Fixed for a journal: changing it needs a new data directory.
    public var shards = Settings.shards.defaultValue
    public var logLevel = ServiceSettings.logLevel.defaultValue
    /// How its ZeroMQ connections notice a dead peer and come back (`--link-heartbeat` and the rest).
    public var linkTimings = LinkTimings.standard
    /// Where /metrics, /healthz and /readyz are served (`--metrics-endpoint`); nil: nowhere.
    public var metricsEndpoint: MetricsEndpoint?
    /// CurveZMQ on the gateway socket (`--curve-secret-key`, `--allow`); nil: plaintext (loopback or `--insecure`).
    public var curve: CurveServerKeys?

    public init() {}

    /// sensor-ingest's settings.
    public enum Settings {
        public static let gatewayEndpoint = ServiceSettings.bound(
            flag: "--gateway-endpoint", environment: "ROADSAVE_GATEWAY_ENDPOINT", key: "gatewayEndpoint",
            default: "tcp://*:5550", help: "ZeroMQ endpoint gateways connect to (ROUTER)")
        public static let recordsEndpoint = ServiceSettings.bound(
            flag: "--records-endpoint", environment: "ROADSAVE_RECORDS_ENDPOINT", key: "recordsEndpoint",
            default: "tcp://*:5551", help: "ZeroMQ endpoint detection pulls the journal's records from (ROUTER)")
        public static let dataDirectory = ServiceSettings.dataDirectory(
            key: "dataDirectory", default: "roadsave-data/ingest",
            help: "data directory; the journal is journal.sqlite in it")
        public static let retentionAge = Setting<Double>(
            flag: "--retention-age", environment: "ROADSAVE_RETENTION_AGE", key: "retentionAge", default: 86_400,
            range: 0...(10 * 365 * 86_400),
            help: "seconds records are kept at least; older ones go once every detection shard has checkpointed them")
        public static let journalMaximumBytes = Setting<Int>(
            flag: "--journal-max-bytes", environment: "ROADSAVE_JOURNAL_MAX_BYTES", key: "journalMaxBytes", default: 0,
            range: 0...1_000_000_000_000_000,
            help: "largest journal in bytes, 0 for no limit; over it the oldest go, unread if need be (logged)")
        public static let applications = Setting<String?>.text(
            flag: "--applications", environment: "ROADSAVE_APPLICATIONS", key: "applications",
            help: "accepted applicationIDs, comma-separated (credentials: masked in output)", secret: true)
        public static let applicationsFile = Setting<String?>.text(
            flag: "--applications-file", environment: "ROADSAVE_APPLICATIONS_FILE", key: "applicationsFile",
            help: "file of accepted applicationIDs, one a line (# comments allowed)")
        public static let maximumBatch = Setting<Int>(
            flag: "--max-batch", environment: "ROADSAVE_MAX_BATCH", key: "maxBatch", default: 50_000,
            range: 1...10_000_000,
            help: "largest batch accepted, in records")
        public static let maximumMessageBytes = Setting<Int>(
            flag: "--max-message-bytes", environment: "ROADSAVE_MAX_MESSAGE_BYTES", key: "maxMessageBytes",
            default: MessagePack.Limits.maximumBytes, range: 1024...(1 << 31),
            help:
                "largest frame a gateway may send, in bytes; a gateway sending a larger one is disconnected unanswered")
        public static let maximumDevicesPerApplication = Setting<Int>(
            flag: "--max-devices-per-app", environment: "ROADSAVE_MAX_DEVICES_PER_APP", key: "maxDevicesPerApp",
            default: 100_000, range: 1...100_000_000,
            help:
                "most devices (clientUserIDs) per application; records of further new devices are refused in the ack (field user), known devices go on"
        )
        public static let deviceIdleAge = Setting<Double>(
            flag: "--device-idle-age", environment: "ROADSAVE_DEVICE_IDLE_AGE", key: "deviceIdleAge",
            default: 30 * 86_400, range: 0...(100 * 365 * 86_400),
            help:
                "seconds a device may send nothing before its --max-devices-per-app slot is freed (it is admitted again if there is room), 0 never"
        )
        public static let rateLimit = Setting<Double?>(
            flag: "--rate-limit", environment: "ROADSAVE_RATE_LIMIT", key: "rateLimit",
            help:
                "records a second each gateway key may send (plaintext gateways share one limit), 0 for none; a batch over it is refused whole in the ack (field rate, retryAfterMs) (default: 0 on a loopback --gateway-endpoint, \(SettingText.number(defaultRateLimit)) otherwise)"
        ) {
            text, flag throws(CommandLineOptions.UsageError) in try SettingText.number(text, flag: flag, range: 0...1e9)
        }
        public static let rateBurst = Setting<Double?>(
            flag: "--rate-burst", environment: "ROADSAVE_RATE_BURST", key: "rateBurst",
            help: "records a gateway key may send at once after a pause (default: one second's worth of --rate-limit)"
        ) {
            text, flag throws(CommandLineOptions.UsageError) in
            try SettingText.number(text, flag: flag, range: 1...1e12)
        }
        public static let shards = Setting<Int>(
            flag: "--shards", environment: "ROADSAVE_SHARDS", key: "shards", default: 16, range: 1...1024,
            help: "number of device shards the journal stores records by (fixed per data directory)")
    }

    public static let specs: [any AnySetting] =
        [
            Settings.gatewayEndpoint, Settings.recordsEndpoint, Settings.dataDirectory, Settings.retentionAge,
            Settings.journalMaximumBytes, Settings.applications, Settings.applicationsFile, Settings.maximumBatch,
            Settings.maximumMessageBytes, Settings.maximumDevicesPerApplication, Settings.deviceIdleAge,
            Settings.rateLimit,
            Settings.rateBurst, Settings.shards, ServiceSettings.logLevel, ServiceMetrics.spec,
        ]
        + LinkSettings.specs + CurveSettings.specs

    /// Reads and validates the settings; the error says which one is wrong and why.
    public static func load(_ source: ServiceConfiguration) throws(CommandLineOptions.UsageError) -> IngestConfiguration
    {
        var configuration = IngestConfiguration()
        configuration.gatewayEndpoint = try source.value(Settings.gatewayEndpoint)
        configuration.recordsEndpoint = try source.value(Settings.recordsEndpoint)
        configuration.dataDirectory = try source.value(Settings.dataDirectory)
        configuration.retentionAge = try source.value(Settings.retentionAge)
        configuration.journalMaximumBytes = Int64(try source.value(Settings.journalMaximumBytes))
        var applications = Set(
            (try source.value(Settings.applications) ?? "").split(separator: ",")
                .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
        if let path = try source.value(Settings.applicationsFile) {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw .init("--applications-file: cannot read \(path)")
            }
            let text = String(decoding: data, as: UTF8.self)
            for line in text.split(whereSeparator: \.isNewline) {
                let id = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0]
                    .trimmingCharacters(in: .whitespaces)
                if !id.isEmpty { applications.insert(id) }
            }
        }
        guard !applications.isEmpty else {
            throw .init(
                "no applications configured: set --applications, ROADSAVE_APPLICATIONS or --applications-file (every record of an unknown application would be refused)"
            )
        }
        configuration.applications = applications
        configuration.maximumBatch = try source.value(Settings.maximumBatch)
        configuration.maximumMessageBytes = Int64(try source.value(Settings.maximumMessageBytes))
        configuration.maximumDevicesPerApplication = try source.value(Settings.maximumDevicesPerApplication)
        configuration.deviceIdleAge = try source.value(Settings.deviceIdleAge)
        let loopback = CurveServerKeys.isLoopback(configuration.gatewayEndpoint)
        configuration.rateLimit = try source.value(Settings.rateLimit) ?? (loopback ? 0 : defaultRateLimit)
        if let burst = try source.value(Settings.rateBurst) {
            guard configuration.rateLimit > 0 else {
                throw .init("--rate-burst needs a --rate-limit above 0 (there is no rate limit to burst over)")
            }
            configuration.rateBurst = burst.rounded(.up)
        } else {
            configuration.rateBurst = max(1, configuration.rateLimit.rounded(.up))
        }
        configuration.shards = try source.value(Settings.shards)
        configuration.logLevel = try source.value(ServiceSettings.logLevel)
        configuration.metricsEndpoint = try ServiceMetrics.endpoint(source)
        configuration.linkTimings = try LinkSettings.timings(source)
        configuration.curve = try CurveSettings.serverKeys(
            source,
            endpoints: [
                ("--gateway-endpoint", configuration.gatewayEndpoint),
                ("--records-endpoint", configuration.recordsEndpoint),
            ])
        return configuration
    }
}
