import CZeroMQ

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The libzmq socket types of Debian's (non-draft) build.
public enum ZMQSocketType: Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case pub, sub, xpub, xsub, dealer, router, req, rep, push, pull, pair

    var rawValue: Int32 {
        switch self {
        case .pub: ZMQ_PUB
        case .sub: ZMQ_SUB
        case .xpub: ZMQ_XPUB
        case .xsub: ZMQ_XSUB
        case .dealer: ZMQ_DEALER
        case .router: ZMQ_ROUTER
        case .req: ZMQ_REQ
        case .rep: ZMQ_REP
        case .push: ZMQ_PUSH
        case .pull: ZMQ_PULL
        case .pair: ZMQ_PAIR
        }
    }

    public var description: String {
        switch self {
        case .pub: "PUB"
        case .sub: "SUB"
        case .xpub: "XPUB"
        case .xsub: "XSUB"
        case .dealer: "DEALER"
        case .router: "ROUTER"
        case .req: "REQ"
        case .rep: "REP"
        case .push: "PUSH"
        case .pull: "PULL"
        case .pair: "PAIR"
        }
    }
}

/// A libzmq socket.
///
/// **Not thread-safe** (libzmq sockets aren't; the thread-safe types are draft-only): create, use and close it on one
/// thread, normally a `Reactor`'s. It is deliberately not `Sendable`.
///
/// Defaults set at creation (both changeable, both documented in `ZMQSocket.defaultLinger` / `defaultSendTimeout`):
/// - `ZMQ_LINGER` = 0: closing drops unsent messages, so `zmq_ctx_term` never hangs on a dead peer. Those include
///   messages that `send` accepted (returned true) but that still sit in the queue to a TCP peer. A socket whose last
///   messages must leave (a final burst, a reply in an `onStop` handler) sets a bounded positive linger before closing;
///   `zmq_ctx_term` then waits up to that long.
/// - `ZMQ_SNDTIMEO` = 1000 ms: a PUSH/DEALER/REQ/PAIR (or a ROUTER with `setRouterMandatory`) that reaches its high-water
///   mark or has no peer gives up after a second (`send` returns false) instead of freezing its thread forever.
///   PUB/XPUB/SUB never block on send. On a reactor prefer `send(..., dontWait: true)`, which never blocks.
/// - `ZMQ_RCVTIMEO` stays -1 (block): blocking receives belong on dedicated threads, and `ZMQContext.shutdown()` ends them
///   with `ETERM`.
///
/// `receive` uses `zmq_msg_recv` (never truncates) and follows `ZMQ_RCVMORE` to collect a whole multipart message.
/// `EINTR` is retried everywhere; `EAGAIN` is reported as `false`/`nil`; everything else throws `ZMQError`.
/// Calls on a closed socket throw `ENOTSOCK` (`isClosedSocket`).
public final class ZMQSocket {
    /// `ZMQ_LINGER` given to every new socket: 0 ms.
    public static let defaultLinger: Int32 = 0
    /// `ZMQ_SNDTIMEO` given to every new socket: 1000 ms (-1 would block forever, libzmq's own default).
    public static let defaultSendTimeout: Int32 = 1000

    public let context: ZMQContext
    public let type: ZMQSocketType
    private var handle: UnsafeMutableRawPointer?
    /// Who sent the last message `receive` returned (the ZAP User-Id and the key the ZAP handler attached), on a socket
    /// made a CURVE server with `setCurveServer`; nil otherwise, or when the message carried neither. Read it right
    /// after the receive (or inside a `drain` body): the next receive replaces it.
    public private(set) var lastPeer: CurvePeer?
    /// Set by `setCurveServer` (in `ZMQSocket+Options.swift`, hence not private).
    var readsPeer = false
    /// The frames `receive` makes room for at once.
    static let framesReserved = 6
    /// Scratch message for `receive`, allocated once (8-byte aligned as libzmq requires).
    private let message: UnsafeMutablePointer<zmq_msg_t>

    /// Creates a socket with `ZMQ_LINGER` = `linger` and `ZMQ_SNDTIMEO` = `sendTimeout` (milliseconds, -1 = forever).
    public init(
        _ context: ZMQContext, _ type: ZMQSocketType,
        linger: Int32 = ZMQSocket.defaultLinger,
        sendTimeout: Int32 = ZMQSocket.defaultSendTimeout
    ) throws(ZMQError) {
        let handle = try context.makeSocketHandle(type.rawValue, name: type.description)
        self.context = context
        self.type = type
        self.handle = handle
        self.message = .allocate(capacity: 1)
        try setLinger(milliseconds: linger)
        try setSendTimeout(milliseconds: sendTimeout)
    }

    deinit {
        close()
        message.deallocate()
    }

