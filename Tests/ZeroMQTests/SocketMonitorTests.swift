import CZeroMQ
import Foundation
import RoadSaveTestKit
import SystemKit
import Testing
import ZeroMQ

#if canImport(Glibc)
    import Glibc
#endif

/// `SocketMonitor` on a ROUTER that takes TCP connections: what libzmq does silently (a frame over ZMQ_MAXMSGSIZE, a
/// CURVE client refused by the ZAP handler, a connection that never says a word) becomes a `Closed` with the peer and
/// a reason, and the counters count it.
@Suite("SocketMonitor", .serialized, .timeLimit(.minutes(1)))
struct SocketMonitorTests {
    /// A reactor with a monitored ROUTER bound on loopback; `configure` runs on the reactor before the monitor starts.
    final class Server: @unchecked Sendable { // Sendable: `closed` is locked; the rest is set before use
        let context: ZMQContext
        let reactor: Reactor
        let closed = Locked<[SocketMonitor.Closed]>([])
        let endpoint = Locked("")

        init(configure: @escaping @Sendable (ZMQSocket, ReactorLoop) throws -> Void) async throws {
            context = try ZMQContext()
            reactor = Reactor(name: "monitored", context: context)
            reactor.start { [closed, endpoint] loop in
                let socket = try loop.socket(.router)
                try configure(socket, loop)
                let monitor = try SocketMonitor(socket, name: "test", loop: loop) { event in
                    closed.withLock { $0.append(event) }
                }
                loop.setValue(monitor)
                try socket.bind("tcp://127.0.0.1:*")
                endpoint.withLock { $0 = socket.lastEndpoint }
                loop.onReadable(socket) { socket in socket.drain(limit: 100, failed: { _ in }) { _ in true } }
            }
            _ = try await reactor.run { _ in }
        }

        var counters: SocketMonitor.Counters {
            get async throws { try await reactor.run { loop in loop.value(SocketMonitor.self)!.counters } }
        }

        /// Waits until the counters satisfy `condition` (true), or `timeout` passes.
        func eventually(timeout: Double = 60, _ condition: @escaping @Sendable (SocketMonitor.Counters) -> Bool)
            async throws -> Bool
        {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                if condition(try await counters) { return true }
                try await Task.sleep(nanoseconds: 20_000_000)
            }
            return condition(try await counters)
        }

