import Foundation
import RecordCodecs
import SystemKit
import Wire
import ZeroMQ

/// A subscription's work, on a thread of its own (`start`): the live socket (SUB on the notifier's PUB, frames
/// `[<event>.<app>.<user>, JSON, position]`) and the catch-up endpoint, PROTOCOL §7's recipe for missing nothing
/// ("What a live subscriber may miss, and how it gets it"), done once here for every client:
/// - resuming from a position: subscribed first (what is published meanwhile waits in the socket, its queue
///   unbounded then), the past read from the catch-up endpoint, then live, dropping positions already delivered;
/// - on every (re)connection handshake of the live socket, what came after the last position seen, at once and once
///   more a second later, asked again while the endpoint does not answer, live events held meanwhile
///   (`ReconnectCatchUp`);
/// - a jump in the live positions (the first live event, or any with no filter) filled from the catch-up endpoint;
/// - a live endpoint that refuses a key the catch-up endpoint takes: followed by catch-up long-polls instead.
///
/// Every wait is a `zmq_poll` of at most 100 ms, between which the consumer's going away is noticed. Deliveries go
/// to the consumer through a `DeliveryHandoff`; the engine never touches Swift's cooperative pool.
final class SubscriberEngine {
    /// What the engine needs, checked and read (keys loaded) when the subscriber was made.
    struct Settings: Sendable {
        var endpoint: String
        var catchUpEndpoint: String
        var keys: CurveClientKeys?
        var filter: RoadSaveSubscriber.Filter
        var link: LinkTimings
        var followsByCatchUpOnly: Bool
        var reconnectCatchUpFailure: ReconnectCatchUpFailure
    }

    private let settings: Settings
    private let handoff: DeliveryHandoff
    private let notify: (SubscriberNotice) -> Void
    /// The highest position delivered or passed over.
    private var seen: UInt64?
    private let context: ZMQContext

    private init(
        settings: Settings, handoff: DeliveryHandoff, notify: @escaping (SubscriberNotice) -> Void
    ) throws(RoadSaveClientError) {
        self.settings = settings
        self.handoff = handoff
        self.notify = notify
        do {
            context = try ZMQContext()
        } catch {
            throw .connectionFailed(endpoint: settings.endpoint, reason: "cannot make a ZeroMQ context: \(error)")
        }
    }

    /// Starts a subscription on a thread of its own, from `start` (nil: from now), until the consumer goes away or an
    /// error ends it (handed to the consumer).
    static func start(
        _ settings: Settings, from start: CatchUpRequest.Start?, handoff: DeliveryHandoff,
        notices: (@Sendable (SubscriberNotice) -> Void)?
    ) {
        let thread = Thread {
            do throws(RoadSaveClientError) {
                let engine = try SubscriberEngine(settings: settings, handoff: handoff, notify: notices ?? { _ in })
                defer { engine.context.terminate() }
                try engine.run(from: start)
                handoff.finish(throwing: nil)
            } catch {
                handoff.finish(throwing: error)
            }
        }
        thread.name = "roadsave-subscriber"
        thread.start()
    }

    private var stopped: Bool { handoff.isCancelled }

    private func run(from start: CatchUpRequest.Start?) throws(RoadSaveClientError) {
        if settings.followsByCatchUpOnly {
            try followByCatchUp(from: start)
        } else {
            try follow(from: start)
        }
    }

    private func catchUpClient() throws(RoadSaveClientError) -> CatchUpClient {
        try CatchUpClient(
            context: context, endpoint: settings.catchUpEndpoint, keys: settings.keys, link: settings.link,
            shouldStop: { [handoff] in handoff.isCancelled })
    }

    // MARK: Live, with catch-ups