    /// `zmq_close`. Idempotent; `deinit` does it too. With the default linger of 0, unsent messages are dropped.
    public func close() {
        guard let handle else { return }
        self.handle = nil
        zmq_close(handle)
    }

    public var isClosed: Bool { handle == nil }

    /// The raw `void *` for `zmq_poll` items and the like (nil once closed).
    public var rawHandle: UnsafeMutableRawPointer? { handle }

    /// The open handle, or ENOTSOCK (not private: the options' extension uses it too).
    func open(_ operation: @autoclosure () -> String) throws(ZMQError) -> UnsafeMutableRawPointer {
        guard let handle else { throw ZMQError(code: ENOTSOCK, operation: operation()) }
        return handle
    }

    // MARK: - Endpoints

    /// `zmq_bind`. Static endpoints bind; `tcp://127.0.0.1:*` picks a free port (read it back with `lastEndpoint`).
    public func bind(_ endpoint: String) throws(ZMQError) {
        let handle = try open("zmq_bind(\(endpoint))")
        if zmq_bind(handle, endpoint) != 0 { throw ZMQError.last("zmq_bind(\(endpoint))") }
    }

    /// `zmq_connect`. Succeeds before the peer exists: connecting is not readiness.
    public func connect(_ endpoint: String) throws(ZMQError) {
        let handle = try open("zmq_connect(\(endpoint))")
        if zmq_connect(handle, endpoint) != 0 { throw ZMQError.last("zmq_connect(\(endpoint))") }
    }

    /// `zmq_unbind`. For a wildcard bind pass the resolved endpoint (`lastEndpoint`).
    public func unbind(_ endpoint: String) throws(ZMQError) {
        let handle = try open("zmq_unbind(\(endpoint))")
        if zmq_unbind(handle, endpoint) != 0 { throw ZMQError.last("zmq_unbind(\(endpoint))") }
    }

    /// `zmq_disconnect`.
    public func disconnect(_ endpoint: String) throws(ZMQError) {
        let handle = try open("zmq_disconnect(\(endpoint))")
        if zmq_disconnect(handle, endpoint) != 0 { throw ZMQError.last("zmq_disconnect(\(endpoint))") }
    }

    /// `ZMQ_LAST_ENDPOINT`: the endpoint of the last bind or connect, resolved (e.g. `tcp://127.0.0.1:37251` after binding
    /// `tcp://127.0.0.1:*`). Empty if there was none or the socket is closed.
    public var lastEndpoint: String {
        guard let bytes = try? bytesOption(ZMQ_LAST_ENDPOINT, name: "ZMQ_LAST_ENDPOINT", capacity: 1024) else {
            return ""
        }
        // The option value is NUL-terminated.
        return String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
    }

    /// A byte-string option (used by `lastEndpoint` here and the CURVE key getters in `ZMQSocket+Options.swift`).
    func bytesOption(_ option: Int32, name: String, capacity: Int) throws(ZMQError) -> [UInt8] {
        let handle = try open("zmq_getsockopt(\(name))")
        var size = capacity
        var buffer = [UInt8](repeating: 0, count: capacity)
        let rc = buffer.withUnsafeMutableBytes { zmq_getsockopt(handle, option, $0.baseAddress, &size) }
        if rc != 0 { throw ZMQError.last("zmq_getsockopt(\(name))") }
        return Array(buffer.prefix(size))
    }

    // MARK: - Messages

    /// Sends `frames` as one multipart message (all frames or none reach the peer).
    ///
    /// Returns false on `EAGAIN`: with `dontWait` when the message cannot be queued now (high-water mark, no peer), or when
    /// the send timeout (`ZMQ_SNDTIMEO`, 1000 ms by default) expires. Nothing was sent then. Throws on other errors
    /// (`ETERM` when the context shuts down, `EHOSTUNREACH` for a mandatory ROUTER, `EFSM` for a REQ/REP out of turn, and
    /// `EINVAL` for an empty frame list).
    ///
    /// Only the first frame can be refused: libzmq counts the high-water mark in whole messages, so once it is accepted the
    /// rest follow (an `EAGAIN` on a later frame, which libzmq does not produce, is retried so no half message is left).
    @discardableResult
    public func send(_ frames: [[UInt8]], dontWait: Bool = false) throws(ZMQError) -> Bool {
        let handle = try open("zmq_send")
        guard !frames.isEmpty else {
            throw ZMQError(code: EINVAL, operation: "zmq_send(no frames)")
        }
        let lastIndex = frames.count - 1
        for (index, frame) in frames.enumerated() {
            var flags: Int32 = index == lastIndex ? 0 : ZMQ_SNDMORE
            if index == 0 && dontWait { flags |= ZMQ_DONTWAIT }
            while true {
                let rc = frame.withUnsafeBytes { zmq_send(handle, $0.baseAddress, $0.count, flags) }
                if rc >= 0 { break }
                let code = zmq_errno()
                if code == EINTR { continue }
                if code == EAGAIN {
                    if index == 0 { return false }
                    continue
                }
                throw ZMQError(code: code, operation: "zmq_send(\(type) frame \(index + 1) of \(frames.count))")
            }
        }
        return true
    }

