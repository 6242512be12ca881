import Foundation
import RoadSaveTestKit
import SystemKit
import Testing
import ZeroMQ

/// libzmq counts a connection alive only when a whole frame arrives, and a PING waits behind a frame being sent: a
/// frame that takes longer than the heartbeat timeout to cross the link has its connection dropped and, sent again,
/// dropped again. Gateway batches are such frames; `LinkTimings.receivingLargeFrames` (ingest) and
/// `sendingLargeFrames` (a gateway) let them through a slow link, while each end still hears the other's PINGs.
@Suite(.timeLimit(.minutes(1)))
struct LargeFramesOverASlowLinkTests {
    /// Heartbeats every 0.2 s, a connection dropped after 1 s without a frame.
    static let short = LinkTimings(
        heartbeatInterval: 0.2, heartbeatTimeout: 1, connectTimeout: 0.5, reconnectIntervalMaximum: 0.5)

    /// A DEALER sends one frame of `bytes` through a relay of 200 kB/s to a ROUTER; returns whether it arrived within
    /// `patience` seconds, and how many connections the ROUTER saw dropped meanwhile.
    static func send(bytes: Int, receiver: LinkTimings, sender: LinkTimings, patience: Double) async throws
        -> (arrived: Bool, connections: Int)
    {
        let port = Ports.reserve(1)[0]
        let relay = try LinkRelay(to: port)
        defer { relay.stop() }
        relay.throttle(bytesPerSecond: 200_000)
        return try await onThread {
            let context = try ZMQContext()
            defer { context.terminate() }
            let router = try ZMQSocket(context, .router)
            defer { router.close() }
            try router.setLinkTimings(receiver)
            let watch = try ConnectionWatch(router, context: context, name: "router")
            defer { watch.close() }
            try router.bind(Ports.tcp(port))
            let dealer = try ZMQSocket(context, .dealer)
            defer { dealer.close() }
            try dealer.setLinkTimings(sender)
            try dealer.connect(relay.endpoint)
            _ = try dealer.send([[UInt8](repeating: 7, count: bytes)])
            let deadline = MonotonicClock.now() + patience
            var connections = 0
            while MonotonicClock.now() < deadline {
                connections += watch.changes().filter { $0 == .established }.count
                if let frames = try router.receive(dontWait: true), frames.last?.count == bytes {
                    return (true, connections)
                }
                usleep(20_000)
            }
            return (false, connections)
        }
    }

    @Test func aFrameSlowerThanTheTimeoutArrivesWithTheLargeFrameAllowance() async throws {
        // 600 kB at 200 kB/s: three times the timeout.
        let result = try await Self.send(
            bytes: 600_000, receiver: Self.short.receivingLargeFrames, sender: Self.short.sendingLargeFrames,
            patience: 30)
        #expect(result.arrived)
        #expect(result.connections == 1, "one connection, never dropped")
    }

    @Test func withoutItTheSameFrameNeverArrives() async throws {
        // The hazard the allowance is for (the premise of the test above): dropped and made anew again and again.
        let result = try await Self.send(bytes: 600_000, receiver: Self.short, sender: Self.short, patience: 10)
        #expect(!result.arrived)
        #expect(result.connections >= 2)
    }
}
