import CZeroMQ
import SystemKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// What libzmq does to the connections of a socket that takes outside connections, made visible: a
/// `zmq_socket_monitor` on the socket, read by a PAIR on the same reactor. libzmq drops a peer that sends a frame over
/// `ZMQ_MAXMSGSIZE`, breaks ZMTP, fails the CURVE handshake or never finishes it (`ZMQ_HANDSHAKE_IVL`) without a word
/// to the application; the monitor turns each closed connection into one `SocketMonitor.Closed` (peer address, how
/// long it lasted, why) for the log, and keeps `Counters` for metrics.
///
/// libzmq's monitor (version 1, the only one of Debian's non-draft build) gives the bound endpoint, not the peer, and
/// carries the descriptor only on `ACCEPTED` and `DISCONNECTED`; so the peer address is read with `getpeername` on the
/// accepted descriptor when the monitor reads the event. A connection that closed before that shows as `unknown`.
/// libzmq says nothing of why a connection closed otherwise: the peer left, or libzmq dropped it for a frame over the
/// limit or a protocol error (ZMTP or CURVE, during the handshake or after it) are one event (`DISCONNECTED`), and
/// `Ending.closed` says so. A handshake failure event carries no descriptor either: each is paired with the next
/// `DISCONNECTED`, first in first out, which is right unless other connections close in between.
///
/// Not thread-safe: it lives on its reactor's thread, like the socket it watches.
public final class SocketMonitor {
    /// The libzmq events the monitor asks for.
    ///
    /// Not `ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL`: in libzmq 4.3.4 a CURVE MESSAGE that does not open after the
    /// handshake (a replayed nonce, a forged box) sets errno to EPROTO and *then* reports that event; sending it to a
    /// monitor leaves errno at EAGAIN, so the connection is not dropped but stops being read, and stays (in CLOSE-WAIT
    /// once the peer leaves) for as long as the service runs: one descriptor per replayed message. Without that event
    /// libzmq drops the connection, and the monitor sees it as a `DISCONNECTED` (found by BadInputMatrixCurveTests).
    public static let events: Int32 =
        ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_ACCEPT_FAILED | ZMQ_EVENT_DISCONNECTED
        | ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH

    /// One libzmq monitor event (version 1: a 6-byte frame of event and value, then the endpoint).
    public struct Event: Sendable, Equatable {
        public enum Kind: Sendable, Equatable {
            case accepted, acceptFailed, disconnected, handshakeSucceeded
            case handshakeFailedNoDetail, handshakeFailedProtocol, handshakeFailedAuth
            case other(UInt16)
        }

        public var kind: Kind
        /// The descriptor for `accepted`/`disconnected`, the ZMTP error code for `handshakeFailedProtocol`, the ZAP
        /// status for `handshakeFailedAuth`, errno for `handshakeFailedNoDetail` and `acceptFailed`.
        public var value: UInt32
        public var endpoint: String

        public init(kind: Kind, value: UInt32, endpoint: String) {
            self.kind = kind
            self.value = value
            self.endpoint = endpoint
        }

        /// Reads the two frames of a version-1 monitor message; nil for anything else.
        public static func decode(_ frames: [[UInt8]]) -> Event? {
            guard frames.count == 2, frames[0].count == 6 else { return nil }
            let head = frames[0]
            let code = UInt16(head[0]) | UInt16(head[1]) << 8
            let value = UInt32(head[2]) | UInt32(head[3]) << 8 | UInt32(head[4]) << 16 | UInt32(head[5]) << 24
            let kind: Kind =
                switch Int32(code) {
                case ZMQ_EVENT_ACCEPTED: .accepted
                case ZMQ_EVENT_ACCEPT_FAILED: .acceptFailed
                case ZMQ_EVENT_DISCONNECTED: .disconnected
                case ZMQ_EVENT_HANDSHAKE_SUCCEEDED: .handshakeSucceeded
                case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL: .handshakeFailedNoDetail
                case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL: .handshakeFailedProtocol
                case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH: .handshakeFailedAuth
                default: .other(code)
                }
            return Event(kind: kind, value: value, endpoint: String(decoding: frames[1], as: UTF8.self))
        }
    }

    /// Why a connection ended, as far as libzmq tells.
    public enum Ending: Sendable, Equatable {
        /// `HANDSHAKE_FAILED_AUTH`: the ZAP handler refused the client (status code, e.g. 400).
        case refusedByAuthentication(status: UInt32)
        /// `HANDSHAKE_FAILED_NO_DETAIL`: the handshake did not finish: it timed out (`ZMQ_HANDSHAKE_IVL`), the peer left
        /// during it, or it sent bytes that are not ZMTP.
        case handshakeNotFinished(timedOut: Bool)
        /// Closed by the peer, or by libzmq for a frame over `ZMQ_MAXMSGSIZE` or a ZMTP or CURVE protocol error
        /// (libzmq does not say which).
        case closed

        /// The `reason` of the log line.
        public func reason(maximumMessageBytes: Int64?) -> String {
            switch self {
            case .refusedByAuthentication(let status):
                "CURVE handshake refused by the ZAP handler (status \(status))"
            case .handshakeNotFinished(let timedOut):
                timedOut
                    ? "handshake not finished within the handshake timeout"
                    : "handshake not finished (the peer left, or sent bytes that are not ZMTP)"
            case .closed:
                "closed: the peer left, or sent a frame over the limit"
                    + (maximumMessageBytes.map { $0 >= 0 ? " of \($0) bytes (ZMQ_MAXMSGSIZE)" : "" } ?? "")
                    + ", or broke ZMTP or CURVE (libzmq does not say which)"
            }
        }

