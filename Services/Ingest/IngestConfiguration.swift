import Foundation
import RoadSaveModel
import ServiceKit

/// sensor-ingest's settings: flags, environment or a JSON file (see `ServiceConfiguration`).
public struct IngestConfiguration: Sendable {
    /// Where gateways connect (ROUTER; gateways use DEALER).
    public var gatewayEndpoint = "tcp://*:5550"
    /// Where detection subscribes to the validated records (PUB).
    public var publishEndpoint = "tcp://*:5551"
    /// The applicationIDs whose records are accepted. Credentials: from a file or the environment, never logged.
    public var applications: Set<String> = []
    /// Seconds without traffic after which a heartbeat is published, so subscribers can tell idle from dead.
    public var heartbeatInterval = 1.0
    /// Largest batch accepted, in records.
    public var maximumBatch = 50_000
    /// Records are published on `record.<shard>.` topics, by a stable hash of the device, so several detection
    /// processes can each take a share of the devices.
    public var shards = 16
    public var logLevel = Log.Level.info

    public init() {}

    public static let specs: [SettingSpec] = [
        SettingSpec(flag: "--gateway-endpoint", environment: "ROADSAVE_GATEWAY_ENDPOINT", key: "gatewayEndpoint",
                    default: "tcp://*:5550", help: "ZeroMQ endpoint gateways connect to (ROUTER)"),
        SettingSpec(flag: "--publish-endpoint", environment: "ROADSAVE_RECORDS_ENDPOINT", key: "publishEndpoint",
                    default: "tcp://*:5551", help: "ZeroMQ endpoint detection subscribes to (PUB)"),
        SettingSpec(flag: "--applications", environment: "ROADSAVE_APPLICATIONS", key: "applications",
                    help: "accepted applicationIDs, comma-separated (credentials: masked in output)", secret: true),
        SettingSpec(flag: "--applications-file", environment: "ROADSAVE_APPLICATIONS_FILE", key: "applicationsFile",
                    help: "file of accepted applicationIDs, one a line (# comments allowed)"),
        SettingSpec(flag: "--heartbeat", environment: "ROADSAVE_HEARTBEAT", key: "heartbeat", default: "1",
                    help: "seconds of silence before a heartbeat is published"),
        SettingSpec(flag: "--max-batch", environment: "ROADSAVE_MAX_BATCH", key: "maxBatch", default: "50000",
                    help: "largest batch accepted, in records"),
        SettingSpec(flag: "--shards", environment: "ROADSAVE_SHARDS", key: "shards", default: "16",
                    help: "number of device shards records are published on (record.<shard>. topics)"),
        SettingSpec(flag: "--log-level", environment: "ROADSAVE_LOG_LEVEL", key: "logLevel", default: "info",
                    help: "debug, info, warning or error"),
    ]

    /// Reads and validates the settings; the error says which one is wrong and why.
    public static func load(_ source: ServiceConfiguration) throws(CommandLineOptions.UsageError) -> IngestConfiguration {
        var configuration = IngestConfiguration()
        configuration.gatewayEndpoint = try Endpoint.validate(source.string("gatewayEndpoint")!, flag: "--gateway-endpoint")
        configuration.publishEndpoint = try Endpoint.validate(source.string("publishEndpoint")!, flag: "--publish-endpoint")
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
        configuration.heartbeatInterval = try source.double("heartbeat", range: 0.05...60) ?? 1
        configuration.maximumBatch = Int(try source.double("maxBatch", range: 1...10_000_000) ?? 50_000)
        configuration.shards = Int(try source.double("shards", range: 1...1024) ?? 16)
        configuration.logLevel = try LogLevelSetting.parse(source.string("logLevel") ?? "info")
        return configuration
    }
}
