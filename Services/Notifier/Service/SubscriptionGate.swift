import Logging
import RoadSaveModel
import ZeroMQ

/// The shell of the live socket's subscriptions when subscribers have CurveZMQ keys: the XPUB runs with
/// `ZMQ_XPUB_MANUAL`, so libzmq applies no subscription itself. Each subscription message is read with the sender's
/// key (its name, ZAP `User-Id`, and the key itself) and connection number, the key's entry in force is looked up
/// (nil for a key removed or replaced since its handshake), `LiveSubscriptions` decides, and the prefixes are applied with
/// ZMQ_SUBSCRIBE / ZMQ_UNSUBSCRIBE, which libzmq applies to the connection of the message just received. Nothing else
/// of libzmq is called between that receive and those calls. On the reactor thread.
final class SubscriptionGate {
    private let socket: ZMQSocket
    private let log: Log
    /// The allow-list entry in force of a connection's subscriber key; nil when it is not listed (any more) as it was.
    private let entry: (CurvePeer) -> CurveAllowList.Entry?
    private(set) var subscriptions = LiveSubscriptions()
    /// A message that is not a subscription came in (only an XSUB peer sends one): libzmq 4.3 then pairs the next
    /// subscriptions with the wrong connection until its queue is empty, so none of them is applied until then.
    private var misaligned = false

    static let properties = ["User-Id", ZAPHandler.publicKeyProperty, ZAPHandler.connectionProperty]

    init(socket: ZMQSocket, loop: ReactorLoop, log: Log, entry: @escaping (CurvePeer) -> CurveAllowList.Entry?) throws {
        self.socket = socket
        self.log = log
        self.entry = entry
        // Only where manual mode is safe: `LiveFiltering.choose` (libzmq 2df7ab6a, in 4.3.5).
        try socket.setXPubManual(true)
        loop.onReadable(socket) { [unowned self] _ in receive() }
    }

    private func receive() {
        for _ in 0..<100 {
            let message: (frames: [[UInt8]], properties: [String: String])
            do {
                guard let received = try socket.receive(dontWait: true, properties: Self.properties) else { return }
                message = received
            } catch {
                log.error("subscriber socket failed", ["error": "\(error)"])
                return
            }
            handle(message.frames, properties: message.properties)
            if misaligned && !socket.hasPendingInput {
                misaligned = false
                log.info("subscription messages are applied again")
            }
        }
    }

    private func handle(_ frames: [[UInt8]], properties: [String: String]) {
        guard frames.count == 1, let kind = frames[0].first, kind == 0 || kind == 1 else {
            if !misaligned {
                log.warning(
                    "a subscriber sent a message that is not a subscription; subscriptions waiting now are not applied",
                    ["key": properties["User-Id"] ?? "?", "frames": String(frames.count)])
            }
            misaligned = true
            return
        }
        let requested = Array(frames[0].dropFirst())
        // Unsubscriptions libzmq makes when a connection ends carry no metadata: it has already dropped that
        // connection's subscriptions.
        guard let name = properties["User-Id"], let connection = properties[ZAPHandler.connectionProperty] else {
            return
        }
        let prefix = String(decoding: requested.prefix(80), as: UTF8.self)
        guard !misaligned else {
            log.warning(
                "subscription not applied (subscriptions out of order after a non-subscription message)",
                ["key": name, "prefix": prefix])
            return
        }
        let key = properties[ZAPHandler.publicKeyProperty].flatMap { entry(CurvePeer(name: name, publicKey: $0)) }
        let change: LiveSubscriptions.Change
        if kind == 1 {
            change = subscriptions.subscribe(connection: connection, key: key, requested: requested)
            if key == nil {
                log.warning("subscription refused: the key is no longer listed", ["key": name, "prefix": prefix])
            } else if change.subscribe.isEmpty {
                log.info(
                    "subscription matches no topic of the key's applications",
                    ["key": name, "prefix": prefix, "applications": key!.applicationsText])
            }
        } else {
            change = subscriptions.unsubscribe(connection: connection, key: key, requested: requested)
        }
        do {
            for prefix in change.subscribe { try socket.subscribe(prefix) }
            for prefix in change.unsubscribe { try socket.unsubscribe(prefix) }
        } catch {
            log.error("subscription not applied", ["key": name, "prefix": prefix, "error": "\(error)"])
        }
    }

    /// Whether an event must stay off the live socket (see `LiveSubscriptions.withholds`).
    func withholds(_ event: RoadSaveEvent) -> Bool {
        subscriptions.withholds(application: event.device.app)
    }

    /// The socket was bound again: every connection is gone.
    func rebound() {
        subscriptions.removeAll()
        misaligned = false
    }
}
