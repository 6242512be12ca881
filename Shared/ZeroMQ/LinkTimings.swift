import CZeroMQ

/// How every ZeroMQ connection notices that its peer is gone and comes back (docs/operating.md, "Links").
///
/// A TCP connection whose peer vanished without a word (a cut cable, a failed cloud path, a NAT or load balancer
/// that forgot it while idle) stays ESTABLISHED for up to fifteen minutes while the kernel backs its retransmissions
/// off to two minutes apart, and libzmq notices nothing unless told (DESIGN-NOTES pitfall 11). With these timings
/// each end sends a ZMTP PING every `heartbeatInterval` and drops a connection that has carried nothing back for
/// `heartbeatTimeout` after one; the connecting end then tries again at once and every `reconnectInterval` (doubled
/// after each failure up to `reconnectIntervalMaximum`), each attempt given up after `connectTimeout`, so a link that
/// heals carries traffic again within about `reconnectIntervalMaximum` plus a handshake, however long it was down.
public struct LinkTimings: Sendable, Equatable {
    /// Seconds between ZMTP PINGs on an otherwise quiet connection (`ZMQ_HEARTBEAT_IVL`).
    public var heartbeatInterval: Double
    /// Seconds a connection may carry nothing back after a PING before it is dropped and made anew
    /// (`ZMQ_HEARTBEAT_TIMEOUT`); the PINGs also ask the peer to drop it after as long without them
    /// (`ZMQ_HEARTBEAT_TTL`), so both ends let go of a dead connection.
    public var heartbeatTimeout: Double
    /// Seconds one attempt to connect may take before it is given up and tried again (`ZMQ_CONNECT_TIMEOUT`); the
    /// kernel's own limit is two minutes of SYNs.
    public var connectTimeout: Double
    /// Seconds before the first attempt to connect again (`ZMQ_RECONNECT_IVL`).
    public var reconnectInterval: Double
    /// Longest pause between two attempts to connect (`ZMQ_RECONNECT_IVL_MAX`): the pause doubles from
    /// `reconnectInterval` after each failure, so a peer that is down is not called ten times a second.
    public var reconnectIntervalMaximum: Double
    /// Seconds the PINGs ask the peer to wait for this end's next frame before it drops the connection
    /// (`ZMQ_HEARTBEAT_TTL`): the heartbeat timeout, unless this end sends large frames (`sendingLargeFrames`).
    public var peerTimeout: Double

    /// The defaults, chosen for the targets of docs/operating.md ("Links"): a dead link found within 4 s (a PING at
    /// most a second after the last traffic, then 3 s: the Paranoid Pirate's three missed heartbeats), traffic again within a few seconds of a heal (an attempt to
    /// connect at least every second, a handshake caught by the failing link given up after 3 s). A PING is 10 bytes
    /// (a few more with CURVE) once a second per connection.
    public static let standard = LinkTimings(
        heartbeatInterval: 1, heartbeatTimeout: 3, connectTimeout: 2, reconnectInterval: 0.1,
        reconnectIntervalMaximum: 1)

    public init(
        heartbeatInterval: Double, heartbeatTimeout: Double, connectTimeout: Double, reconnectInterval: Double = 0.1,
        reconnectIntervalMaximum: Double
    ) {
        self.heartbeatInterval = heartbeatInterval
        self.heartbeatTimeout = heartbeatTimeout
        self.connectTimeout = connectTimeout
        self.reconnectInterval = reconnectInterval
        self.reconnectIntervalMaximum = reconnectIntervalMaximum
        peerTimeout = heartbeatTimeout
    }

    /// The longest a dead connection goes unnoticed: the last traffic, a PING at most an interval later, then the
    /// timeout.
    public var deadLinkNoticedWithin: Double { heartbeatInterval + heartbeatTimeout }

    /// Seconds a new connection may take to finish its ZMTP greeting and CURVE handshake (a few round trips and
    /// the server's key check) before it is given up and made anew (`ZMQ_HANDSHAKE_IVL`): the connect timeout and a
    /// heartbeat interval. A handshake caught by a failing link then costs at most that after the link heals, where
    /// waiting for TCP's backed-off retransmission could cost many seconds more.
    public var handshakeTimeout: Double { connectTimeout + heartbeatInterval }

    /// libzmq counts a connection alive only when a whole frame arrives, and a PING waits behind a frame being sent:
    /// a frame that takes longer than the timeout to cross the link would have its connection dropped, then be sent
    /// again and dropped again, for ever. Gateway batches are single frames of up to tens of megabytes, sent over
    /// uplinks that may be slow, so the end that receives them (ingest) waits at least this long for the next
    /// frame, and the end that sends them (a gateway) asks its peer to (`ZMQ_HEARTBEAT_TTL`). Each end still finds a
    /// dead link by the other's PINGs, which nothing holds up, within its own timeout.
    public static let largeFrameAllowance = 120.0

    /// For a socket that receives large frames (ingest's gateway socket): it drops a connection only after
    /// `largeFrameAllowance` without a frame, however short the timeout.
    public var receivingLargeFrames: LinkTimings {
        var timings = self
        timings.heartbeatTimeout = max(heartbeatTimeout, Self.largeFrameAllowance)
        timings.peerTimeout = max(peerTimeout, Self.largeFrameAllowance)
        return timings
    }

    /// For a socket that sends large frames (a gateway): it asks its peer to wait `largeFrameAllowance` for its next
    /// frame, and finds a dead link itself by the peer's PINGs within its own timeout.
    public var sendingLargeFrames: LinkTimings {
        var timings = self
        timings.peerTimeout = max(peerTimeout, Self.largeFrameAllowance)
        return timings
    }
}

extension ZMQSocket {
    /// Sets `timings` on this socket (before `bind` or `connect`: a listener copies the options when it binds, a
    /// connection when it is made).
    public func setLinkTimings(_ timings: LinkTimings) throws(ZMQError) {
        func milliseconds(_ seconds: Double) -> Int32 { Int32(clamping: Int((seconds * 1000).rounded())) }
        try setHeartbeat(
            interval: milliseconds(timings.heartbeatInterval), timeout: milliseconds(timings.heartbeatTimeout),
            ttl: milliseconds(timings.peerTimeout))
        try setOption(ZMQ_CONNECT_TIMEOUT, milliseconds(timings.connectTimeout), name: "ZMQ_CONNECT_TIMEOUT")
        try setOption(ZMQ_RECONNECT_IVL, milliseconds(timings.reconnectInterval), name: "ZMQ_RECONNECT_IVL")
        try setOption(
            ZMQ_RECONNECT_IVL_MAX, milliseconds(timings.reconnectIntervalMaximum), name: "ZMQ_RECONNECT_IVL_MAX")
        // A connection made while the link was failing may hang in its ZMTP greeting or CURVE handshake, where
        // heartbeats do not run yet: it is given up soon and made anew, not after libzmq's 30 s.
        try setHandshakeTimeout(milliseconds: milliseconds(timings.handshakeTimeout))
    }
}
