import CZeroMQ

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The socket options: each a typed setter (and getter where one is read back) over zmq_setsockopt/getsockopt.
extension ZMQSocket {
    /// `ZMQ_LINGER`: how long `zmq_ctx_term` may wait for this socket's unsent messages after close (-1 = forever).
    public func setLinger(milliseconds: Int32) throws(ZMQError) {
        try setOption(ZMQ_LINGER, milliseconds, name: "ZMQ_LINGER")
    }

    /// `ZMQ_SNDTIMEO`: how long a blocking `send` waits before returning false (-1 = forever, 0 = never waits).
    public func setSendTimeout(milliseconds: Int32) throws(ZMQError) {
        try setOption(ZMQ_SNDTIMEO, milliseconds, name: "ZMQ_SNDTIMEO")
    }

    /// `ZMQ_RCVTIMEO`: how long a blocking `receive` waits before returning nil (-1 = forever).
    public func setReceiveTimeout(milliseconds: Int32) throws(ZMQError) {
        try setOption(ZMQ_RCVTIMEO, milliseconds, name: "ZMQ_RCVTIMEO")
    }

    /// `ZMQ_SNDHWM` (messages; 0 = unlimited; libzmq's default is 1000). Set before bind/connect.
    public func setSendHighWaterMark(_ messages: Int32) throws(ZMQError) {
        try setOption(ZMQ_SNDHWM, messages, name: "ZMQ_SNDHWM")
    }

    /// `ZMQ_RCVHWM` (messages; 0 = unlimited; libzmq's default is 1000). Set before bind/connect.
    public func setReceiveHighWaterMark(_ messages: Int32) throws(ZMQError) {
        try setOption(ZMQ_RCVHWM, messages, name: "ZMQ_RCVHWM")
    }

    /// `ZMQ_MAXMSGSIZE`: the largest frame, in bytes, this socket accepts from a peer (-1, libzmq's default: no limit).
    /// libzmq checks each frame's length header before reading the frame, so nothing of an oversized frame is held;
    /// the peer that sent it is disconnected (it gets no answer), and every other peer goes on. Set before bind/connect.
    public func setMaximumMessageSize(_ bytes: Int64) throws(ZMQError) {
        let handle = try open("zmq_setsockopt(ZMQ_MAXMSGSIZE=\(bytes))")
        var value = bytes
        if zmq_setsockopt(handle, ZMQ_MAXMSGSIZE, &value, MemoryLayout<Int64>.size) != 0 {
            throw ZMQError.last("zmq_setsockopt(ZMQ_MAXMSGSIZE=\(bytes))")
        }
    }

    /// `ZMQ_MAXMSGSIZE` as set (-1: no limit).
    public func maximumMessageSize() throws(ZMQError) -> Int64 {
        let handle = try open("zmq_getsockopt(ZMQ_MAXMSGSIZE)")
        var value: Int64 = 0
        var size = MemoryLayout<Int64>.size
        if zmq_getsockopt(handle, ZMQ_MAXMSGSIZE, &value, &size) != 0 {
            throw ZMQError.last("zmq_getsockopt(ZMQ_MAXMSGSIZE)")
        }
        return value
    }

    /// `ZMQ_HANDSHAKE_IVL` (milliseconds; 0 = none; libzmq's default is 30 000): a connection that has not finished the
    /// ZMTP handshake (greeting, and CURVE with its ZAP answer) within this time is dropped. Set before bind/connect:
    /// a listener copies the socket's options when it binds.
    public func setHandshakeTimeout(milliseconds: Int32) throws(ZMQError) {
        try setOption(ZMQ_HANDSHAKE_IVL, milliseconds, name: "ZMQ_HANDSHAKE_IVL")
    }

    /// `ZMQ_SUBSCRIBE` (SUB/XSUB): receive messages whose first frame starts with `prefix` (empty = everything).
    public func subscribe(_ prefix: [UInt8]) throws(ZMQError) {
        try setOption(ZMQ_SUBSCRIBE, bytes: prefix, name: "ZMQ_SUBSCRIBE")
    }

    /// `ZMQ_SUBSCRIBE` with the UTF-8 bytes of `prefix`.
    public func subscribe(_ prefix: String) throws(ZMQError) {
        try subscribe(Array(prefix.utf8))
    }

    /// `ZMQ_UNSUBSCRIBE`: removes one earlier `subscribe` of the same prefix.
    public func unsubscribe(_ prefix: [UInt8]) throws(ZMQError) {
        try setOption(ZMQ_UNSUBSCRIBE, bytes: prefix, name: "ZMQ_UNSUBSCRIBE")
    }

    /// `ZMQ_UNSUBSCRIBE` with the UTF-8 bytes of `prefix`.
    public func unsubscribe(_ prefix: String) throws(ZMQError) {
        try unsubscribe(Array(prefix.utf8))
    }

    /// `ZMQ_ROUTING_ID` (formerly `ZMQ_IDENTITY`): 1–255 bytes, not starting with 0; set before connect.
    /// A ROUTER peer sees it as the first frame of this socket's messages.
    public func setIdentity(_ identity: [UInt8]) throws(ZMQError) {
        try setOption(ZMQ_ROUTING_ID, bytes: identity, name: "ZMQ_ROUTING_ID")
    }

    /// `ZMQ_ROUTING_ID` of this socket (empty when libzmq generates one on the peer's side).
    public func identity() throws(ZMQError) -> [UInt8] {
        try bytesOption(ZMQ_ROUTING_ID, name: "ZMQ_ROUTING_ID", capacity: 256)
    }

