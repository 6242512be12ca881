import ZeroMQ

/// How a client's connections notice that the service is gone and come back (docs/operating.md, "Links"), in seconds:
/// a heartbeat every `heartbeat`, a connection that carries nothing back for `timeout` after one is dropped and made
/// anew, each attempt to connect given up after `connectTimeout`, attempts from 0.1 s apart up to `reconnectMaximum`.
/// Without heartbeats a connection that a NAT or load balancer forgot stays silently dead: a subscriber would miss
/// the next crash alert, a gateway wait for acknowledgements that never come. Give both ends the same values.
public struct RoadSaveLinkTimings: Sendable, Hashable {
    /// Seconds between ZMTP heartbeats (PING) on every connection: 0.1 to 60.
    public var heartbeat: Double
    /// Seconds a connection may carry nothing back after a heartbeat before it is dropped and made anew: 0.5 to 600,
    /// and more than `heartbeat`.
    public var timeout: Double
    /// Seconds one attempt to connect may take: 0.1 to 120.
    public var connectTimeout: Double
    /// Longest pause in seconds between attempts to connect again (from 0.1 s, doubled after each failure): 0.1 to 600.
    public var reconnectMaximum: Double

    /// The services' defaults: heartbeats every second, a dead connection dropped within 4 s of its last traffic,
    /// traffic again within a few seconds of the link coming back.
    public static let standard = RoadSaveLinkTimings(
        heartbeat: LinkTimings.standard.heartbeatInterval, timeout: LinkTimings.standard.heartbeatTimeout,
        connectTimeout: LinkTimings.standard.connectTimeout,
        reconnectMaximum: LinkTimings.standard.reconnectIntervalMaximum)

    /// The four timings, in seconds.
    public init(heartbeat: Double, timeout: Double, connectTimeout: Double, reconnectMaximum: Double) {
        self.heartbeat = heartbeat
        self.timeout = timeout
        self.connectTimeout = connectTimeout
        self.reconnectMaximum = reconnectMaximum
    }

    /// The timings a service or command was given (`LinkSettings`), for the commands built on the library.
    package init(_ timings: LinkTimings) {
        self.init(
            heartbeat: timings.heartbeatInterval, timeout: timings.heartbeatTimeout,
            connectTimeout: timings.connectTimeout, reconnectMaximum: timings.reconnectIntervalMaximum)
    }

    /// As the sockets take them; an error names the timing out of its range (the ranges of the services' settings).
    func checked() throws(RoadSaveClientError) -> LinkTimings {
        for (name, value, range) in [
            ("heartbeat", heartbeat, 0.1...60.0), ("timeout", timeout, 0.5...600.0),
            ("connectTimeout", connectTimeout, 0.1...120.0), ("reconnectMaximum", reconnectMaximum, 0.1...600.0),
        ] where !range.contains(value) {
            throw .invalidConfiguration(
                "link.\(name): \(value) s is outside \(range.lowerBound)…\(range.upperBound) s")
        }
        guard timeout > heartbeat else {
            throw .invalidConfiguration(
                "link.timeout (\(timeout) s) must be longer than link.heartbeat (\(heartbeat) s): "
                    + "a quiet connection would be dropped between two heartbeats")
        }
        return LinkTimings(
            heartbeatInterval: heartbeat, heartbeatTimeout: timeout, connectTimeout: connectTimeout,
            reconnectInterval: LinkTimings.standard.reconnectInterval, reconnectIntervalMaximum: reconnectMaximum)
    }
}
