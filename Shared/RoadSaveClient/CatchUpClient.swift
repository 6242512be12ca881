import SystemKit
import Wire
import ZeroMQ

/// A DEALER to the notifier's catch-up endpoint, one request at a time, on the thread of the engine that owns it.
///
/// A request goes again on a new connection when the one it went on ended unanswered (requests are idempotent); a
/// key the endpoint refuses at the handshake, or no longer admits on the connection it has open, is the typed error
/// `keyRefused`, after one new connection (a key listed under another name since the handshake is admitted afresh).
final class CatchUpClient {
    let endpoint: String
    private let context: ZMQContext
    private let keys: CurveClientKeys?
    private let link: LinkTimings
    private let shouldStop: () -> Bool
    private var socket: ZMQSocket
    private var watch: ConnectionWatch
    /// Seconds to wait for one answer (besides the long-poll's own wait).
    static let patience = 10.0
    /// The wait of each long-poll while following by catch-up alone.
    static let longPollMilliseconds = 25_000

    init(
        context: ZMQContext, endpoint: String, keys: CurveClientKeys?, link: LinkTimings,
        shouldStop: @escaping () -> Bool
    ) throws(RoadSaveClientError) {
        self.context = context
        self.endpoint = endpoint
        self.keys = keys
        self.link = link
        self.shouldStop = shouldStop
        (socket, watch) = try Self.connect(context: context, endpoint: endpoint, keys: keys, link: link)
    }

    private static func connect(
        context: ZMQContext, endpoint: String, keys: CurveClientKeys?, link: LinkTimings
    ) throws(RoadSaveClientError) -> (ZMQSocket, ConnectionWatch) {
        do {
            let socket = try ZMQSocket(context, .dealer, linger: 0)
            if let keys { try socket.setCurveClient(keys) }
            try socket.setLinkTimings(link)
            let watch = try ConnectionWatch(socket, context: context, name: "catch-up")
            try socket.connect(endpoint)
            return (socket, watch)
        } catch {
            throw .connectionFailed(
                endpoint: endpoint, reason: "cannot connect to the catch-up endpoint \(endpoint): \(error)")
        }
    }

    func close() {
        watch.close()
        socket.close()
    }

    /// A new connection (the old one's key was refused on it).
    private func reconnect() throws(RoadSaveClientError) {
        close()
        (socket, watch) = try Self.connect(context: context, endpoint: endpoint, keys: keys, link: link)
    }

    /// The newest position in the notifier's stream now; nil when the engine was asked to stop meanwhile.
    func head() throws(RoadSaveClientError) -> UInt64? {
        try request(CatchUpRequest(start: .position(0), max: 1))?.head
    }

    /// One request and its reply; nil when the engine was asked to stop meanwhile (checked every 100 ms).
    func request(_ request: CatchUpRequest) throws(RoadSaveClientError) -> CatchUpReply? {
        let frames = [[], request.json()] // the empty delimiter, as a REQ socket sends it
        var reconnected = false
        var lost = false
        try send(frames)
        let wait = request.waitMilliseconds ?? 0
        let deadline = MonotonicClock.now() + Self.patience + Double(wait) / 1000
        while MonotonicClock.now() < deadline {
            if shouldStop() { return nil }
            let ready: [ZMQPollEvents]
            do {
                ready = try ZMQPoller.poll([ZMQPollItem(socket), ZMQPollItem(watch.reader)], timeoutMilliseconds: 100)
            } catch {
                throw .connectionFailed(endpoint: endpoint, reason: "catch-up from \(endpoint) failed: \(error)")
            }
            if ready[1].contains(.readable) {
                for change in watch.changes() {
                    switch change {
                    case .refused(let status):
                        throw .keyRefused(
                            endpoint: endpoint,
                            reason: "the CurveZMQ handshake was refused (ZAP status \(status))")
                    case .lost:
                        lost = true
                    case .established:
                        // The request went with the connection that ended: it goes again on this one.
                        if lost { try send(frames) }
                        lost = false
                    }
                }
            }
            guard ready[0].contains(.readable) else { continue }
            let received: [[UInt8]]?
            do {
                received = try socket.receive(dontWait: true)
            } catch {
                throw .connectionFailed(endpoint: endpoint, reason: "catch-up from \(endpoint) failed: \(error)")
            }
            guard let last = received?.last else { continue }
            do {
                return try CatchUpReply(json: last)
            } catch {
                switch CatchUpRefusal(error.message) {
                case .key where !reconnected:
                    // Renamed since this connection's handshake, perhaps: a new handshake decides afresh.
                    reconnected = true
                    try reconnect()
                    try send(frames)
                case .key:
                    throw .keyRefused(endpoint: endpoint, reason: error.message)
                case .positionTooOld:
                    throw .positionTooOld(endpoint: endpoint, position: request.position, reason: error.message)
                case .positionAhead:
                    throw .positionAhead(endpoint: endpoint, position: request.position, reason: error.message)
                case .other:
                    throw .catchUpRefused(endpoint: endpoint, reason: error.message)
                }
            }
        }
        throw .catchUpUnreachable(endpoint: endpoint, seconds: Double(Int(Self.patience) + wait / 1000))
    }

    private func send(_ frames: [[UInt8]]) throws(RoadSaveClientError) {
        do {
            _ = try socket.send(frames)
        } catch {
            throw .connectionFailed(endpoint: endpoint, reason: "catch-up from \(endpoint) failed: \(error)")
        }
    }
}

extension CatchUpRequest {
    /// The position asked from (0 for an eventID), for the errors that name it.
    fileprivate var position: UInt64 {
        if case .position(let position) = start { return position }
        return 0
    }
}
