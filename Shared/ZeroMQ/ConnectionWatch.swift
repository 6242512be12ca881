import CZeroMQ
import SystemKit

#if canImport(Glibc)
    import Glibc
#endif

/// The connections of a client socket, made visible without a reactor (`roadsave send` runs on its own thread):
/// libzmq's monitor says when the connection to the peer ends and when a new one has finished its handshake. A
/// gateway learns from it that what it sent on a connection that died will get no answer on it (the peer went down,
/// or the link), and sends it again on the next connection at once, not when each batch's timeout runs out.
///
/// Owned by the thread of the socket it watches: read it with `events()` when its `reader` is readable.
public final class ConnectionWatch {
    /// What the watch reports.
    public enum Change: Sendable, Equatable {
        /// The connection ended: what was sent on it and not answered may never be.
        case lost
        /// A connection finished its handshake: sending goes through again.
        case established
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
        if zmq_socket_monitor(raw, endpoint, ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_SUCCEEDED) != 0 {
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
            default: break
            }
        }
        return changes
    }

    public func close() {
        reader.close()
    }
}
