import Foundation
import RoadSaveModel
import ServiceKit

/// notifier's settings: flags, environment or a JSON file (see `ServiceConfiguration`).
public struct NotifierConfiguration: Sendable {
    /// detection's event publisher, to subscribe to.
    public var eventsEndpoint = "tcp://127.0.0.1:5553"
    /// Where alerting systems subscribe (PUB, topics `<event>.<app>.<user>`); nil turns the sink off.
    public var publishEndpoint: String? = "tcp://*:5554"
    public var publishFormat = EventFormat.current
    /// Webhook URLs, each receiving every event, signed with `webhookSecret`.
    public var webhooks: [URL] = []
    public var webhookSecret: [UInt8] = []
    public var webhookFormat = EventFormat.current
    /// NDJSON output: a file path, `-` for standard output, nil for none.
    public var ndjsonPath: String?
    public var ndjsonFormat = EventFormat.current
    public var heartbeatInterval = 1.0
    public var logLevel = Log.Level.info

    public init() {}

    public static let specs: [SettingSpec] = [
        SettingSpec(flag: "--events-endpoint", environment: "ROADSAVE_EVENTS_CONNECT", key: "eventsEndpoint",
                    default: "tcp://127.0.0.1:5553", help: "detection's event publisher to subscribe to"),
        SettingSpec(flag: "--publish-endpoint", environment: "ROADSAVE_PUBLISH_ENDPOINT", key: "publishEndpoint",
                    default: "tcp://*:5554", help: "ZeroMQ endpoint alerting systems subscribe to (PUB); \"none\" for none"),
        SettingSpec(flag: "--publish-format", environment: "ROADSAVE_PUBLISH_FORMAT", key: "publishFormat",
                    default: "current", help: "event format on the PUB socket: current or legacy"),
        SettingSpec(flag: "--webhooks", environment: "ROADSAVE_WEBHOOKS", key: "webhooks",
                    help: "webhook URLs, comma-separated (each gets every event, HMAC-signed)"),
        SettingSpec(flag: "--webhook-secret", environment: "ROADSAVE_WEBHOOK_SECRET", key: "webhookSecret",
                    help: "shared secret of the webhook signatures (prefer the environment or a file)", secret: true),
        SettingSpec(flag: "--webhook-secret-file", environment: "ROADSAVE_WEBHOOK_SECRET_FILE", key: "webhookSecretFile",
                    help: "file holding the webhook secret"),
        SettingSpec(flag: "--webhook-format", environment: "ROADSAVE_WEBHOOK_FORMAT", key: "webhookFormat",
                    default: "current", help: "event format of webhook bodies: current or legacy"),
        SettingSpec(flag: "--ndjson", environment: "ROADSAVE_NDJSON", key: "ndjson",
                    help: "append events as NDJSON to this file (- for standard output)"),
        SettingSpec(flag: "--ndjson-format", environment: "ROADSAVE_NDJSON_FORMAT", key: "ndjsonFormat",
                    default: "current", help: "event format of the NDJSON output: current or legacy"),
        SettingSpec(flag: "--heartbeat", environment: "ROADSAVE_HEARTBEAT", key: "heartbeat", default: "1",
                    help: "seconds of silence from detection before it is checked on"),
        SettingSpec(flag: "--log-level", environment: "ROADSAVE_LOG_LEVEL", key: "logLevel", default: "info",
                    help: "debug, info, warning or error"),
    ]

    public static func load(_ source: ServiceConfiguration) throws(CommandLineOptions.UsageError) -> NotifierConfiguration {
        var configuration = NotifierConfiguration()
        configuration.eventsEndpoint = try Endpoint.validate(source.string("eventsEndpoint")!, flag: "--events-endpoint",
                                                          connecting: true)
        let publish = source.string("publishEndpoint")!
        configuration.publishEndpoint = publish == "none" ? nil : try Endpoint.validate(publish, flag: "--publish-endpoint")
        configuration.publishFormat = try format(source, "publishFormat")
        configuration.webhookFormat = try format(source, "webhookFormat")
        configuration.ndjsonFormat = try format(source, "ndjsonFormat")
        for text in (source.string("webhooks") ?? "").split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) })
        where !text.isEmpty {
            guard let url = URL(string: text), let scheme = url.scheme, ["http", "https"].contains(scheme), url.host != nil else {
                throw .init("--webhooks: \"\(text)\" is not an http:// or https:// URL")
            }
            configuration.webhooks.append(url)
        }
        if let secret = source.string("webhookSecret") {
            configuration.webhookSecret = Array(secret.utf8)
        } else if let path = source.string("webhookSecretFile") {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw .init("--webhook-secret-file: cannot read \(path)")
            }
            // A trailing line break is not part of the secret.
            var bytes = [UInt8](data)
            while let last = bytes.last, last == 0x0A || last == 0x0D { bytes.removeLast() }
            configuration.webhookSecret = bytes
        }
        if !configuration.webhooks.isEmpty, configuration.webhookSecret.count < 16 {
            throw .init("webhooks need a secret of at least 16 bytes: set ROADSAVE_WEBHOOK_SECRET or --webhook-secret-file")
        }
        configuration.ndjsonPath = source.string("ndjson")
        configuration.heartbeatInterval = try source.double("heartbeat", range: 0.05...60) ?? 1
        configuration.logLevel = try LogLevelSetting.parse(source.string("logLevel") ?? "info")
        if configuration.publishEndpoint == nil, configuration.webhooks.isEmpty, configuration.ndjsonPath == nil {
            throw .init("no sink: give --publish-endpoint, --webhooks or --ndjson (events would go nowhere)")
        }
        return configuration
    }

    private static func format(_ source: ServiceConfiguration, _ key: String) throws(CommandLineOptions.UsageError) -> EventFormat {
        let text = source.string(key) ?? "current"
        guard let format = EventFormat(rawValue: text) else {
            throw .init("\(source.flag(for: key)) must be current or legacy, got \"\(text)\"")
        }
        return format
    }
}
