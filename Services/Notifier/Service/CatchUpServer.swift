import Foundation
import Logging
import RecordCodecs
import RoadSaveModel
import Wire
import ZeroMQ

/// Answers catch-up requests (see `CatchUpRequest` for the grammar) on a ROUTER socket of the service's reactor,
/// from the store. Runs on the reactor thread, between the writes, so every reply is a consistent view of the store.
///
/// A request with `waitMs` that finds nothing for its key is held (`HeldCatchUps`, bounded) until the service says it
/// stored events (`stored()`, after the commit) and one is for that key, or until its wait ends. Held requests are
/// answered in the order they came. The ROUTER is mandatory (`ZMQ_ROUTER_MANDATORY`): a reply to a peer that is
/// gone fails, and that peer's other held requests are dropped.
///
/// With keys, each request is answered for its connection's key as the allow-list lists it when the answer is made,
/// a held one too: a key removed or replaced since the handshake gets `{"error": …}` and no events.
final class CatchUpServer {
    private let socket: ZMQSocket
    private let store: NotifierStore
    private let format: EventFormat
    private let retentionAge: Double
    private let log: Log
    /// The handler that admitted the subscribers' keys; nil without keys (every application).
    private let zap: ZAPHandler?
    private let loop: ReactorLoop
    private(set) var held: HeldCatchUps
    private var deadlineTimer: (id: TimerID, at: Double)?
    /// Requests answered, by outcome (for /metrics).
    private(set) var requests: [NotifierMetrics.CatchUpOutcome: Int] = [:]

