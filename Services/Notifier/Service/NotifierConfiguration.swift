import CommandSettings
import Foundation
import Logging
import Metrics
import RecordCodecs
import ServiceKit
import ZeroMQ

/// notifier's settings: flags, environment or a JSON file (see `ServiceConfiguration`).
public struct NotifierConfiguration: Sendable {
    /// Where `notifier.sqlite` lives: events, per-sink outboxes, positions in detection's feeds.
    public var dataDirectory = Settings.dataDirectory.defaultValue
    /// detection's outbox feeds (ROUTER endpoints), each read from the position stored for it.
    public var eventsEndpoints = Settings.eventsEndpoint.defaultValue
    /// Where subscribers that were away ask for what they missed (ROUTER); nil turns it off.
    public var catchUpEndpoint = Settings.catchUpEndpoint.defaultValue
    /// Seconds an event is kept after every sink took it: the catch-up window.
    public var retentionAge = Settings.retentionAge.defaultValue
    /// Where alerting systems subscribe (PUB, topics `<event>.<app>.<user>`); nil turns the sink off.
    public var publishEndpoint = Settings.publishEndpoint.defaultValue
    public var publishFormat = Settings.publishFormat.defaultValue
    /// Webhook URLs, each receiving every event, signed with `webhookSecret`.
    public var webhooks: [URL] = []
    public var webhookSecret: [UInt8] = []
    public var webhookFormat = Settings.webhookFormat.defaultValue
    /// NDJSON output: a file path, `-` for standard output, nil for none.
    public var ndjsonPath: String?
    public var ndjsonFormat = Settings.ndjsonFormat.defaultValue
    /// The longest wait between two attempts of a webhook delivery (retries never give up).
    public var webhookMaximumBackoff = Settings.webhookMaximumBackoff.defaultValue
    /// How long a fetch may wait at detection for new events; its empty answer is detection's heartbeat.
    public var heartbeatInterval = Settings.heartbeat.defaultValue
    public var logLevel = ServiceSettings.logLevel.defaultValue
    /// How its ZeroMQ connections notice a dead peer and come back (`--link-heartbeat` and the rest).
    public var linkTimings = LinkTimings.standard
    /// Where /metrics, /healthz and /readyz are served (`--metrics-endpoint`); nil: nowhere.
    public var metricsEndpoint: MetricsEndpoint?
    /// CurveZMQ on the PUB and catch-up sockets (`--curve-secret-key`, `--allow`: subscriber keys); nil: plaintext
    /// (loopback or `--insecure`).
    public var curve: CurveServerKeys?
    /// CurveZMQ client keys of the links to `eventsEndpoints`, one each in order (`--curve-server-key`, detection's
    /// public key; this service's own pair as the client key); nil: plaintext (loopback or `--insecure`).
    public var eventsCurve: [CurveClientKeys]?

    public init() {}