    /// Sends `frames`, then a last frame of `size` bytes that `write` fills where libzmq keeps it (no array made and
    /// copied again): one multipart message, as `send(_:dontWait:)` sends it, with the same result.
    @discardableResult
    public func send(
        _ frames: [[UInt8]], lastOfSize size: Int, dontWait: Bool = false,
        writing write: (UnsafeMutableRawBufferPointer) -> Void
    ) throws(ZMQError) -> Bool {
        let handle = try open("zmq_send")
        guard !frames.isEmpty else {
            throw ZMQError(code: EINVAL, operation: "zmq_send(no frames)")
        }
        // The last frame is made first: once the first frame is accepted, nothing may stop the message half sent.
        guard zmq_msg_init_size(message, size) == 0 else { throw ZMQError.last("zmq_msg_init_size(\(size))") }
        write(UnsafeMutableRawBufferPointer(start: zmq_msg_data(message), count: size))
        for (index, frame) in frames.enumerated() {
            var flags: Int32 = ZMQ_SNDMORE
            if index == 0 && dontWait { flags |= ZMQ_DONTWAIT }
            while true {
                let rc = frame.withUnsafeBytes { zmq_send(handle, $0.baseAddress, $0.count, flags) }
                if rc >= 0 { break }
                let code = zmq_errno()
                if code == EINTR { continue }
                if code == EAGAIN && index > 0 { continue }
                zmq_msg_close(message)
                if code == EAGAIN { return false }
                throw ZMQError(code: code, operation: "zmq_send(\(type) frame \(index + 1) of \(frames.count + 1))")
            }
        }
        while zmq_msg_send(message, handle, 0) < 0 {
            let code = zmq_errno()
            if code == EINTR || code == EAGAIN { continue }
            zmq_msg_close(message)
            throw ZMQError(code: code, operation: "zmq_msg_send(\(type) frame \(frames.count + 1))")
        }
        return true
    }

    /// Sends the UTF-8 bytes of `frames` as one multipart message (see `send(_:dontWait:)` for the result).
    @discardableResult
    public func send(_ frames: [String], dontWait: Bool = false) throws(ZMQError) -> Bool {
        try send(frames.map { Array($0.utf8) }, dontWait: dontWait)
    }

    /// Receives the messages waiting now, without blocking, and hands each to `body` until it returns false, `limit`
    /// messages were taken (a reactor calls its handler again while more wait, so others get their turn), or none is
    /// left. A receive error goes to `failed` and ends the round.
    public func drain(limit: Int, failed: (ZMQError) -> Void, _ body: ([[UInt8]]) -> Bool) {
        for _ in 0..<limit {
            do {
                guard let frames = try receive(dontWait: true), body(frames) else { return }
            } catch {
                failed(error)
                return
            }
        }
    }

    /// `receive`, with the metadata `properties` of the message's first frame (`zmq_msg_gets`): `User-Id` (the ZAP
    /// handler's name for the peer's key), `Socket-Type`, `Peer-Address`, or any property the ZAP handler returned.
    /// A property the message does not carry is absent from the dictionary. On an XPUB, subscription messages carry
    /// the metadata of the connection that sent them; those libzmq makes itself when a connection ends carry none.
    public func receive(
        dontWait: Bool = false,
        properties: [String]
    ) throws(ZMQError) -> (frames: [[UInt8]], properties: [String: String])? {
        var found: [String: String] = [:]
        let frames = try receive(
            dontWait: dontWait,
            firstFrame: { message in
                for name in properties {
                    if let value = zmq_msg_gets(message, name) { found[name] = String(cString: value) }
                }
            })
        guard let frames else { return nil }
        return (frames, found)
    }

    /// Receives one whole multipart message, frame by frame with `zmq_msg_recv` (never truncated) while `ZMQ_RCVMORE`
    /// says more frames follow.
    ///
    /// Returns nil on `EAGAIN`: with `dontWait` when nothing is waiting, or when the receive timeout expires.
    /// Throws on other errors: `ETERM` (`isTerminated`) when the context shuts down, a normal exit.
    public func receive(dontWait: Bool = false) throws(ZMQError) -> [[UInt8]]? {
        try receive(dontWait: dontWait, firstFrame: nil)
    }

