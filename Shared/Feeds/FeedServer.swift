import Logging
import Wire
import ZeroMQ

/// Serves a `FeedSource` on a ROUTER socket of a reactor loop. A request that finds nothing new is held (up to the
/// consumer's wait) and answered as soon as `itemsAdded()` says there is more, so a consumer that is caught up
/// gets new items with no polling delay; when the wait runs out it gets an empty reply, which doubles as a heartbeat.
///
/// With keys (`zap`), every request is served only while its connection's key is listed as `service` in the
/// allow-list in force, under the name it was admitted with; otherwise it is answered with an error and neither read
/// nor counted as the consumer's acknowledgement. A held request is checked again when it is answered.
public final class FeedServer {
    private let socket: ZMQSocket
    private let source: any FeedSource
    private let log: Log
    /// The handler that admitted the consumers' keys (the socket is a CURVE server for `service` keys); nil without keys.
    private let zap: ZAPHandler?
    /// Held requests by consumer identity (one each: a newer request from the same consumer replaces the older), with
    /// the key of the connection they came on.
    private var held: [[UInt8]: (request: FeedRequest, peer: CurvePeer?, deadline: Double)] = [:]
    private let now: () -> Double
    /// Most requests held at once; beyond it a request is answered at once, empty.
    static let maximumHeld = 4096
    /// The largest frame a feed server's socket needs to accept (ZMQ_MAXMSGSIZE): a request is a small map.
    public static let maximumRequestBytes: Int64 = 64 << 10

    /// Takes over `socket` (a bound ROUTER) on `loop`; `zap`: the handler the socket was secured with for the
    /// `service` role (`ZAPHandler.secure`), nil without keys.
    public init(socket: ZMQSocket, loop: ReactorLoop, source: any FeedSource, log: Log, zap: ZAPHandler? = nil) {
        self.socket = socket
        self.source = source
        self.log = log
        self.zap = zap
        now = { loop.now }
        loop.onReadable(socket) { [unowned self] socket in receive(socket) }
        loop.every(0.05) { [unowned self] in expire() }
    }

    /// A feed for the next service alone, on a new ROUTER bound to `endpoint`: with keys (`zap` and the service's
    /// `secretKey`) a CurveZMQ server for `service` keys; a reply waits at most `sendTimeoutMilliseconds` for a
    /// consumer's queue.
    public static func bound(
        to endpoint: String, loop: ReactorLoop, source: any FeedSource, zap: ZAPHandler?,
        secretKey: String?, sendTimeoutMilliseconds: Int32, log: Log
    ) throws -> FeedServer {
        let socket = try loop.socket(.router)
        if let zap, let secretKey { try zap.secure(socket, role: .service, secretKey: secretKey) }
        try socket.setSendTimeout(milliseconds: sendTimeoutMilliseconds)
        try socket.setMaximumMessageSize(maximumRequestBytes)
        try socket.bind(endpoint)
        return FeedServer(socket: socket, loop: loop, source: source, log: log, zap: zap)
    }

    /// The largest reply packed in one frame (`FeedRequest.pack`); a larger one goes a frame an item. A packed reply
    /// is one message that libzmq holds, and CURVE encrypts, whole at once: megabytes of them raised ingest's peak
    /// memory by 6 MiB (52 -> 58 under the services benchmark), while the system calls saved are those of many small
    /// items, which a reply this size already has.
    public static let maximumPackedBytes = 256 << 10

    /// Where the socket listens (the port picked for `*`).
    public var endpoint: String { socket.lastEndpoint }

    /// Consumers held waiting.
    public var waiting: Int { held.count }

    /// New items were stored: answer the held requests that now have something.
    public func itemsAdded() {
        guard !held.isEmpty else { return }
        for (identity, entry) in held {
            if serve(identity: identity, entry.request, peer: entry.peer, mayHold: false, answerEmpty: false) {
                held[identity] = nil
            }
        }
    }

    private func receive(_ socket: ZMQSocket) {
        socket.drain(limit: 1000, failed: { log.error("feed socket failed", ["error": "\($0)"]) }) { frames in
            // [identity, (empty delimiter,) "fetch", request]
            guard frames.count >= 3 else { return true }
            let identity = frames[0]
            let rest = Array(frames.dropFirst(frames[1].isEmpty && frames.count == 4 ? 2 : 1))
            let request: FeedRequest
            do {
                request = try FeedRequest(frames: rest)
            } catch {
                log.warning("unreadable feed request", ["error": "\(error)"])
                return true
            }
            held[identity] = nil
            _ = serve(identity: identity, request, peer: socket.lastPeer, mayHold: true, answerEmpty: true)
            return true
        }
    }