        func waitForClose(timeout: Double = 10) async -> SocketMonitor.Closed? {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                if let first = closed.current.first { return first }
                try? await Task.sleep(nanoseconds: 50_000_000)
            }
            return nil
        }

        func stop() async {
            reactor.stop()
            _ = await reactor.finished()
            context.terminate()
        }
    }

    /// Sends `frames` from a DEALER of its own context (a CURVE client with `curve`), and keeps it until the server's
    /// monitor has counted what `seen` asks for (waited for, not slept: a busy machine is slow to get there).
    static func send(
        _ frames: [[UInt8]], to server: Server,
        curve: (server: String, pair: (publicKey: String, secretKey: String))? = nil,
        until seen: @escaping @Sendable (SocketMonitor.Counters) -> Bool
    ) async throws {
        let context = try ZMQContext()
        defer { context.terminate() }
        let socket = try ZMQSocket(context, .dealer)
        defer { socket.close() }
        if let curve {
            try socket.setCurveClient(
                serverPublicKey: Array(curve.server.utf8), publicKey: Array(curve.pair.publicKey.utf8),
                secretKey: Array(curve.pair.secretKey.utf8))
        }
        try socket.connect(server.endpoint.current)
        // Connected before sending, so the monitor has read the accept (and the peer's address) before the drop: a
        // connection dropped within microseconds of its accept shows as `unknown`.
        try #require(try await server.eventually { $0.accepted >= 1 }, "the monitor never saw the connection")
        _ = try socket.send(frames, dontWait: true)
        let reached = try await server.eventually(seen)
        let counters = try await server.counters
        try #require(reached, "\(counters)")
    }

    @Test func aFrameOverTheLimitClosesTheConnectionAndTheMonitorNamesThePeer() async throws {
        let server = try await Server { socket, _ in try socket.setMaximumMessageSize(1024) }
        defer { Task { await server.stop() } }
        try await Self.send([[UInt8](repeating: 7, count: 4096)], to: server) { $0.disconnected >= 1 }
        let closed = try #require(await server.waitForClose())
        #expect(closed.ending == .closed)
        #expect(closed.peer.hasPrefix("127.0.0.1:") && closed.peer != "127.0.0.1:0", "\(closed)")
        #expect(
            closed.ending.reason(maximumMessageBytes: 1024).contains("over the limit of 1024 bytes (ZMQ_MAXMSGSIZE)"))
        let counters = try await server.counters
        // The DEALER reconnects after being dropped, and is dropped again when it resends: at least one of each.
        #expect(
            counters.accepted >= 1 && counters.handshakesSucceeded >= 1 && counters.disconnected >= 1, "\(counters)")
        #expect(counters.open <= 1)
    }

    @Test func aCurveClientTheZAPHandlerRefusesIsAHandshakeFailure() async throws {
        let serverKeys = try ZMQCurve.keyPair()
        let listed = try ZMQCurve.keyPair()
        let stranger = try ZMQCurve.keyPair()
        let list = FileManager.default.temporaryDirectory.appendingPathComponent("allow-\(UUID().uuidString.prefix(8))")
            .path
        try "gateway \(listed.publicKey) gw-1\n".write(toFile: list, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: list) }
        let server = try await Server { socket, loop in
            let zap = try ZAPHandler(loop: loop, allowListPath: list) { _ in }
            loop.setValue(zap)
            try zap.secure(socket, role: .gateway, secretKey: serverKeys.secretKey)
        }
        defer { Task { await server.stop() } }
        try await Self.send([Array("hello".utf8)], to: server, curve: (serverKeys.publicKey, stranger)) {
            $0.handshakesFailedAuth >= 1
        }
        let closed = try #require(await server.waitForClose())
        #expect(closed.ending == .refusedByAuthentication(status: 400), "\(closed)")
        #expect(closed.ending.isHandshakeFailure)
        let counters = try await server.counters
        #expect(counters.handshakesFailedAuth == 1 && counters.handshakesSucceeded == 0, "\(counters)")
    }

    @Test func aSilentConnectionIsDroppedAtTheHandshakeTimeout() async throws {
        let server = try await Server { socket, _ in try socket.setHandshakeTimeout(milliseconds: 500) }
        defer { Task { await server.stop() } }
        #expect(try await server.reactor.run { loop in loop.value(SocketMonitor.self)!.handshakeTimeout } == 0.5)
        let port = try #require(server.endpoint.current.split(separator: ":").last.flatMap { UInt16($0) })
        // A raw TCP connection that sends nothing.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { Glibc.close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        try #require(connected == 0)
        let started = Date()
        // Well before libzmq's default handshake timeout (30 s), however busy the machine.
        let closed = try #require(await server.waitForClose(timeout: 15))
        let seconds = Date().timeIntervalSince(started)
        #expect(closed.ending == .handshakeNotFinished(timedOut: true), "\(closed)")
        #expect(seconds >= 0.4 && seconds < 15, "dropped after \(seconds) s")
        let counters = try await server.counters
        #expect(counters.handshakesFailedNoDetail == 1, "\(counters)")
    }

    @Test func decodesVersionOneEvents() {
        // ZMQ_EVENT_DISCONNECTED (0x0200), descriptor 12, little-endian as libzmq writes it on x86-64.
        let event = SocketMonitor.Event.decode([[0x00, 0x02, 12, 0, 0, 0], Array("tcp://127.0.0.1:5550".utf8)])
        #expect(event == SocketMonitor.Event(kind: .disconnected, value: 12, endpoint: "tcp://127.0.0.1:5550"))
        #expect(SocketMonitor.Event.decode([[1, 2, 3]]) == nil)
    }
}