    /// `receive`, handing the first frame (while it is open) to `firstFrame`, for its metadata.
    private func receive(
        dontWait: Bool,
        firstFrame: ((UnsafeMutablePointer<zmq_msg_t>) -> Void)?
    ) throws(ZMQError) -> [[UInt8]]? {
        let handle = try open("zmq_msg_recv")
        var frames: [[UInt8]] = []
        // Room for the longest message the services take (a gateway batch: routing id, delimiter and four frames),
        // made once rather than grown twice on the way there.
        frames.reserveCapacity(Self.framesReserved)
        // libzmq delivers multipart messages atomically: once the first frame is here the rest are too, so later frames
        // are read without DONTWAIT.
        var flags: Int32 = dontWait ? ZMQ_DONTWAIT : 0
        var peer: CurvePeer?
        defer { if readsPeer { lastPeer = peer } }
        while true {
            zmq_msg_init(message)
            var rc: Int32
            repeat {
                rc = zmq_msg_recv(message, handle, flags)
            } while rc < 0 && zmq_errno() == EINTR
            if rc < 0 {
                let code = zmq_errno()
                zmq_msg_close(message)
                if code == EAGAIN && frames.isEmpty { return nil }
                throw ZMQError(code: code, operation: "zmq_msg_recv(\(type) frame \(frames.count + 1))")
            }
            if frames.isEmpty { firstFrame?(message) }
            if readsPeer && peer == nil {
                // The metadata sits on every frame from the wire (not on the routing-id frame a ROUTER adds).
                // The property's name through `withCString` (a short string on the stack): passed as it is, Swift
                // would copy it to the heap for every message.
                if let name = zmq_msg_gets(message, "User-Id"),
                    let publicKey = ZAPHandler.publicKeyProperty.withCString({ zmq_msg_gets(message, $0) })
                {
                    // A connection's messages all carry the same peer: the one before is kept, not made again.
                    if let last = lastPeer, last.matches(name: name, publicKey: publicKey) {
                        peer = last
                    } else {
                        peer = CurvePeer(name: String(cString: name), publicKey: String(cString: publicKey))
                    }
                }
            }
            let size = zmq_msg_size(message)
            let data = zmq_msg_data(message)
            frames.append(
                [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
                    if size > 0, let data, let base = buffer.baseAddress {
                        memcpy(base, data, size)
                    }
                    count = size
                })
            // Read the more-flag before closing the frame.
            var more: Int32 = 0
            var moreSize = MemoryLayout<Int32>.size
            let moreRC = zmq_getsockopt(handle, ZMQ_RCVMORE, &more, &moreSize)
            zmq_msg_close(message)
            if moreRC != 0 { throw ZMQError.last("zmq_getsockopt(ZMQ_RCVMORE)") }
            if more == 0 { return frames }
            flags = 0
        }
    }

    /// The socket's `ZMQ_FD`: readable when libzmq has commands for the socket to carry out (peers attaching or
    /// leaving, an unbind closing its connections, subscriptions arriving). Not for reading or writing: poll it, then
    /// call `processCommands()`.
    public func fileDescriptor() throws(ZMQError) -> Int32 {
        try int32Option(ZMQ_FD, name: "ZMQ_FD") // an int on POSIX systems
    }

    /// Has libzmq carry out the socket's pending commands now (reading `ZMQ_EVENTS` does that), rather than at the
    /// next send or receive (DESIGN-NOTES pitfall 10). Returns the events (`ZMQ_POLLIN`/`ZMQ_POLLOUT`), 0 for a
    /// closed socket.
    @discardableResult
    public func processCommands() -> Int32 {
        (try? int32Option(ZMQ_EVENTS, name: "ZMQ_EVENTS")) ?? 0
    }

    /// `ZMQ_EVENTS` has `ZMQ_POLLIN`: a message can be received now without blocking.
    public var hasPendingInput: Bool {
        processCommands() & Int32(ZMQ_POLLIN) != 0
    }
}

/// Sockets must stay on their owner thread: there is no `Sendable` conformance, on purpose.
@available(*, unavailable)
extension ZMQSocket: Sendable {}

/// CurveZMQ key pairs (`zmq_curve_keypair`), Z85-encoded: 40 printable characters each.
public enum ZMQCurve {
    public static var isAvailable: Bool { zmq_has("curve") != 0 }

    public static func keyPair() throws(ZMQError) -> (publicKey: String, secretKey: String) {
        var publicKey = [CChar](repeating: 0, count: 41)
        var secretKey = [CChar](repeating: 0, count: 41)
        if zmq_curve_keypair(&publicKey, &secretKey) != 0 { throw ZMQError.last("zmq_curve_keypair") }
        return (decode(publicKey), decode(secretKey))
    }

    private static func decode(_ z85: [CChar]) -> String {
        String(decoding: z85.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// The linked libzmq's version, e.g. (4, 3, 4).
public func zmqVersion() -> (major: Int32, minor: Int32, patch: Int32) {
    var major: Int32 = 0
    var minor: Int32 = 0
    var patch: Int32 = 0
    zmq_version(&major, &minor, &patch)
    return (major, minor, patch)
}
