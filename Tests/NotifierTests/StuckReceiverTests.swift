import Foundation
import Logging
import RoadSaveTestKit
import Storage
import SystemKit
import Testing

@testable import NotifierService

#if canImport(Glibc)
    import Glibc
#endif

/// A webhook receiver that accepts connections and never answers must not make the notifier's memory grow: events
/// keep arriving and are stored, and wait in the webhook's outbox on disk; the sink holds at most its window.
@Suite(.serialized) struct StuckReceiverTests {
    /// A TCP listener on loopback that accepts every connection and never reads or writes.
    final class StuckReceiver: @unchecked Sendable {
        let port: Int
        private let listener: Int32
        private let held = Locked<[Int32]>([])

        init() throws {
            let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            self.listener = listener
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress -> Bool in
                    bind(listener, socketAddress, length) == 0 && listen(listener, 128) == 0
                        && getsockname(listener, socketAddress, &length) == 0
                }
            }
            guard bound else { throw POSIXError(.EADDRNOTAVAIL) }
            port = Int(UInt16(bigEndian: address.sin_port))
            let held = held
            Thread {
                while true {
                    let connection = accept(listener, nil, nil)
                    if connection < 0 { return }
                    held.withLock { $0.append(connection) }
                }
            }.start()
        }

        var connections: Int { held.current.count }

        func close() {
            shutdown(listener, Int32(SHUT_RDWR))
            Glibc.close(listener)
            for connection in held.current { Glibc.close(connection) }
        }
    }

    @Test func thousandsOfEventsForAReceiverThatNeverAnswersWaitOnDiskNotInMemory() async throws {
        let folder = Fixtures.folder()
        defer { Fixtures.remove(folder) }
        let receiver = try StuckReceiver()
        defer { receiver.close() }
        let storePath = folder + "/data/notifier.sqlite"
        let source = FakeEventSource(feedID: "detection-store-stuck", storePath: storePath)
        let detection = try await FakeDetection(source: source)
        var configuration = NotifierConfiguration()
        configuration.dataDirectory = folder + "/data"
        configuration.eventsEndpoints = [detection.endpoint]
        configuration.publishEndpoint = nil
        configuration.catchUpEndpoint = nil
        configuration.webhooks = [URL(string: "http://127.0.0.1:\(receiver.port)/hook")!]
        configuration.webhookSecret = Array("a-secret-of-sixteen-bytes".utf8)
        configuration.heartbeatInterval = 0.2
        configuration.logLevel = .error
        let notifier = try RunningNotifier(configuration)

        let total = 20_000
        let events = (0..<(total / 2)).flatMap { number in
            [
                Fixtures.tripStart("user-\(number % 50)", trip: "stuck-\(number)"),
                Fixtures.tripEnd("user-\(number % 50)", trip: "stuck-\(number)"),
            ]
        }
        let window = NotifierService.window
        var mostInHand = 0
        for start in stride(from: 0, to: events.count, by: 2000) {
            try await detection.add(Array(events[start..<min(events.count, start + 2000)]))
            let inHand = try await notifier.service.entriesInHand()
            mostInHand = max(mostInHand, inHand.values.max() ?? 0)
        }
        // Everything is stored (and acknowledged to detection) although the receiver never answered one.
        let stored = try await eventually(timeout: 60) {
            let inHand = try await notifier.service.entriesInHand()
            mostInHand = max(mostInHand, inHand.values.max() ?? 0)
            return source.acknowledgements.current.last?.acknowledged == UInt64(total)
        }
        #expect(stored, "the notifier stopped pulling events while a webhook receiver was stuck")
        let inHand = try await notifier.service.entriesInHand()
        mostInHand = max(mostInHand, inHand.values.max() ?? 0)
        #expect(mostInHand > 0, "the webhook sink was handed events")
        #expect(mostInHand <= window, "the webhook sink held \(mostInHand) events in memory; its window is \(window)")
        let waiting = try SQLiteDatabase(path: storePath).integer("SELECT count(*) FROM outbox")
        #expect(waiting == Int64(total), "every event waits in the outbox on disk: \(waiting ?? -1) rows")
        #expect(receiver.connections > 0, "the sink did connect to the receiver")
        print(
            "stuck receiver: \(total) events stored, at most \(mostInHand) in the webhook sink's hands, "
                + "\(receiver.connections) connections held open by the receiver")

        await notifier.stop()
        #expect(notifier.isFinished, "the notifier stops although deliveries hang (a stop that hangs never finishes)")
        await detection.stop()
    }
}