    private func follow(from start: CatchUpRequest.Start?) throws(RoadSaveClientError) {
        let socket: ZMQSocket
        let watch: ConnectionWatch
        do {
            socket = try ZMQSocket(context, .sub, linger: 0)
            // While catching up, live events wait in the socket: none may be dropped for a full queue.
            if start != nil { try socket.setReceiveHighWaterMark(0) }
            for prefix in settings.filter.prefixes { try socket.subscribe(prefix) }
            if let keys = settings.keys { try socket.setCurveClient(keys) }
            // Heartbeats: a connection that went silent (a cut link, a NAT that forgot it) is dropped and made anew,
            // and what was published meanwhile is caught up (below), instead of waiting on a dead one.
            try socket.setLinkTimings(settings.link)
            // Its handshakes: on each reconnect what was published meanwhile is read from the catch-up endpoint.
            watch = try ConnectionWatch(socket, context: context, name: "subscriber")
            try socket.connect(settings.endpoint)
        } catch {
            throw .connectionFailed(
                endpoint: settings.endpoint, reason: "cannot subscribe to \(settings.endpoint): \(error)")
        }
        var catchUp: CatchUpClient?
        var live: (socket: ZMQSocket, watch: ConnectionWatch)? = (socket, watch)
        defer {
            catchUp?.close()
            live?.watch.close()
            live?.socket.close()
        }
        notify(.subscribed(endpoint: settings.endpoint))
        if let start {
            catchUp = try catchUpClient()
            // Subscribed first: whatever is published from now on waits in the socket while the past is read.
            guard try read(catchUp!, after: start, before: nil) else { return }
        }
        var firstLive = true
        var reconnects = ReconnectCatchUp(known: start == nil ? nil : seen)
        while let (socket, watch) = live {
            if stopped { return }
            // While a reconnect's catch-up is owed, live events wait in the socket: they come after it.
            let holding = reconnects.holdsLive
            let ready: [ZMQPollEvents]
            do {
                let items = holding ? [ZMQPollItem(watch.reader)] : [ZMQPollItem(watch.reader), ZMQPollItem(socket)]
                ready = try ZMQPoller.poll(items, timeoutMilliseconds: 100)
            } catch {
                throw .connectionFailed(
                    endpoint: settings.endpoint, reason: "subscription to \(settings.endpoint) failed: \(error)")
            }
            var refused: UInt32?
            for change in watch.changes() {
                switch change {
                case .established: reconnects.connected(at: MonotonicClock.now())
                case .refused(let status): refused = status
                case .lost: break
                }
            }
            if let refused {
                // The live endpoint does not take the key. If the catch-up endpoint does, the key is one limited to
                // applications on a notifier whose libzmq cannot filter live (PROTOCOL §9): follow by catch-up.
                if catchUp == nil { catchUp = try catchUpClient() }
                let client = catchUp!
                guard let head = try client.head() else { return }
                watch.close()
                socket.close()
                live = nil
                notify(.liveKeyRefused(endpoint: settings.endpoint, status: refused))
                let from = seen ?? reconnects.baseline ?? head
                skip(from)
                return try followByCatchUp(client, from: .position(from))
            }
            if let due = reconnects.due(at: MonotonicClock.now(), seen: seen) {
                guard try catchUpAfterReconnect(due, client: &catchUp, reconnects: &reconnects) else { return }
            }
            guard !holding, !reconnects.holdsLive, ready[1].contains(.readable) else { continue }
            while let message = try receive(socket) {
                guard message.count >= 3, let position = UInt64(String(decoding: message[2], as: UTF8.self)) else {
                    notify(.skippedMessage(frames: message.count))
                    continue
                }
                let topic = String(decoding: message[0], as: UTF8.self)
                if let seen, position <= seen { continue }
                // A jump: events between may have been missed (published before the subscription took effect, or
                // lost with a notifier that crashed): the catch-up endpoint has them.
                if let catchUp, let seen, position > seen + 1, firstLive || settings.filter.takesEverything {
                    guard try read(catchUp, after: .position(seen), before: position) else { return }
                }
                firstLive = false
                guard settings.filter.accepts(topic) else {
                    skip(position)
                    continue
                }
                let json = Self.line(message[1])
                let event = try? EventJSONReader.event(from: JSONParser.parse(Array(json.utf8)), legacy: "legacy")
                guard deliver(position: position, topic: topic, json: json, event: event) else { return }
            }
        }
    }

