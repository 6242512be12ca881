import DetectionEngine
@testable import DetectionService
import Foundation
import RoadSaveModel
import Testing
import Wire
import ZeroMQ

/// The detection service in this process, fed through a real PUB socket as sensor-ingest would, with a platform
/// that is slow for one device only: the other device's events must not wait for it.
@Suite(.serialized) struct SlowPlatformTests {
    /// Settings served at once; evaluations of the user "slow" take `delay` seconds.
    struct SlowPlatform: Platform {
        var settings: DetectionSettings
        var delay: Double

        func settings(applicationID: String) async throws -> DetectionSettings { settings }

        func evaluate(_ candidate: CrashCandidate) async throws -> CrashVerdict {
            if candidate.user == "slow" { try await Task.sleep(nanoseconds: UInt64(delay * 1e9)) }
            return .high
        }
    }

    final class Received: @unchecked Sendable {
        private let lock = NSLock()
        private var items: [(event: RoadSaveEvent, at: Double)] = []
        private var heartbeats = 0
        func add(_ event: RoadSaveEvent) { lock.withLock { items.append((event, MonotonicClock.now())) } }
        func heartbeat() { lock.withLock { heartbeats += 1 } }
        var events: [(event: RoadSaveEvent, at: Double)] { lock.withLock { items } }
        var heartbeatCount: Int { lock.withLock { heartbeats } }
    }

    /// A drive at 15 m/s, a 45 g impact, then standing still: one device's records.
    static func crashingDrive(user: String, start: Double, longitude: Double) -> [SensorRecord] {
        let device = DeviceID(app: "app-1", user: user)
        var records = [SensorRecord(device: device, seq: 0, t: start, payload: .activity(ActivityObservation(.automotive, .high)))]
        var t = start
        var lon = longitude
        for _ in 0..<60 {
            t += 1
            lon += 15 / (6_371_008.8 * cos(-33.9 * .pi / 180)) * 180 / .pi
            records.append(SensorRecord(device: device, seq: UInt64(records.count), t: t,
                                        payload: .location(LocationFix(latitude: -33.9, longitude: lon, speed: 15, horizontalAccuracy: 5))))
        }
        records.append(SensorRecord(device: device, seq: UInt64(records.count), t: t + 0.5,
                                    payload: .impact(ImpactObservation(peakG: 45, durationMs: 90))))
        for _ in 0..<20 {
            t += 1
            records.append(SensorRecord(device: device, seq: UInt64(records.count), t: t,
                                        payload: .location(LocationFix(latitude: -33.9, longitude: lon, speed: 0, horizontalAccuracy: 5))))
        }
        return records
    }

    static func port() -> Int { Int.random(in: 20_000...32_000) }

    @Test func aSlowPlatformHoldsUpOnlyTheDeviceWaitingForIt() async throws {
        var settings = DetectionSettings()
        settings.stopDelay = 5
        settings.crashSettleTime = 1
        settings.crashDecisionDelay = 3
        settings.crashClusterWindow = 5
        let (recordsPort, controlPort, eventsPort) = (Self.port(), Self.port(), Self.port())
        var configuration = DetectionConfiguration()
        configuration.recordsEndpoint = "tcp://127.0.0.1:\(recordsPort)"
        configuration.controlEndpoint = "tcp://127.0.0.1:\(controlPort)"
        configuration.eventsEndpoint = "tcp://127.0.0.1:\(eventsPort)"
        configuration.heartbeatInterval = 0.2
        configuration.logLevel = .warning
        let service = try DetectionService(configuration: configuration, platform: SlowPlatform(settings: settings, delay: 3))
        let serviceThread = Thread { try? service.run() }
        serviceThread.start()

        // The test's own sockets, as ingest's publisher and the notifier's subscriber, on a reactor of its own.
        let context = try ZMQContext()
        let reactor = Reactor(name: "test", context: context)
        let received = Received()
        reactor.start { loop in
            let publisher = try loop.socket(.pub)
            try publisher.bind("tcp://127.0.0.1:\(recordsPort)")
            loop.setValue(publisher)
            let subscriber = try loop.socket(.sub)
            try subscriber.subscribe(Topic.events)
            try subscriber.connect("tcp://127.0.0.1:\(eventsPort)")
            loop.onReadable(subscriber) { socket in
                while let frames = try? socket.receive(dontWait: true) {
                    guard let envelope = try? Envelope(frames: frames) else { continue }
                    if envelope.header.kind == .heartbeat { received.heartbeat() }
                    if let event = try? envelope.event() { received.add(event) }
                }
            }
        }
        defer {
            service.stop()
            reactor.stop()
            _ = reactor.wait()
        }
        // Detection is up once its heartbeats arrive; give its subscription a moment to reach our publisher.
        let up = MonotonicClock.now() + 10
        while received.heartbeatCount == 0, MonotonicClock.now() < up { try await Task.sleep(nanoseconds: 50_000_000) }
        #expect(received.heartbeatCount > 0, "detection published no heartbeat")
        try await Task.sleep(nanoseconds: 500_000_000)

        let now = Date().timeIntervalSince1970
        let records = (Self.crashingDrive(user: "slow", start: now - 120, longitude: 18.4)
            + Self.crashingDrive(user: "fast", start: now - 120, longitude: 18.5)).sorted { $0.t < $1.t }
        let sent = try await reactor.run { loop in
            let publisher = loop.value(ZMQSocket.self)!
            var sequence = SequenceCounter()
            for record in records {
                try publisher.send(Envelope.record(record, shards: 16, producer: "test-ingest", sequence: sequence.next(),
                                                   sentAt: now).frames())
            }
            return records.count
        }
        #expect(sent == 164)

        func crashes() -> [(user: String, at: Double)] {
            received.events.compactMap { item in
                if case .crashDetected = item.event.body { (item.event.device.user, item.at) } else { nil }
            }
        }
        let deadline = MonotonicClock.now() + 15
        while crashes().count < 2, MonotonicClock.now() < deadline { try await Task.sleep(nanoseconds: 50_000_000) }
        let crashTimes = crashes()
        #expect(crashTimes.map(\.user) == ["fast", "slow"], "\(crashTimes)")
        if crashTimes.count == 2 {
            // The fast device's alert went out while the slow one was still being evaluated.
            #expect(crashTimes[1].at - crashTimes[0].at > 2, "\(crashTimes)")
        }
        // Trips of both devices started without waiting for either evaluation.
        #expect(Set(received.events.filter { $0.event.name == "tripDidStart" }.map(\.event.device.user)) == ["fast", "slow"])
    }
}
