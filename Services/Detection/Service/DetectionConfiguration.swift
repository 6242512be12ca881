import DetectionEngine
import Foundation
import PlatformHTTP
import RoadSaveModel
import ServiceKit

/// detection's settings: flags, environment or a JSON file (see `ServiceConfiguration`).
public struct DetectionConfiguration: Sendable {
    /// sensor-ingest's record publisher, to subscribe to.
    public var recordsEndpoint = "tcp://127.0.0.1:5551"
    /// Control commands (ROUTER; clients use REQ or DEALER).
    public var controlEndpoint = "tcp://*:5552"
    /// Events for the notifier (PUB).
    public var eventsEndpoint = "tcp://*:5553"
    /// The platform's base URL; nil for the embedded platform.
    public var platformURL: URL?
    public var platformTimeout = 5.0
    public var platformAttempts = 3
    /// Thresholds replacing the platform's (a JSON file of DetectionSettings fields).
    public var settingsFile: String?
    /// Configure and monitor a device (mode all, automatic trips) when its first record arrives, as `replay` does.
    public var autoMonitor = true
    /// Seconds of event time a record may arrive late and still be put in order.
    public var reorderWindow = 3.0
    /// Only the devices of this shard (`i/n`, by a stable hash of the device), for running several detections.
    public var shard: (index: Int, count: Int)?
    public var heartbeatInterval = 1.0
    public var logLevel = Log.Level.info

    public init() {}

    public static let specs: [SettingSpec] = [
        SettingSpec(flag: "--records-endpoint", environment: "ROADSAVE_RECORDS_CONNECT", key: "recordsEndpoint",
                    default: "tcp://127.0.0.1:5551", help: "sensor-ingest's record publisher to subscribe to"),
        SettingSpec(flag: "--control-endpoint", environment: "ROADSAVE_CONTROL_ENDPOINT", key: "controlEndpoint",
                    default: "tcp://*:5552", help: "ZeroMQ endpoint for control commands (ROUTER; clients use REQ)"),
        SettingSpec(flag: "--events-endpoint", environment: "ROADSAVE_EVENTS_ENDPOINT", key: "eventsEndpoint",
                    default: "tcp://*:5553", help: "ZeroMQ endpoint the notifier subscribes to (PUB)"),
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
                    default: "3", help: "seconds of event time a record may arrive late and still be put in order"),
        SettingSpec(flag: "--shard", environment: "ROADSAVE_SHARD", key: "shard",
                    help: "take only shard I of N of the devices, as I/N (N as sensor-ingest's --shards)"),
        SettingSpec(flag: "--heartbeat", environment: "ROADSAVE_HEARTBEAT", key: "heartbeat", default: "1",
                    help: "seconds of silence before a heartbeat is published"),
        SettingSpec(flag: "--log-level", environment: "ROADSAVE_LOG_LEVEL", key: "logLevel", default: "info",
                    help: "debug, info, warning or error"),
    ]

    public static func load(_ source: ServiceConfiguration) throws(CommandLineOptions.UsageError) -> DetectionConfiguration {
        var configuration = DetectionConfiguration()
        configuration.recordsEndpoint = try Endpoint.validate(source.string("recordsEndpoint")!, flag: "--records-endpoint",
                                                           connecting: true)
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
        configuration.reorderWindow = try source.double("reorderWindow", range: 0...600) ?? 3
        if let text = source.string("shard") {
            let parts = text.split(separator: "/").compactMap { Int($0) }
            guard parts.count == 2, parts[1] >= 1, (0..<parts[1]).contains(parts[0]) else {
                throw .init("--shard must be I/N with 0 ≤ I < N, got \"\(text)\"")
            }
            configuration.shard = (parts[0], parts[1])
        }
        configuration.heartbeatInterval = try source.double("heartbeat", range: 0.05...60) ?? 1
        configuration.logLevel = try LogLevelSetting.parse(source.string("logLevel") ?? "info")
        return configuration
    }

    /// The platform these settings describe (checked at start, so a bad settings file stops the service).
    public func makePlatform() throws -> any Platform {
        try PlatformSetup.platform(url: platformURL,
                                   options: .init(requestTimeout: platformTimeout, attempts: platformAttempts),
                                   settingsFile: settingsFile)
    }
}
