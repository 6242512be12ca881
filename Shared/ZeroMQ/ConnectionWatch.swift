import CZeroMQ
import SystemKit

#if canImport(Glibc)
    import Glibc
#endif

/// The connections of a client socket, made visible without a reactor (the client library's engines run on threads
/// of their own): libzmq's monitor says when the connection to the peer ends, when a new one has finished its
/// handshake, and when the server refused this client's key at the handshake. A gateway learns from it that what it
/// sent on a connection that died will get no answer on it (the peer went down, or the link), and sends it again on
/// the next connection at once, not when each batch's timeout runs out; a subscriber, that it must catch up.
///
/// Owned by the thread of the socket it watches: read it with `changes()` when its `reader` is readable.
public final class ConnectionWatch {
    /// What the watch reports.
    public enum Change: Sendable, Equatable {
        /// The connection ended: what was sent on it and not answered may never be.
        case lost
        /// A connection finished its handshake: sending goes through again.
        case established
        /// The server refused this client's key at the handshake (CurveZMQ: its ZAP handler, with this status, as 400
        /// for a key its allow-list does not admit). libzmq tries again after its reconnect interval, so a refused key
        /// is refused again and again: what to do about it is the client's to decide.
        case refused(status: UInt32)
    }

    public let reader: ZMQSocket
    private static let serial = Locked(0)

    /// Starts watching `socket` (before its `connect`).
    public init(_ socket: ZMQSocket, context: ZMQContext, name: String) throws {
        guard let raw = socket.rawHandle else {
            throw ZMQError(code: ENOTSOCK, operation: "zmq_socket_monitor(\(name))")
        }
        let serial = Self.serial.withLock { count -> Int in
            count += 1
            return count
        }
        let endpoint = "inproc://roadsave.watch.\(name).\(serial)"
        let events = ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH
        if zmq_socket_monitor(raw, endpoint, events) != 0 {
            throw ZMQError.last("zmq_socket_monitor(\(name))")
        }
        reader = try ZMQSocket(context, .pair, linger: 0)
        try reader.connect(endpoint)
    }

    /// The changes reported since the last call, in order (never waits).
    public func changes() -> [Change] {
        var changes: [Change] = []
        while let frames = try? reader.receive(dontWait: true), let event = SocketMonitor.Event.decode(frames) {
            switch event.kind {
            case .disconnected: changes.append(.lost)
            case .handshakeSucceeded: changes.append(.established)
            case .handshakeFailedAuth: changes.append(.refused(status: event.value))
            default: break
            }
        }
        return changes
    }

    public func close() {
        reader.close()
    }
}
