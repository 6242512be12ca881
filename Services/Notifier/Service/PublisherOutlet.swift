import Logging
import RecordCodecs
import RoadSaveModel
import ZeroMQ

/// The PUB socket for alerting systems: frames `[<event>.<app>.<user>, JSON, position]` (PROTOCOL §7; the third
/// frame is the event's position in the notifier's stream, decimal ASCII). An entry is taken once handed to the
/// socket. A crash between publishing and deleting the rows publishes those events again after the restart (at
/// least once): subscribers drop positions they have seen.
final class PublisherOutlet: SinkOutlet {
    static let sinkKey = "pub"
    let key = PublisherOutlet.sinkKey
    let name: String
    var window: OutboxWindow
    private let socket: ZMQSocket
    private let format: EventFormat
    private let log: Log
    private let report: (OutletReport) -> Void
    private var stopping = false
    /// Events that must not go out live (`SubscriptionGate.withholds`): taken without a send, left to catch-up.
    private let withholds: (RoadSaveEvent) -> Bool
    private var withheldApplications: Set<String> = []

    init(
        socket: ZMQSocket, format: EventFormat, capacity: Int, log: Log,
        withholds: @escaping (RoadSaveEvent) -> Bool = { _ in false }, report: @escaping (OutletReport) -> Void
    ) {
        self.socket = socket
        self.withholds = withholds
        self.format = format
        self.log = log
        self.report = report
        window = OutboxWindow(capacity: capacity)
        name = "pub(\(socket.lastEndpoint))"
    }

    func take(_ entries: [StoredEvent]) {
        var result = OutletReport(sink: key)
        for entry in entries {
            guard !stopping else {
                result.released += 1
                continue
            }
            if withholds(entry.event) {
                let app = entry.event.device.app
                if withheldApplications.insert(app).inserted {
                    log.warning(
                        "events of an application whose ID has a \".\" are not published live while a subscriber key "
                            + "limited to applications could match their topics; catch-up has them",
                        ["app": Secret.mask(app), "eventID": entry.event.eventID])
                }
                result.taken.append(entry.position)
                continue
            }
            do {
                try socket.send(Self.frames(entry, format: format))
                result.taken.append(entry.position)
            } catch {
                log.error(
                    "event not published: left in the outbox until the next start",
                    ["eventID": entry.event.eventID, "position": String(entry.position), "error": "\(error)"])
                result.released += 1
            }
        }
        report(result)
    }

    /// `[topic, body, position]`.
    static func frames(_ entry: StoredEvent, format: EventFormat) -> [[UInt8]] {
        [Array(entry.topic.utf8), Array(entry.json(format).utf8), Array(String(entry.position).utf8)]
    }

    func stopTaking() {
        stopping = true
    }

    func finisher(deadline: Double) -> @Sendable () async -> Void {
        {}
    }
}