    init(
        socket: ZMQSocket, loop: ReactorLoop, store: NotifierStore, format: EventFormat, retentionAge: Double, log: Log,
        maximumHeld: Int = HeldCatchUps.defaultCapacity, zap: ZAPHandler? = nil
    ) {
        self.socket = socket
        self.loop = loop
        held = HeldCatchUps(capacity: maximumHeld)
        self.zap = zap
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
            take(frames[frames.count - 1], route: Array(frames.dropLast()), peer: socket.lastPeer)
            return true
        }
    }

    /// The subscriber key's entry in force for a request of `peer` (nil without keys); throws when the key was removed
    /// or replaced since its handshake.
    private func key(for peer: CurvePeer?) throws(CurveKeyRefusal) -> CurveAllowList.Entry? {
        try zap?.entry(for: peer, role: .subscriber).get()
    }

    /// One request: answered now, or held (a long-poll that found nothing for its key).
    private func take(_ frame: [UInt8], route: [[UInt8]], peer: CurvePeer?) {
        let request: CatchUpRequest
        do {
            request = try CatchUpRequest(json: frame)
        } catch {
            requests[.refused, default: 0] += 1
            send(Self.error(error.message), to: route)
            return
        }
        let found: Found
        do {
            found = try Self.reply(
                request, store: store, format: format, retentionAge: retentionAge,
                key: key(for: peer))
        } catch {
            if let refusal = error as? CurveKeyRefusal {
                log.warning(
                    "catch-up request refused: subscriber key no longer listed",
                    ["key": refusal.name, "reason": refusal.message])
            }
            requests[(error as? CatchUpRequest.Problem)?.isGap == true ? .gap : .refused, default: 0] += 1
            send(Self.error(error), to: route)
            return
        }
        requests[.served, default: 0] += 1
        guard found.isEmptyAtHead, let wait = request.waitMilliseconds, wait > 0 else {
            send(found.bytes, to: route)
            return
        }
        var waiting = request
        waiting.start = .position(found.next)
        guard
            held.hold(
                HeldCatchUps.Held(
                    route: route, request: waiting, sender: peer,
                    deadline: loop.now + Double(wait) / 1000))
        else {
            log.warning(
                "catch-up long-poll refused: too many held", ["held": String(held.count), "key": peer?.name ?? "none"])
            send(
                Self.error("waitMs: \(held.capacity) requests are waiting already; ask again later, or without waitMs"),
                to: route)
            return
        }
        scheduleDeadline()
    }

    /// Events were stored (and committed): each held request that now has an event for its key is answered, in the
    /// order they came; the others wait on from the new head.
    func stored() {
        guard !held.isEmpty else { return }
        var stillWaiting: [HeldCatchUps.Held] = []
        var gone: Set<[UInt8]> = []
        for var waiting in held.takeAll() where !gone.contains(waiting.peer) {
            do {
                let found = try Self.reply(
                    waiting.request, store: store, format: format, retentionAge: retentionAge,
                    key: key(for: waiting.sender))
                if found.isEmptyAtHead {
                    waiting.request.start = .position(found.next)
                    stillWaiting.append(waiting)
                } else if !send(found.bytes, to: waiting.route) {
                    gone.insert(waiting.peer)
                }
            } catch {
                if !send(Self.error(error), to: waiting.route) { gone.insert(waiting.peer) }
            }
        }
        held.putBack(stillWaiting.filter { !gone.contains($0.peer) })
        for peer in gone { held.drop(peer: peer) }
        scheduleDeadline()
    }

    /// The service stops: every held request is answered now (with what there is: nothing for its key).
    func answerEveryHeld() {
        answer(held.takeAll())
        scheduleDeadline()
    }

    private func answerDue() {
        deadlineTimer = nil
        answer(held.due(now: loop.now))
        scheduleDeadline()
    }

    private func answer(_ requests: [HeldCatchUps.Held]) {
        var gone: Set<[UInt8]> = []
        for waiting in requests where !gone.contains(waiting.peer) {
            let bytes: [UInt8]
            do {
                bytes = try Self.reply(
                    waiting.request, store: store, format: format, retentionAge: retentionAge,
                    key: key(for: waiting.sender)
                ).bytes
            } catch {
                bytes = Self.error(error)
            }
            if !send(bytes, to: waiting.route) { gone.insert(waiting.peer) }
        }
        for peer in gone { held.drop(peer: peer) }
    }

    /// One timer, at the earliest deadline held.
    private func scheduleDeadline() {
        let next = held.nextDeadline
        if let timer = deadlineTimer, timer.at == next { return }
        if let timer = deadlineTimer { loop.cancel(timer.id) }
        deadlineTimer = nil
        guard let next else { return }
        deadlineTimer = (loop.schedule(at: next) { [unowned self] in answerDue() }, next)
    }

    /// False when the peer is gone (its held requests are dropped by the caller).
    @discardableResult
    private func send(_ reply: [UInt8], to route: [[UInt8]]) -> Bool {
        do {
            _ = try socket.send(route + [reply], dontWait: true)
            return true
        } catch  where error.code == EHOSTUNREACH {
            log.info("catch-up peer gone: its reply and held requests dropped", ["held": String(held.count)])
            return false
        } catch {
            log.warning("catch-up reply not sent", ["error": "\(error)"])
            return true
        }
    }

    static func error(_ message: String) -> [UInt8] {
        JSONText.bytes(.object([("error", .string(message))]))
    }

    static func error(_ error: any Error) -> [UInt8] {
        if let problem = error as? CatchUpRequest.Problem { return Self.error(problem.message) }
        if let refusal = error as? CurveKeyRefusal { return Self.error(refusal.message) }
        return Self.error("the store failed: \(error)")
    }

    /// A reply, with what a long-poll needs to know of it.
    struct Found {
        var bytes: [UInt8]
        /// Events in the reply (for the key).
        var events: Int
        var next: UInt64
        var head: UInt64
        /// Nothing for the key, and everything up to the head examined: a long-poll waits.
        var isEmptyAtHead: Bool { events == 0 && next >= head }
    }

    /// The reply frame to a request frame.
    /// With a subscriber `key` limited to applications, events of other applications are left out of the reply (its
    /// `next` still moves past them).
    static func answer(
        _ request: [UInt8], store: NotifierStore, format: EventFormat, retentionAge: Double,
        key: CurveAllowList.Entry? = nil
    ) -> [UInt8] {
        do {
            let request = try CatchUpRequest(json: request)
            return try answer(request, store: store, format: format, retentionAge: retentionAge, key: key)
        } catch let problem as CatchUpRequest.Problem {
            return JSONText.bytes(.object([("error", .string(problem.message))]))
        } catch {
            return JSONText.bytes(.object([("error", .string("the store failed: \(error)"))]))
        }
    }

    static func answer(
        _ request: CatchUpRequest, store: NotifierStore, format: EventFormat,
        retentionAge: Double, key: CurveAllowList.Entry? = nil
    ) throws -> [UInt8] {
        try reply(request, store: store, format: format, retentionAge: retentionAge, key: key).bytes
    }

    static func reply(
        _ request: CatchUpRequest, store: NotifierStore, format: EventFormat,
        retentionAge: Double, key: CurveAllowList.Entry? = nil
    ) throws -> Found {
        let head = try store.head()
        let oldest = try store.oldestPosition() ?? head + 1
        let window = Self.days(retentionAge)
        let after: UInt64
        switch request.start {
        case .position(let position):
            guard position <= head else {
                throw CatchUpRequest.Problem("after: position \(position) is ahead of the newest (\(head))")
            }
            // The events between `position` and the oldest kept were deleted: the subscriber would get a gap.
            // 0 asks for everything kept, whatever that is.
            guard position == 0 || position + 1 >= oldest || position >= head else {
                throw CatchUpRequest.Problem(
                    "after: position \(position) is older than the retention window (\(window)): "
                        + "the oldest event kept is at position \(oldest)", isGap: true)
            }
            after = position
        case .eventID(let eventID):
            // Another application's event answers exactly as an unknown one: a limited key learns nothing of it.
            guard let position = try store.position(ofEventID: eventID, applications: key?.applications) else {
                throw CatchUpRequest.Problem(
                    "afterEventID: unknown eventID \(eventID) (never stored here, or older than "
                        + "the retention window of \(window))")
            }
            after = position
        }
        let events = try store.events(after: after, limit: request.max, prefix: request.prefix)
        // A full reply stops at its last event; a short one examined everything up to the head.
        let next = events.count == request.max ? events.last!.position : head
        var text = "{\"events\":["
        var count = 0
        for event in events where key?.allows(application: event.event.device.app) ?? true {
            if count > 0 { text += "," }
            count += 1
            text += "{\"position\":\(event.position),\"topic\":\(JSONText.encode(.string(event.topic))),\"event\":"
            text += event.json(format) + "}"
        }
        text += "],\"head\":\(head),\"next\":\(next)}"
        return Found(bytes: Array(text.utf8), events: count, next: next, head: head)
    }

    static func days(_ seconds: Double) -> String {
        let days = seconds / 86_400
        if days >= 1, days == days.rounded() { return "\(Int(days)) days" }
        return "\(JSONText.number((seconds * 1000).rounded() / 1000)) s"
    }
}
