import Foundation
import Metrics
import RoadSaveModel
import ServiceKit
import ZeroMQ

/// notifier's settings: flags, environment or a JSON file (see `ServiceConfiguration`).
public struct NotifierConfiguration: Sendable {
    /// Where `notifier.sqlite` lives: events, per-sink outboxes, positions in detection's feeds.
    public var dataDirectory = "roadsave-data/notify"
    /// detection's outbox feeds (ROUTER endpoints), each read from the position stored for it.
    public var eventsEndpoints = ["tcp://127.0.0.1:5553"]
    /// Where subscribers that were away ask for what they missed (ROUTER); nil turns it off.
    public var catchUpEndpoint: String? = "tcp://*:5555"
    /// Seconds an event is kept after every sink took it: the catch-up window.
    public var retentionAge = 7 * 86_400.0
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
    /// The longest wait between two attempts of a webhook delivery (retries never give up).
    public var webhookMaximumBackoff = 30.0
    /// How long a fetch may wait at detection for new events; its empty answer is detection's heartbeat.
    public var heartbeatInterval = 1.0
    public var logLevel = Log.Level.info
    /// Where /metrics, /healthz and /readyz are served (`--metrics-endpoint`); nil: nowhere.
    public var metricsEndpoint: MetricsEndpoint?
    /// CurveZMQ on the PUB and catch-up sockets (`--curve-secret-key`, `--allow`: subscriber keys); nil: plaintext
    /// (loopback or `--insecure`).
    public var curve: CurveServerKeys?
    /// CurveZMQ client keys of the links to `eventsEndpoints`, one each in order (`--curve-server-key`, detection's
    /// public key; this service's own pair as the client key); nil: plaintext (loopback or `--insecure`).
    public var eventsCurve: [CurveClientKeys]?

    public init() {}

    public static let specs: [SettingSpec] = [
        SettingSpec(flag: "--data-dir", environment: "ROADSAVE_DATA_DIR", key: "dataDirectory",
                    default: "roadsave-data/notify",
                    help: "directory of notifier.sqlite: the events (deduplicated by eventID), an outbox per sink, the positions read in detection's feeds"),
        SettingSpec(flag: "--events-endpoint", environment: "ROADSAVE_EVENTS_CONNECT", key: "eventsEndpoint",
                    default: "tcp://127.0.0.1:5553",
                    help: "detection's outbox feeds to pull events from, comma-separated (one per detection shard)"),
        SettingSpec(flag: "--catch-up-endpoint", environment: "ROADSAVE_CATCH_UP_ENDPOINT", key: "catchUpEndpoint",
                    default: "tcp://*:5555",
                    help: "ZeroMQ endpoint (ROUTER) where subscribers ask for the events they missed, by position or eventID (roadsave tail --since); \"none\" for none"),
        SettingSpec(flag: "--retention-age", environment: "ROADSAVE_RETENTION_AGE", key: "retentionAge", default: "7d",
                    help: "how long events are kept once every sink took them: the catch-up window (e.g. 7d, 12h, 30m, 90s)"),
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
        SettingSpec(flag: "--webhook-max-backoff", environment: "ROADSAVE_WEBHOOK_MAX_BACKOFF", key: "webhookMaximumBackoff",
                    default: "30",
                    help: "longest wait in seconds between two attempts of a webhook delivery; failed deliveries (network errors, 408, 429, 5xx) are retried without end, in order per device; other 4xx and 3xx answers are logged as dropped by the receiver and not retried"),
        SettingSpec(flag: "--ndjson", environment: "ROADSAVE_NDJSON", key: "ndjson",
                    help: "append events as NDJSON to this file, each once even across crashes (the file is cut back to the last recorded write at start: it must be the notifier's alone); - for standard output (at least once)"),
        SettingSpec(flag: "--ndjson-format", environment: "ROADSAVE_NDJSON_FORMAT", key: "ndjsonFormat",
                    default: "current", help: "event format of the NDJSON output: current or legacy"),
        SettingSpec(flag: "--heartbeat", environment: "ROADSAVE_HEARTBEAT", key: "heartbeat", default: "1",
                    help: "seconds a fetch waits at detection for new events (an empty answer is its heartbeat)"),
        SettingSpec(flag: "--log-level", environment: "ROADSAVE_LOG_LEVEL", key: "logLevel", default: "info",
                    help: "debug, info, warning or error"),
        ServiceMetrics.spec,
    ] + CurveSettings.specs + [CurveSettings.upstreamSpec(upstream: "detection")]

