import Foundation
import Metrics
import RoadSaveModel
import ServiceKit
import Wire
import ZeroMQ

/// sensor-ingest's settings: flags, environment or a JSON file (see `ServiceConfiguration`).
public struct IngestConfiguration: Sendable {
    /// Where gateways connect (ROUTER; gateways use DEALER).
    public var gatewayEndpoint = "tcp://*:5550"
    /// Where detection pulls the journal's records (ROUTER serving the journal feed; detection uses DEALER).
    public var recordsEndpoint = "tcp://*:5551"
    /// The data directory; the journal is `journal.sqlite` in it.
    public var dataDirectory = "roadsave-data/ingest"
    /// Seconds a chunk of records is kept at least; after that it goes once every detection shard reading it has
    /// checkpointed past it.
    public var retentionAge = 86_400.0
    /// Largest journal in bytes (0: no limit). Over it, checkpointed records go first, then the oldest even if
    /// unread (logged as a warning).
    public var journalMaximumBytes: Int64 = 0
    /// The applicationIDs whose records are accepted. Credentials: from a file or the environment, never logged.
    public var applications: Set<String> = []
    /// Largest batch accepted, in records.
    public var maximumBatch = 50_000
    /// Largest frame a gateway may send, in bytes (ZMQ_MAXMSGSIZE on the gateway socket): a gateway that sends a
    /// larger one is disconnected unanswered, before any of it is held. The decoders refuse more than 64 MiB anyway.
    public var maximumMessageBytes = Int64(MessagePack.Limits.maximumBytes)
    /// Most distinct devices (clientUserIDs) per application; records of further new devices are refused in the ack
    /// (field `user`). Known devices are kept in the journal, so the limit holds across restarts.
    public var maximumDevicesPerApplication = 100_000
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
    public var deviceIdleAge = 30 * 86_400.0
    /// Records are stored per shard, by a stable hash of the device, so several detection processes can each read a
    /// share of the devices. Fixed for a journal: changing it needs a new data directory.
    public var shards = 16
    public var logLevel = Log.Level.info
    /// Where /metrics, /healthz and /readyz are served (`--metrics-endpoint`); nil: nowhere.
    public var metricsEndpoint: MetricsEndpoint?
    /// CurveZMQ on the gateway socket (`--curve-secret-key`, `--allow`); nil: plaintext (loopback or `--insecure`).
    public var curve: CurveServerKeys?

    public init() {}

    public static let specs: [SettingSpec] = [
        SettingSpec(flag: "--gateway-endpoint", environment: "ROADSAVE_GATEWAY_ENDPOINT", key: "gatewayEndpoint",
                    default: "tcp://*:5550", help: "ZeroMQ endpoint gateways connect to (ROUTER)"),
        SettingSpec(flag: "--records-endpoint", environment: "ROADSAVE_RECORDS_ENDPOINT", key: "recordsEndpoint",
                    default: "tcp://*:5551", help: "ZeroMQ endpoint detection pulls the journal's records from (ROUTER)"),
        SettingSpec(flag: "--data-dir", environment: "ROADSAVE_DATA_DIR", key: "dataDirectory",
                    default: "roadsave-data/ingest", help: "data directory; the journal is journal.sqlite in it"),
        SettingSpec(flag: "--retention-age", environment: "ROADSAVE_RETENTION_AGE", key: "retentionAge", default: "86400",
                    help: "seconds records are kept at least; older ones go once every detection shard has checkpointed them"),
        SettingSpec(flag: "--journal-max-bytes", environment: "ROADSAVE_JOURNAL_MAX_BYTES", key: "journalMaxBytes",
                    default: "0", help: "largest journal in bytes, 0 for no limit; over it the oldest go, unread if need be (logged)"),
        SettingSpec(flag: "--applications", environment: "ROADSAVE_APPLICATIONS", key: "applications",
                    help: "accepted applicationIDs, comma-separated (credentials: masked in output)", secret: true),
        SettingSpec(flag: "--applications-file", environment: "ROADSAVE_APPLICATIONS_FILE", key: "applicationsFile",
                    help: "file of accepted applicationIDs, one a line (# comments allowed)"),
        SettingSpec(flag: "--max-batch", environment: "ROADSAVE_MAX_BATCH", key: "maxBatch", default: "50000",
                    help: "largest batch accepted, in records"),
        SettingSpec(flag: "--max-message-bytes", environment: "ROADSAVE_MAX_MESSAGE_BYTES", key: "maxMessageBytes",
                    default: String(MessagePack.Limits.maximumBytes),
                    help: "largest frame a gateway may send, in bytes; a gateway sending a larger one is disconnected unanswered"),
        SettingSpec(flag: "--max-devices-per-app", environment: "ROADSAVE_MAX_DEVICES_PER_APP", key: "maxDevicesPerApp",
                    default: "100000",
                    help: "most devices (clientUserIDs) per application; records of further new devices are refused in the ack (field user), known devices go on"),
        SettingSpec(flag: "--device-idle-age", environment: "ROADSAVE_DEVICE_IDLE_AGE", key: "deviceIdleAge",
                    default: "2592000",
                    help: "seconds a device may send nothing before its --max-devices-per-app slot is freed (it is admitted again if there is room), 0 never"),
        SettingSpec(flag: "--rate-limit", environment: "ROADSAVE_RATE_LIMIT", key: "rateLimit",
                    help: "records a second each gateway key may send (plaintext gateways share one limit), 0 for none; a batch over it is refused whole in the ack (field rate, retryAfterMs) (default: 0 on a loopback --gateway-endpoint, 100000 otherwise)"),
        SettingSpec(flag: "--rate-burst", environment: "ROADSAVE_RATE_BURST", key: "rateBurst",
                    help: "records a gateway key may send at once after a pause (default: one second's worth of --rate-limit)"),
        SettingSpec(flag: "--shards", environment: "ROADSAVE_SHARDS", key: "shards", default: "16",
                    help: "number of device shards the journal stores records by (fixed per data directory)"),
        SettingSpec(flag: "--log-level", environment: "ROADSAVE_LOG_LEVEL", key: "logLevel", default: "info",
                    help: "debug, info, warning or error"),
        ServiceMetrics.spec,
    ] + CurveSettings.specs