    /// What `ReconnectCatchUp` asked for: the head at the first connection, or what came after a position (a
    /// reconnect). False when the subscription should end (the consumer went away).
    private func catchUpAfterReconnect(
        _ due: ReconnectCatchUp.Request, client: inout CatchUpClient?, reconnects: inout ReconnectCatchUp
    ) throws(RoadSaveClientError) -> Bool {
        do throws(RoadSaveClientError) {
            if client == nil { client = try catchUpClient() }
            switch due {
            case .head:
                guard let head = try client!.head() else { return false }
                reconnects.started(fromHead: head)
                return true
            case .after(let position):
                notify(.catchingUp(after: position))
                guard try read(client!, after: .position(position), before: nil) else { return false }
                reconnects.caughtUp()
                return true
            }
        } catch {
            // A link still failing, a notifier restarting: asked again, live events held until it answers.
            if case .catchUpUnreachable = error, case .after = due, reconnects.unanswered(at: MonotonicClock.now()) {
                notify(.reconnectCatchUpUnanswered(error, retryCount: reconnects.unansweredInARow))
                return true
            }
            notify(.reconnectCatchUpFailed(error))
            guard settings.reconnectCatchUpFailure == .goesOnLive else { throw error }
            reconnects.giveUp()
            return true
        }
    }

    // MARK: By catch-up alone

    private func followByCatchUp(from start: CatchUpRequest.Start?) throws(RoadSaveClientError) {
        let client = try catchUpClient()
        defer { client.close() }
        var from: CatchUpRequest.Start
        if let start {
            from = start
        } else {
            // From now: nothing stored before the subscription started is delivered.
            guard let head = try client.head() else { return }
            skip(head)
            from = .position(head)
        }
        try followByCatchUp(client, from: from)
    }

    /// Catch-up long-polls, one after the other, each from the position the last one reached.
    private func followByCatchUp(_ client: CatchUpClient, from start: CatchUpRequest.Start) throws(RoadSaveClientError)
    {
        notify(.followingByCatchUp(endpoint: client.endpoint, after: start))
        var start = start
        while !stopped {
            guard try read(client, after: start, before: nil, waitMilliseconds: CatchUpClient.longPollMilliseconds)
            else { return }
            start = .position(seen ?? 0)
        }
    }

    // MARK: Catch-up reads

    /// Delivers the events after `start` (and before `before`, when given), page by page, until the reply reaches the
    /// head (or `before`). False when the subscription should end. With `waitMilliseconds`, each request is a
    /// long-poll: a reply with nothing new comes when the wait ends.
    private func read(
        _ client: CatchUpClient, after start: CatchUpRequest.Start, before: UInt64?, waitMilliseconds: Int? = nil
    ) throws(RoadSaveClientError) -> Bool {
        var start = start
        while true {
            let request = CatchUpRequest(
                start: start, prefix: settings.filter.catchUpPrefix, waitMilliseconds: waitMilliseconds)
            guard let reply = try client.request(request) else { return false }
            for entry in reply.events {
                if let before, entry.position >= before { return true }
                if let seen, entry.position <= seen { continue }
                guard settings.filter.accepts(entry.topic) else {
                    skip(entry.position)
                    continue
                }
                let event = try? EventJSONReader.event(from: entry.event, legacy: "legacy")
                guard
                    deliver(
                        position: entry.position, topic: entry.topic, json: JSONText.encode(entry.event), event: event)
                else { return false }
            }
            // Everything up to `next` was examined.
            if let before { skip(min(reply.next, before - 1)) } else { skip(reply.next) }
            notify(.caughtUp(to: reply.next, head: reply.head))
            if reply.next >= reply.head || (before.map { reply.next >= $0 - 1 } ?? false) { return true }
            start = .position(reply.next)
            if stopped { return false }
        }
    }

    // MARK: Deliveries

    private func deliver(position: UInt64, topic: String, json: String, event: RoadSaveEvent?) -> Bool {
        skip(position)
        return handoff.push(RoadSaveSubscriber.Delivery(position: position, topic: topic, json: json, event: event))
    }

    private func skip(_ position: UInt64) {
        seen = max(seen ?? 0, position)
    }

    private func receive(_ socket: ZMQSocket) throws(RoadSaveClientError) -> [[UInt8]]? {
        do {
            return try socket.receive(dontWait: true)
        } catch {
            throw .connectionFailed(
                endpoint: settings.endpoint, reason: "subscription to \(settings.endpoint) failed: \(error)")
        }
    }

    /// The body as one NDJSON line: as published (compact JSON), or re-written compactly if it spans lines.
    static func line(_ body: [UInt8]) -> String {
        var bytes = body[...]
        while let last = bytes.last, last == 0x0A || last == 0x0D || last == 0x20 { bytes = bytes.dropLast() }
        if bytes.contains(0x0A) || bytes.contains(0x0D), let value = try? JSONParser.parse(Array(bytes)) {
            return JSONText.encode(value)
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