        public var isHandshakeFailure: Bool { self != .closed }
    }

    /// One connection closed, for the log.
    public struct Closed: Sendable, Equatable {
        /// `host:port` of the peer, or `unknown` when it had gone before the monitor could ask.
        public var peer: String
        /// Seconds from the accept to the close (nil when the accept was not seen).
        public var seconds: Double?
        public var ending: Ending
    }

    /// Totals since start, for metrics.
    public struct Counters: Sendable, Equatable {
        public var accepted = 0
        public var acceptFailed = 0
        public var handshakesSucceeded = 0
        public var handshakesFailedNoDetail = 0
        public var handshakesFailedAuth = 0
        public var disconnected = 0
        /// Connections open now (accepted minus disconnected).
        public var open: Int { accepted - disconnected }
        public init() {}
    }

    /// The name of the watched socket in the log (`gateway`, `control`, …).
    public let name: String
    /// The watched socket's `ZMQ_MAXMSGSIZE` (for the reason of a close after the handshake).
    public let maximumMessageBytes: Int64?
    /// The watched socket's `ZMQ_HANDSHAKE_IVL` in seconds (0: none), to tell a timeout from other failures.
    public let handshakeTimeout: Double
    public private(set) var counters = Counters()

    private let reader: ZMQSocket
    private let clock: () -> Double
    private let report: (Closed) -> Void
    private var peers: [UInt32: (address: String, since: Double)] = [:]
    /// Handshake failures waiting for the `DISCONNECTED` that follows each (which carries the descriptor).
    private var pendingFailures: [Event] = []

    /// Numbers the monitors' inproc endpoints (reactors of one process share the name space of their context).
    private static let serial = Locked(0)

    /// Starts monitoring `socket` (call before `bind`, from `loop`'s thread); `report` is called on that thread for
    /// every closed connection.
    public init(_ socket: ZMQSocket, name: String, loop: ReactorLoop, report: @escaping (Closed) -> Void) throws {
        guard let raw = socket.rawHandle else {
            throw ZMQError(code: ENOTSOCK, operation: "zmq_socket_monitor(\(name))")
        }
        let serial = Self.serial.withLock { count -> Int in
            count += 1
            return count
        }
        let endpoint = "inproc://roadsave.monitor.\(name).\(serial)"
        if zmq_socket_monitor(raw, endpoint, Self.events) != 0 {
            throw ZMQError.last("zmq_socket_monitor(\(name))")
        }
        self.name = name
        let limit = try socket.maximumMessageSize()
        maximumMessageBytes = limit >= 0 ? limit : nil
        handshakeTimeout = Double(try socket.int32Option(ZMQ_HANDSHAKE_IVL, name: "ZMQ_HANDSHAKE_IVL")) / 1000
        clock = { MonotonicClock.now() }
        self.report = report
        reader = try loop.socket(.pair)
        try reader.connect(endpoint)
        loop.onReadable(reader) { [self] socket in
            socket.drain(limit: 1000, failed: { _ in }) { frames in
                if let event = Event.decode(frames) { handle(event) }
                return true
            }
        }
    }

    /// Takes one event (the reader's handler calls it; tests may too).
    public func handle(_ event: Event) {
        switch event.kind {
        case .accepted:
            counters.accepted += 1
            peers[event.value] = (Self.peerAddress(Int32(bitPattern: event.value)), clock())
        case .acceptFailed:
            counters.acceptFailed += 1
        case .handshakeSucceeded:
            counters.handshakesSucceeded += 1
        case .handshakeFailedNoDetail:
            counters.handshakesFailedNoDetail += 1
            pendingFailures.append(event)
        case .handshakeFailedAuth:
            counters.handshakesFailedAuth += 1
            pendingFailures.append(event)
        case .disconnected:
            counters.disconnected += 1
            let peer = peers.removeValue(forKey: event.value)
            let seconds = peer.map { clock() - $0.since }
            let failure = pendingFailures.isEmpty ? nil : pendingFailures.removeFirst()
            let ending: Ending =
                switch failure?.kind {
                case .handshakeFailedAuth?: .refusedByAuthentication(status: failure!.value)
                case .handshakeFailedNoDetail?:
                    .handshakeNotFinished(timedOut: handshakeTimeout > 0 && (seconds ?? 0) >= handshakeTimeout * 0.95)
                default: .closed
                }
            report(Closed(peer: peer?.address ?? "unknown", seconds: seconds, ending: ending))
        case .handshakeFailedProtocol, .other:
            break // not asked for (see `events`)
        }
    }

    /// `host:port` of the peer of descriptor `fd`, or `unknown`.
    static func peerAddress(_ fd: Int32) -> String {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
        }
        guard rc == 0 else { return "unknown" }
        var host = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        func text(_ chars: [CChar]) -> String {
            String(decoding: chars.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { address in
                    var ip = address.pointee.sin_addr
                    inet_ntop(AF_INET, &ip, &host, socklen_t(host.count))
                    return text(host) + ":" + String(UInt16(bigEndian: address.pointee.sin_port))
                }
            }
        case AF_INET6:
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { address in
                    var ip = address.pointee.sin6_addr
                    inet_ntop(AF_INET6, &ip, &host, socklen_t(host.count))
                    return "[" + text(host) + "]:" + String(UInt16(bigEndian: address.pointee.sin6_port))
                }
            }
        default:
            return "unknown"
        }
    }
}

/// The monitor belongs to its reactor's thread: no `Sendable` conformance, on purpose.
@available(*, unavailable)
extension SocketMonitor: Sendable {}