    /// Reads and validates the settings; the error says which one is wrong and why.
    public static func load(_ source: ServiceConfiguration) throws(CommandLineOptions.UsageError) -> IngestConfiguration {
        var configuration = IngestConfiguration()
        configuration.gatewayEndpoint = try Endpoint.validate(source.string("gatewayEndpoint")!, flag: "--gateway-endpoint")
        configuration.recordsEndpoint = try Endpoint.validate(source.string("recordsEndpoint")!, flag: "--records-endpoint")
        let dataDirectory = source.string("dataDirectory") ?? "roadsave-data/ingest"
        guard !dataDirectory.isEmpty else { throw .init("--data-dir must not be empty") }
        configuration.dataDirectory = dataDirectory
        configuration.retentionAge = try source.double("retentionAge", range: 0...(10 * 365 * 86_400)) ?? 86_400
        configuration.journalMaximumBytes = Int64(try source.double("journalMaxBytes", range: 0...1e15) ?? 0)
        var applications = Set((source.string("applications") ?? "").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
        if let path = source.string("applicationsFile") {
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
            throw .init("no applications configured: set --applications, ROADSAVE_APPLICATIONS or --applications-file (every record of an unknown application would be refused)")
        }
        configuration.applications = applications
        configuration.maximumBatch = Int(try source.double("maxBatch", range: 1...10_000_000) ?? 50_000)
        configuration.maximumMessageBytes = Int64(try source.double("maxMessageBytes", range: 1024...Double(1 << 31))
            ?? Double(MessagePack.Limits.maximumBytes))
        configuration.maximumDevicesPerApplication = Int(try source.double("maxDevicesPerApp", range: 1...100_000_000)
            ?? 100_000)
        configuration.deviceIdleAge = try source.double("deviceIdleAge", range: 0...(100 * 365 * 86_400)) ?? 30 * 86_400
        let loopback = CurveServerKeys.isLoopback(configuration.gatewayEndpoint)
        configuration.rateLimit = try source.double("rateLimit", range: 0...1e9) ?? (loopback ? 0 : defaultRateLimit)
        if let burst = try source.double("rateBurst", range: 1...1e12) {
            guard configuration.rateLimit > 0 else {
                throw .init("--rate-burst needs a --rate-limit above 0 (there is no rate limit to burst over)")
            }
            configuration.rateBurst = burst.rounded(.up)
        } else {
            configuration.rateBurst = max(1, configuration.rateLimit.rounded(.up))
        }
        configuration.shards = Int(try source.double("shards", range: 1...1024) ?? 16)
        configuration.logLevel = try LogLevelSetting.parse(source.string("logLevel") ?? "info")
        configuration.metricsEndpoint = try ServiceMetrics.endpoint(source)
        configuration.curve = try CurveSettings.serverKeys(source, endpoints: [("--gateway-endpoint", configuration.gatewayEndpoint),
                                                                              ("--records-endpoint", configuration.recordsEndpoint)])
        return configuration
    }
}