    public static func load(_ source: ServiceConfiguration) throws(CommandLineOptions.UsageError) -> NotifierConfiguration {
        var configuration = NotifierConfiguration()
        configuration.dataDirectory = source.string("dataDirectory") ?? "roadsave-data/notify"
        if configuration.dataDirectory.isEmpty { throw .init("--data-dir must not be empty") }
        configuration.eventsEndpoints = []
        for text in (source.string("eventsEndpoint") ?? "").split(separator: ",")
            .map({ $0.trimmingCharacters(in: .whitespaces) }) where !text.isEmpty {
            configuration.eventsEndpoints.append(try Endpoint.validate(text, flag: "--events-endpoint", connecting: true))
        }
        if configuration.eventsEndpoints.isEmpty { throw .init("--events-endpoint needs at least one endpoint") }
        let catchUp = source.string("catchUpEndpoint") ?? "none"
        configuration.catchUpEndpoint = catchUp == "none" ? nil : try Endpoint.validate(catchUp, flag: "--catch-up-endpoint")
        configuration.retentionAge = try duration(source.string("retentionAge") ?? "7d", flag: "--retention-age")
        configuration.webhookMaximumBackoff = try source.double("webhookMaximumBackoff", range: 0.05...3600) ?? 30
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
            // Each URL has one outbox: the same one twice would get each event twice.
            guard !configuration.webhooks.contains(url) else { throw .init("--webhooks: \"\(text)\" is given twice") }
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
        configuration.metricsEndpoint = try ServiceMetrics.endpoint(source)
        if configuration.publishEndpoint == nil, configuration.webhooks.isEmpty, configuration.ndjsonPath == nil {
            throw .init("no sink: give --publish-endpoint, --webhooks or --ndjson (events would go nowhere)")
        }
        configuration.curve = try CurveSettings.serverKeys(
            source, endpoints: [("--publish-endpoint", configuration.publishEndpoint),
                                ("--catch-up-endpoint", configuration.catchUpEndpoint)]
                .compactMap { flag, endpoint in endpoint.map { (flag, $0) } })
        configuration.eventsCurve = try CurveSettings.upstreamKeys(source, flag: "--events-endpoint",
                                                                   endpoints: configuration.eventsEndpoints,
                                                                   own: configuration.curve)
        return configuration
    }

    /// `7d`, `12h`, `30m`, `90s` or plain seconds.
    static func duration(_ text: String, flag: String) throws(CommandLineOptions.UsageError) -> Double {
        let units: [Character: Double] = ["d": 86_400, "h": 3600, "m": 60, "s": 1]
        var number = Substring(text.trimmingCharacters(in: .whitespaces))
        var unit = 1.0
        if let last = number.last, let factor = units[last] {
            unit = factor
            number = number.dropLast()
        }
        guard let value = Double(number), value.isFinite, value >= 0, value * unit <= 10 * 365 * 86_400 else {
            throw .init("\(flag) must be a duration such as 7d, 12h, 30m or 90s (at most 10 years), got \"\(text)\"")
        }
        return value * unit
    }

    private static func format(_ source: ServiceConfiguration, _ key: String) throws(CommandLineOptions.UsageError) -> EventFormat {
        let text = source.string(key) ?? "current"
        guard let format = EventFormat(rawValue: text) else {
            throw .init("\(source.flag(for: key)) must be current or legacy, got \"\(text)\"")
        }
        return format
    }
}