    /// The notifier's settings.
    public enum Settings {
        public static let dataDirectory = ServiceSettings.dataDirectory(
            key: "dataDirectory", default: "roadsave-data/notify",
            help:
                "directory of notifier.sqlite: the events (deduplicated by eventID), an outbox per sink, the positions read in detection's feeds"
        )
        public static let eventsEndpoint = ServiceSettings.connected(
            flag: "--events-endpoint", environment: "ROADSAVE_EVENTS_CONNECT", key: "eventsEndpoint",
            default: ["tcp://127.0.0.1:5553"],
            help: "detection's outbox feeds to pull events from, comma-separated (one per detection shard)",
            none: "--events-endpoint needs at least one endpoint")
        public static let catchUpEndpoint = ServiceSettings.boundOrNone(
            flag: "--catch-up-endpoint", environment: "ROADSAVE_CATCH_UP_ENDPOINT", key: "catchUpEndpoint",
            default: "tcp://*:5555",
            help:
                "ZeroMQ endpoint (ROUTER) where subscribers ask for the events they missed, by position or eventID (roadsave tail --since); \"none\" for none"
        )
        public static let retentionAge = duration(
            flag: "--retention-age", environment: "ROADSAVE_RETENTION_AGE", key: "retentionAge", default: 7 * 86_400,
            help: "how long events are kept once every sink took them: the catch-up window (e.g. 7d, 12h, 30m, 90s)")
        public static let publishEndpoint = ServiceSettings.boundOrNone(
            flag: "--publish-endpoint", environment: "ROADSAVE_PUBLISH_ENDPOINT", key: "publishEndpoint",
            default: "tcp://*:5554", help: "ZeroMQ endpoint alerting systems subscribe to (PUB); \"none\" for none")
        public static let publishFormat = format(
            flag: "--publish-format", environment: "ROADSAVE_PUBLISH_FORMAT", key: "publishFormat",
            help: "event format on the PUB socket: current or legacy")
        public static let webhooks = Setting<String?>.text(
            flag: "--webhooks", environment: "ROADSAVE_WEBHOOKS", key: "webhooks",
            help: "webhook URLs, comma-separated (each gets every event, HMAC-signed)")
        public static let webhookSecret = Setting<String?>.text(
            flag: "--webhook-secret", environment: "ROADSAVE_WEBHOOK_SECRET", key: "webhookSecret",
            help: "shared secret of the webhook signatures (prefer the environment or a file)", secret: true)
        public static let webhookSecretFile = Setting<String?>.text(
            flag: "--webhook-secret-file", environment: "ROADSAVE_WEBHOOK_SECRET_FILE", key: "webhookSecretFile",
            help: "file holding the webhook secret")
        public static let webhookFormat = format(
            flag: "--webhook-format", environment: "ROADSAVE_WEBHOOK_FORMAT", key: "webhookFormat",
            help: "event format of webhook bodies: current or legacy")
        // "webhookMaximumBackoff" until the key was made to follow its flag, as the others do.
        public static let webhookMaximumBackoff = Setting<Double>(
            flag: "--webhook-max-backoff", environment: "ROADSAVE_WEBHOOK_MAX_BACKOFF", key: "webhookMaxBackoff",
            default: 30, range: 0.05...3600,
            help:
                "longest wait in seconds between two attempts of a webhook delivery; failed deliveries (network errors, 408, 429, 5xx) are retried without end, in order per device; other 4xx and 3xx answers are logged as dropped by the receiver and not retried"
        ).formerly("webhookMaximumBackoff")
        public static let ndjson = Setting<String?>.text(
            flag: "--ndjson", environment: "ROADSAVE_NDJSON", key: "ndjson",
            help:
                "append events as NDJSON to this file, each once even across crashes (the file is cut back to the last recorded write at start: it must be the notifier's alone); - for standard output (at least once)"
        )
        public static let ndjsonFormat = format(
            flag: "--ndjson-format", environment: "ROADSAVE_NDJSON_FORMAT", key: "ndjsonFormat",
            help: "event format of the NDJSON output: current or legacy")
        public static let heartbeat = Setting<Double>(
            flag: "--heartbeat", environment: "ROADSAVE_HEARTBEAT", key: "heartbeat", default: 1, range: 0.05...60,
            help: "seconds a fetch waits at detection for new events (an empty answer is its heartbeat)")
        public static let curveServerKey = CurveSettings.upstreamSpec(upstream: "detection")

        /// A duration (`duration`), shown as one (`7d`).
        static func duration(
            flag: String, environment: String, key: String, default seconds: Double,
            help: String
        ) -> Setting<Double> {
            Setting<Double>(
                flag: flag, environment: environment, key: key, default: seconds, shown: durationText(seconds),
                help: help
            ) { text, flag throws(CommandLineOptions.UsageError) in
                try NotifierConfiguration.duration(text, flag: flag)
            }
        }

        /// An event format, current by default.
        static func format(flag: String, environment: String, key: String, help: String) -> Setting<EventFormat> {
            Setting<EventFormat>(
                flag: flag, environment: environment, key: key, default: .current,
                shown: EventFormat.current.rawValue, help: help
            ) { text, flag throws(CommandLineOptions.UsageError) in
                guard let format = EventFormat(rawValue: text) else {
                    throw .init("\(flag) must be current or legacy, got \"\(text)\"")
                }
                return format
            }
        }
    }