    /// `ZMQ_ROUTER_MANDATORY` (ROUTER): sending to an unknown routing id throws `EHOSTUNREACH` instead of dropping silently,
    /// and a full peer makes `send` wait/return false instead of dropping.
    public func setRouterMandatory(_ on: Bool) throws(ZMQError) {
        try setOption(ZMQ_ROUTER_MANDATORY, on ? 1 : 0, name: "ZMQ_ROUTER_MANDATORY")
    }

    /// `ZMQ_IMMEDIATE`: queue messages only to completed connections (a DEALER/PUSH then blocks/returns false instead of
    /// queueing for a peer that is not there yet).
    public func setImmediate(_ on: Bool) throws(ZMQError) {
        try setOption(ZMQ_IMMEDIATE, on ? 1 : 0, name: "ZMQ_IMMEDIATE")
    }

    /// ZMTP heartbeats (milliseconds): `ZMQ_HEARTBEAT_IVL` (ping every `interval`, 0 = off), `ZMQ_HEARTBEAT_TIMEOUT`
    /// (drop the connection if nothing arrives within `timeout` after a ping), `ZMQ_HEARTBEAT_TTL` (asks the peer to drop
    /// it after `ttl` without traffic; libzmq keeps it in tenths of a second).
    public func setHeartbeat(interval: Int32, timeout: Int32, ttl: Int32) throws(ZMQError) {
        try setOption(ZMQ_HEARTBEAT_IVL, interval, name: "ZMQ_HEARTBEAT_IVL")
        try setOption(ZMQ_HEARTBEAT_TIMEOUT, timeout, name: "ZMQ_HEARTBEAT_TIMEOUT")
        try setOption(ZMQ_HEARTBEAT_TTL, ttl, name: "ZMQ_HEARTBEAT_TTL")
    }

    /// `ZMQ_XPUB_VERBOSE` (XPUB): pass every subscription message up, not only new ones.
    public func setXPubVerbose(_ on: Bool) throws(ZMQError) {
        try setOption(ZMQ_XPUB_VERBOSE, on ? 1 : 0, name: "ZMQ_XPUB_VERBOSE")
    }

    /// `ZMQ_XPUB_MANUAL` (XPUB): subscriptions are not applied by libzmq. Each one is passed up as a message (first byte
    /// 1 = subscribe, 0 = unsubscribe, then the prefix) and the application applies what it decides with
    /// `subscribe`/`unsubscribe` on this socket, which then act on the connection of the last message received (read
    /// with `receive(dontWait:properties:)` to learn who sent it). Set before bind.
    public func setXPubManual(_ on: Bool) throws(ZMQError) {
        try setOption(ZMQ_XPUB_MANUAL, on ? 1 : 0, name: "ZMQ_XPUB_MANUAL")
    }

    /// CurveZMQ server side: this socket accepts CURVE clients and encrypts; `secretKey` is 32 bytes (or 40 Z85 chars).
    /// Without a ZAP handler every client that knows the server's public key is accepted.
    public func setCurveServer(secretKey: [UInt8]) throws(ZMQError) {
        try setOption(ZMQ_CURVE_SERVER, 1, name: "ZMQ_CURVE_SERVER")
        try setOption(ZMQ_CURVE_SECRETKEY, bytes: secretKey, name: "ZMQ_CURVE_SECRETKEY")
        readsPeer = true
    }

    /// CurveZMQ client side: the server's public key and this client's key pair (32 bytes each, or 40 Z85 chars).
    public func setCurveClient(serverPublicKey: [UInt8], publicKey: [UInt8], secretKey: [UInt8]) throws(ZMQError) {
        try setOption(ZMQ_CURVE_SERVERKEY, bytes: serverPublicKey, name: "ZMQ_CURVE_SERVERKEY")
        try setOption(ZMQ_CURVE_PUBLICKEY, bytes: publicKey, name: "ZMQ_CURVE_PUBLICKEY")
        try setOption(ZMQ_CURVE_SECRETKEY, bytes: secretKey, name: "ZMQ_CURVE_SECRETKEY")
    }

    /// Any `int` option (`zmq_setsockopt` with an `Int32`), for options without a named setter.
    public func setOption(_ option: Int32, _ value: Int32, name: String? = nil) throws(ZMQError) {
        let handle = try open("zmq_setsockopt(\(name ?? String(option))=\(value))")
        var value = value
        if zmq_setsockopt(handle, option, &value, MemoryLayout<Int32>.size) != 0 {
            throw ZMQError.last("zmq_setsockopt(\(name ?? String(option))=\(value))")
        }
    }

    /// Any binary option (`zmq_setsockopt` with bytes).
    public func setOption(_ option: Int32, bytes: [UInt8], name: String? = nil) throws(ZMQError) {
        let handle = try open("zmq_setsockopt(\(name ?? String(option)))")
        let rc = bytes.withUnsafeBytes { zmq_setsockopt(handle, option, $0.baseAddress, $0.count) }
        if rc != 0 { throw ZMQError.last("zmq_setsockopt(\(name ?? String(option)))") }
    }

    /// Any `int` option (`zmq_getsockopt` into an `Int32`).
    public func int32Option(_ option: Int32, name: String? = nil) throws(ZMQError) -> Int32 {
        let handle = try open("zmq_getsockopt(\(name ?? String(option)))")
        var value: Int32 = 0
        var size = MemoryLayout<Int32>.size
        if zmq_getsockopt(handle, option, &value, &size) != 0 {
            throw ZMQError.last("zmq_getsockopt(\(name ?? String(option)))")
        }
        return value
    }
}
