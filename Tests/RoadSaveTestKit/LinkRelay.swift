import Foundation
import SystemKit

#if canImport(Glibc)
    import Glibc
#endif

/// A TCP link on loopback that a test can cut without a word, for the network faults a process kill cannot show:
/// it listens on a port of its own and carries bytes both ways to `127.0.0.1:target`. `cut()` stops carrying them,
/// in both directions, on every connection, without closing any (no FIN, no RST: to both ends the connection stays
/// ESTABLISHED and simply goes quiet, as behind a cut cable or a failed route); new connections wait unanswered.
/// `heal()` carries again what waited, nothing lost. `forget()` is a NAT or load balancer that forgot its idle
/// connections: they never carry again, silently, while new ones do. `throttle(bytesPerSecond:)` makes a slow link. No root needed (the partition drill, `make
/// partition-test`, does the same with TUN devices between network namespaces).
public final class LinkRelay: @unchecked Sendable {
    private enum Mode { case carrying, cut }

    private struct Connection {
        var fds: [Int32] // [accepted, upstream]
        /// Bytes read from fds[i] not yet written to fds[1 - i].
        var pending: [[UInt8]] = [[], []]
        var forgotten = false
        var closed = false
    }

    public let port: Int
    private let target: Int
    private let listener: Int32
    private let state = Locked((mode: Mode.carrying, forgetNow: false, stop: false, bytesPerSecond: 0.0))
    private var thread: Thread?

    /// Starts relaying `127.0.0.1:port` (a free port picked here) to `127.0.0.1:target`.
    public init(to target: Int) throws {
        self.target = target
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw TestFailure("socket: errno \(errno)") }
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = Self.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(listener, 64) == 0 else {
            close(listener)
            throw TestFailure("bind/listen: errno \(errno)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        self.listener = listener
        _ = fcntl(listener, F_SETFL, fcntl(listener, F_GETFL) | O_NONBLOCK)
        let thread = Thread { [self] in run() }
        thread.name = "link-relay"
        self.thread = thread
        thread.start()
    }

    /// The endpoint a ZeroMQ client connects to, to go through the relay.
    public var endpoint: String { "tcp://127.0.0.1:\(port)" }

    /// Stops carrying bytes, silently, both ways.
    public func cut() { state.withLock { $0.mode = .cut } }

    /// Carries again, what waited first.
    public func heal() { state.withLock { $0.mode = .carrying } }

    /// The connections there are now never carry again (a NAT forgot them); new ones do.
    public func forget() { state.withLock { $0.forgetNow = true } }

    /// Carries at most about `bytesPerSecond` each way on each connection (0: as fast as it can): a slow link.
    public func throttle(bytesPerSecond: Double) { state.withLock { $0.bytesPerSecond = bytesPerSecond } }

    /// Closes every connection and the listener.
    public func stop() {
        state.withLock { $0.stop = true }
        while thread?.isFinished == false { usleep(10_000) }
    }

    deinit { stop() }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    private func connectUpstream() -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = Self.loopback(port: target)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(fd)
            return nil
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return fd
    }

    private func run() {
        var connections: [Connection] = []
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        defer {
            for connection in connections where !connection.closed {
                for fd in connection.fds { close(fd) }
            }
            close(listener)
        }
        while true {
            let (mode, forgetNow, stop, bytesPerSecond) = state.withLock { state in
                let snapshot = state
                state.forgetNow = false
                return snapshot
            }
            // Throttled: one chunk each way every fiftieth of a second.
            let chunk = bytesPerSecond > 0 ? max(1, Int(bytesPerSecond / 50)) : buffer.count
            if stop { return }
            if forgetNow { for index in connections.indices { connections[index].forgotten = true } }
            let carrying = mode == .carrying
            var items: [pollfd] = [pollfd(fd: listener, events: carrying ? Int16(POLLIN) : 0, revents: 0)]
            var owners: [(connection: Int, side: Int)] = []
            for (index, connection) in connections.enumerated() where !connection.closed && !connection.forgotten {
                for side in 0..<2 {
                    var events: Int16 = 0
                    if carrying, connection.pending[side].isEmpty { events |= Int16(POLLIN) }
                    if carrying, !connection.pending[1 - side].isEmpty { events |= Int16(POLLOUT) }
                    items.append(pollfd(fd: connection.fds[side], events: events, revents: 0))
                    owners.append((index, side))
                }
            }
            _ = poll(&items, nfds_t(items.count), 20)
            if bytesPerSecond > 0 { usleep(20_000) }
            guard carrying else { continue }
            if items[0].revents & Int16(POLLIN) != 0 {
                let accepted = accept(listener, nil, nil)
                if accepted >= 0 {
                    if let upstream = connectUpstream() {
                        _ = fcntl(accepted, F_SETFL, fcntl(accepted, F_GETFL) | O_NONBLOCK)
                        connections.append(Connection(fds: [accepted, upstream]))
                    } else {
                        close(accepted)
                    }
                }
            }
            for (offset, owner) in owners.enumerated() {
                let revents = items[offset + 1].revents
                guard revents != 0, !connections[owner.connection].closed else { continue }
                let side = owner.side
                let fd = connections[owner.connection].fds[side]
                if revents & Int16(POLLIN | POLLHUP | POLLERR) != 0, connections[owner.connection].pending[side].isEmpty
                {
                    let count = read(fd, &buffer, min(buffer.count, chunk))
                    if count > 0 {
                        connections[owner.connection].pending[side] = Array(buffer[0..<count])
                    } else if count == 0 || (errno != EAGAIN && errno != EINTR) {
                        // One end closed: so does the other (a relay carries closes too).
                        for fd in connections[owner.connection].fds { close(fd) }
                        connections[owner.connection].closed = true
                        continue
                    }
                }
                if revents & Int16(POLLOUT) != 0 {
                    var pending = connections[owner.connection].pending[1 - side]
                    let written = pending.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                    if written > 0 {
                        pending.removeFirst(written)
                        connections[owner.connection].pending[1 - side] = pending
                    }
                }
            }
        }
    }
}