    public static let specs: [any AnySetting] =
        [
            Settings.dataDirectory, Settings.eventsEndpoint, Settings.catchUpEndpoint, Settings.retentionAge,
            Settings.publishEndpoint, Settings.publishFormat, Settings.webhooks, Settings.webhookSecret,
            Settings.webhookSecretFile, Settings.webhookFormat, Settings.webhookMaximumBackoff, Settings.ndjson,
            Settings.ndjsonFormat, Settings.heartbeat, ServiceSettings.logLevel, ServiceMetrics.spec,
        ]
        + LinkSettings.specs + CurveSettings.specs + [Settings.curveServerKey]

    public static func load(_ source: ServiceConfiguration) throws(CommandLineOptions.UsageError)
        -> NotifierConfiguration
    {
        var configuration = NotifierConfiguration()
        configuration.dataDirectory = try source.value(Settings.dataDirectory)
        configuration.eventsEndpoints = try source.value(Settings.eventsEndpoint)
        configuration.catchUpEndpoint = try source.value(Settings.catchUpEndpoint)
        configuration.retentionAge = try source.value(Settings.retentionAge)
        configuration.webhookMaximumBackoff = try source.value(Settings.webhookMaximumBackoff)
        configuration.publishEndpoint = try source.value(Settings.publishEndpoint)
        configuration.publishFormat = try source.value(Settings.publishFormat)
        configuration.webhookFormat = try source.value(Settings.webhookFormat)
        configuration.ndjsonFormat = try source.value(Settings.ndjsonFormat)
        for text in (try source.value(Settings.webhooks) ?? "").split(separator: ",").map({
            $0.trimmingCharacters(in: .whitespaces)
        })
        where !text.isEmpty {
            guard let url = URL(string: text), let scheme = url.scheme, ["http", "https"].contains(scheme),
                url.host != nil
            else {
                throw .init("--webhooks: \"\(text)\" is not an http:// or https:// URL")
            }
            // Each URL has one outbox: the same one twice would get each event twice.
            guard !configuration.webhooks.contains(url) else { throw .init("--webhooks: \"\(text)\" is given twice") }
            configuration.webhooks.append(url)
        }
        if let secret = try source.value(Settings.webhookSecret) {
            configuration.webhookSecret = Array(secret.utf8)
        } else if let path = try source.value(Settings.webhookSecretFile) {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw .init("--webhook-secret-file: cannot read \(path)")
            }
            // A trailing line break is not part of the secret.
            var bytes = [UInt8](data)
            while let last = bytes.last, last == 0x0A || last == 0x0D { bytes.removeLast() }
            configuration.webhookSecret = bytes
        }
        if !configuration.webhooks.isEmpty, configuration.webhookSecret.count < 16 {
            throw .init(
                "webhooks need a secret of at least 16 bytes: set ROADSAVE_WEBHOOK_SECRET or --webhook-secret-file")
        }
        configuration.ndjsonPath = try source.value(Settings.ndjson)
        configuration.heartbeatInterval = try source.value(Settings.heartbeat)
        configuration.logLevel = try source.value(ServiceSettings.logLevel)
        configuration.metricsEndpoint = try ServiceMetrics.endpoint(source)
        configuration.linkTimings = try LinkSettings.timings(source)
        if configuration.publishEndpoint == nil, configuration.webhooks.isEmpty, configuration.ndjsonPath == nil {
            throw .init("no sink: give --publish-endpoint, --webhooks or --ndjson (events would go nowhere)")
        }
        configuration.curve = try CurveSettings.serverKeys(
            source,
            endpoints: [
                ("--publish-endpoint", configuration.publishEndpoint),
                ("--catch-up-endpoint", configuration.catchUpEndpoint),
            ]
            .compactMap { flag, endpoint in endpoint.map { (flag, $0) } })
        configuration.eventsCurve = try CurveSettings.upstreamKeys(
            source, flag: "--events-endpoint",
            endpoints: configuration.eventsEndpoints,
            own: configuration.curve)
        return configuration
    }

    /// Seconds as `duration` reads them back, in the largest unit that divides them (`7d`, `90s`).
    static func durationText(_ seconds: Double) -> String {
        for (unit, size) in [("d", 86_400.0), ("h", 3600), ("m", 60)]
        where seconds >= size && seconds.truncatingRemainder(dividingBy: size) == 0 {
            return SettingText.number(seconds / size) + unit
        }
        return SettingText.number(seconds) + "s"
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
}