    /// Answers `request` of the connection of `peer` if there is something to say; true when answered.
    @discardableResult
    private func serve(
        identity: [UInt8], _ request: FeedRequest, peer: CurvePeer?, mayHold: Bool,
        answerEmpty: Bool
    ) -> Bool {
        let feed = source.feedID
        let head = source.head
        func reply(_ header: FeedReplyHeader, _ items: [ArraySlice<UInt8>] = []) -> Bool {
            do {
                let sent: Bool
                if request.pack, !items.isEmpty,
                    FeedItems.fitsPacked(items, maxBytes: min(request.maxBytes, Self.maximumPackedBytes))
                {
                    // The items in one frame, written where libzmq keeps it (`FeedItems`). A lone item above
                    // `maxBytes` goes as a frame of its own, so that a client's frame limit holds as before.
                    var header = header
                    header.packed = true
                    sent = try socket.send(
                        [identity, FeedReplyHeader.frame, header.encoded], lastOfSize: FeedItems.packedSize(items),
                        dontWait: true
                    ) { FeedItems.writePacked(items, into: $0) }
                } else {
                    // A frame an item: an item that is a whole array goes as it is, a slice of a shared one as a copy.
                    sent = try socket.send([identity] + header.frames(items: items.map { Array($0) }), dontWait: true)
                }
                if !sent {
                    log.warning("feed consumer gone before its reply", ["consumer": request.consumer])
                }
            } catch {
                log.warning("feed reply not sent", ["consumer": request.consumer, "error": "\(error)"])
            }
            return true
        }
        // Before anything is read or acknowledged: a key removed or replaced since the handshake learns nothing.
        if case .failure(let refusal)? = zap?.entry(for: peer, role: .service) {
            log.warning(
                "feed request refused: service key no longer listed",
                ["consumer": request.consumer, "key": refusal.name, "reason": refusal.message])
            return reply(
                FeedReplyHeader(
                    id: request.id, feed: feed, after: request.after, to: request.after,
                    head: head, error: refusal.message))
        }
        guard request.feed == feed else {
            // First contact, or the consumer knew another store: it looks up its position in this one and asks again.
            return reply(
                FeedReplyHeader(id: request.id, feed: feed, after: request.after, to: request.after, head: head))
        }
        source.acknowledged(request)
        guard request.after <= head else {
            return reply(
                FeedReplyHeader(
                    id: request.id, feed: feed, after: request.after, to: request.after, head: head,
                    error: "position \(request.after) is ahead of this feed's newest (\(head))"))
        }
        let batch: FeedBatch
        do {
            batch = try source.read(request)
        } catch {
            return reply(
                FeedReplyHeader(
                    id: request.id, feed: feed, after: request.after, to: request.after, head: head,
                    error: "\(error)"))
        }
        let reachedEnd = request.through.map { batch.to >= $0 } ?? false
        // Items the consumer asked for and will never get: said at once rather than after a held wait.
        let deleted = source.deletedThrough(for: request)
        if batch.items.isEmpty, !reachedEnd, deleted == nil, mayHold, request.waitMilliseconds > 0,
            held.count < Self.maximumHeld
        {
            held[identity] = (request, peer, now() + Double(request.waitMilliseconds) / 1000)
            return false
        }
        guard !batch.items.isEmpty || answerEmpty || reachedEnd else { return false }
        // Where the watched devices' records end, told with the read so that the two agree.
        let watched = request.watch.isEmpty ? [] : source.lastPositions(of: request.watch)
        return reply(
            FeedReplyHeader(
                id: request.id, feed: feed, after: request.after, to: batch.to, head: head,
                watched: watched, deletedThrough: deleted), batch.items)
    }

    private func expire() {
        guard !held.isEmpty else { return }
        let time = now()
        for (identity, entry) in held where entry.deadline <= time {
            held[identity] = nil
            serve(identity: identity, entry.request, peer: entry.peer, mayHold: false, answerEmpty: true)
        }
    }
}
