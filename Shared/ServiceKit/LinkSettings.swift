import CommandSettings
import ZeroMQ

/// How every connection of a service or client notices a dead peer and comes back (`LinkTimings`): the same four
/// settings in the three services and in `send`, `tail` and `ctl`, described once here. docs/operating.md ("Links")
/// explains the defaults.
public enum LinkSettings {
    public static let heartbeat = Setting<Double>(
        flag: "--link-heartbeat", environment: "ROADSAVE_LINK_HEARTBEAT", key: "linkHeartbeat",
        default: LinkTimings.standard.heartbeatInterval, range: 0.1...60,
        help: "seconds between ZMTP heartbeats (PING) on every ZeroMQ connection, both ends")
    public static let timeout = Setting<Double>(
        flag: "--link-timeout", environment: "ROADSAVE_LINK_TIMEOUT", key: "linkTimeout",
        default: LinkTimings.standard.heartbeatTimeout, range: 0.5...600,
        help:
            "seconds a connection may carry nothing back after a heartbeat before it is dropped and made anew (a cut link, a NAT or load balancer that forgot it); more than --link-heartbeat"
    )
    public static let connectTimeout = Setting<Double>(
        flag: "--connect-timeout", environment: "ROADSAVE_CONNECT_TIMEOUT", key: "connectTimeout",
        default: LinkTimings.standard.connectTimeout, range: 0.1...120,
        help: "seconds one attempt to connect may take before it is given up and tried again")
    public static let reconnectMaximum = Setting<Double>(
        flag: "--reconnect-max", environment: "ROADSAVE_RECONNECT_MAX", key: "reconnectMax",
        default: LinkTimings.standard.reconnectIntervalMaximum, range: 0.1...600,
        help:
            "longest pause in seconds between attempts to connect again (from 0.1 s, doubled after each failure): a healed link carries traffic again within about this"
    )

    public static let specs: [any AnySetting] = [heartbeat, timeout, connectTimeout, reconnectMaximum]

    /// The timings given (defaults for those not given); a usage error when the timeout is not longer than the
    /// heartbeat, which would drop every quiet connection between two PINGs.
    public static func timings(_ values: SettingValues) throws(CommandLineOptions.UsageError) -> LinkTimings {
        let timings = LinkTimings(
            heartbeatInterval: try values.value(heartbeat), heartbeatTimeout: try values.value(timeout),
            connectTimeout: try values.value(connectTimeout),
            reconnectInterval: LinkTimings.standard.reconnectInterval,
            reconnectIntervalMaximum: try values.value(reconnectMaximum))
        guard timings.heartbeatTimeout > timings.heartbeatInterval else {
            throw .init(
                "\(timeout.flag) (\(SettingText.number(timings.heartbeatTimeout))) must be longer than "
                    + "\(heartbeat.flag) (\(SettingText.number(timings.heartbeatInterval)))")
        }
        return timings
    }

    /// The timings of a service's settings.
    public static func timings(_ source: ServiceConfiguration) throws(CommandLineOptions.UsageError) -> LinkTimings {
        try timings(source.values)
    }
}
