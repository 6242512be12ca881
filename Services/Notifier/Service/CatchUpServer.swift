import Foundation
import RoadSaveModel
import Wire
import ZeroMQ

/// Answers catch-up requests (see `CatchUpRequest` for the grammar) on a ROUTER socket of the service's reactor,
/// from the store. Runs on the reactor thread, between the writes, so every reply is a consistent view of the store.
final class CatchUpServer {
    private let socket: ZMQSocket
    private let store: NotifierStore
    private let format: EventFormat
    private let retentionAge: Double
    private let log: Log
    /// The subscriber key's allow-list entry for a request's ZAP User-Id; nil without keys.
    private let subscriberKey: (String?) -> CurveAllowList.Entry?

    init(socket: ZMQSocket, loop: ReactorLoop, store: NotifierStore, format: EventFormat, retentionAge: Double, log: Log,
         subscriberKey: @escaping (String?) -> CurveAllowList.Entry? = { _ in nil }) {
        self.socket = socket
        self.subscriberKey = subscriberKey
        self.store = store
        self.format = format
        self.retentionAge = retentionAge
        self.log = log
        loop.onReadable(socket) { [unowned self] socket in receive(socket) }
    }

    private func receive(_ socket: ZMQSocket) {
        socket.drain(limit: 100, failed: { log.error("catch-up socket failed", ["error": "\($0)"]) }) { frames in
            // [identity, (empty delimiter of a REQ or a polite DEALER,) request]
            guard frames.count == 2 || (frames.count == 3 && frames[1].isEmpty) else {
                log.warning("catch-up request skipped: expected one frame", ["frames": String(frames.count - 1)])
                return true
            }
            let reply = Self.answer(frames[frames.count - 1], store: store, format: format, retentionAge: retentionAge,
                                    key: subscriberKey(socket.lastUserID))
            do {
                _ = try socket.send(Array(frames.dropLast()) + [reply], dontWait: true)
            } catch {
                log.warning("catch-up reply not sent", ["error": "\(error)"])
            }
            return true
        }
    }

    /// The reply frame to a request frame.
    /// With a subscriber `key` limited to applications, events of other applications are left out of the reply (its
    /// `next` still moves past them).
    static func answer(_ request: [UInt8], store: NotifierStore, format: EventFormat, retentionAge: Double,
                       key: CurveAllowList.Entry? = nil) -> [UInt8] {
        do {
            let request = try CatchUpRequest(json: request)
            return try answer(request, store: store, format: format, retentionAge: retentionAge, key: key)
        } catch let problem as CatchUpRequest.Problem {
            return JSONText.bytes(.object([("error", .string(problem.message))]))
        } catch {
            return JSONText.bytes(.object([("error", .string("the store failed: \(error)"))]))
        }
    }

    static func answer(_ request: CatchUpRequest, store: NotifierStore, format: EventFormat,
                       retentionAge: Double, key: CurveAllowList.Entry? = nil) throws -> [UInt8] {
        let head = try store.head()
        let oldest = try store.oldestPosition() ?? head + 1
        let window = Self.days(retentionAge)
        let after: UInt64
        switch request.start {
        case let .position(position):
            guard position <= head else {
                throw CatchUpRequest.Problem("after: position \(position) is ahead of the newest (\(head))")
            }
            // The events between `position` and the oldest kept were deleted: the subscriber would get a gap.
            // 0 asks for everything kept, whatever that is.
            guard position == 0 || position + 1 >= oldest || position >= head else {
                throw CatchUpRequest.Problem("after: position \(position) is older than the retention window (\(window)): "
                                             + "the oldest event kept is at position \(oldest)")
            }
            after = position
        case let .eventID(eventID):
            // Another application's event answers exactly as an unknown one: a limited key learns nothing of it.
            guard let position = try store.position(ofEventID: eventID, applications: key?.applications) else {
                throw CatchUpRequest.Problem("afterEventID: unknown eventID \(eventID) (never stored here, or older than "
                                             + "the retention window of \(window))")
            }
            after = position
        }
        let events = try store.events(after: after, limit: request.max, prefix: request.prefix)
        // A full reply stops at its last event; a short one examined everything up to the head.
        let next = events.count == request.max ? events.last!.position : head
        var text = "{\"events\":["
        var first = true
        for event in events where key?.allows(application: event.event.device.app) ?? true {
            if !first { text += "," }
            first = false
            text += "{\"position\":\(event.position),\"topic\":\(JSONText.encode(.string(event.topic))),\"event\":"
            text += event.json(format) + "}"
        }
        text += "],\"head\":\(head),\"next\":\(next)}"
        return Array(text.utf8)
    }

    static func days(_ seconds: Double) -> String {
        let days = seconds / 86_400
        if days >= 1, days == days.rounded() { return "\(Int(days)) days" }
        return "\(JSONText.number((seconds * 1000).rounded() / 1000)) s"
    }
}
