import Logging
import Wire
import ZeroMQ

/// One consumer's link to one feed server (a DEALER connected to its ROUTER). The owner decides what to ask for;
/// the client keeps at most one request outstanding, sends it again when no answer comes in time (the server may
/// have restarted and lost it: requests are idempotent) or as soon as a connection lost is made anew (what was
/// sent on the dead one gets no answer), and passes on only the answer to the request outstanding. The socket has
/// its loop's `LinkTimings`: a silent link is dropped by its heartbeats and made anew within seconds of healing.
public final class FeedClient {
    public let endpoint: String
    private let socket: ZMQSocket
    /// The socket's connections, to send the outstanding request again as soon as a lost one is made anew.
    private let connections: ConnectionWatch
    private var connectionLost = false
    private let loop: ReactorLoop
    private let log: Log
    private var nextID: UInt64 = 1
    private var outstanding: (request: FeedRequest, sentAt: Double)?
    private let onReply: (FeedReplyHeader, FeedItems) -> Void
    private var resendTimer: TimerID?
    /// What the link has been through, for /metrics: requests sent again for want of an answer, answers that were
    /// not to the request outstanding (to one sent before it: out of sequence, dropped), and unreadable answers.
    public private(set) var statistics = Statistics()

    public struct Statistics: Sendable, Equatable {
        /// Answers taken (to the request outstanding): what a consumer's work a reply is counted by.
        public var replies = 0
        public var resent = 0
        public var outOfSequence = 0
        public var unreadable = 0
        /// Connections to the server lost (the server went, or the link: heartbeats unanswered).
        public var connectionsLost = 0
    }
    /// Extra time past the server's wait before a request is sent again.
    static let answerGrace = 2.0

    /// Connects to `endpoint`; `onReply` gets each answer to the outstanding request, on the loop's thread.
    /// `maximumFrameBytes` (ZMQ_MAXMSGSIZE, nil for no limit) is the largest frame accepted from the server: a larger
    /// one drops the connection (libzmq reconnects), so it must exceed the largest item the server can send.
    /// With `curve` the link is a CurveZMQ client of the server (encrypted; the server's ZAP handler checks the key).
    public init(
        loop: ReactorLoop, endpoint: String, log: Log, maximumFrameBytes: Int64? = nil,
        curve: CurveClientKeys? = nil,
        onReply: @escaping (FeedReplyHeader, FeedItems) -> Void
    ) throws {
        self.endpoint = endpoint
        self.loop = loop
        self.log = log
        self.onReply = onReply
        socket = try loop.socket(.dealer)
        try socket.setSendTimeout(milliseconds: 0)
        if let maximumFrameBytes { try socket.setMaximumMessageSize(maximumFrameBytes) }
        if let curve { try socket.setCurveClient(curve) }
        connections = try ConnectionWatch(socket, context: loop.context, name: "feed")
        try socket.connect(endpoint)
        loop.onReadable(socket) { [unowned self] socket in receive(socket) }
        loop.onReadable(connections.reader) { [unowned self] _ in connectionsChanged() }
        resendTimer = loop.every(0.25) { [unowned self] in resendIfLate() }
    }

    /// True while a request waits for its answer.
    public var isWaiting: Bool { outstanding != nil }

    /// Sends a request (its `id` is set here); one already outstanding is forgotten.
    public func fetch(_ request: FeedRequest) {
        var request = request
        request.id = nextID
        nextID += 1
        outstanding = (request, loop.now)
        send(request)
    }

    /// Closes the socket and stops the resend timer (which would otherwise outlive the client).
    public func close() {
        outstanding = nil
        if let resendTimer { loop.cancel(resendTimer) }
        resendTimer = nil
        loop.close(connections.reader)
        loop.close(socket)
    }

    private func send(_ request: FeedRequest) {
        do {
            // A DEALER with no connected peer cannot take the message: the resend timer tries again.
            _ = try socket.send(request.frames(), dontWait: true)
        } catch {
            log.warning("feed request not sent", ["endpoint": endpoint, "error": "\(error)"])
        }
    }

    private func receive(_ socket: ZMQSocket) {
        socket.drain(
            limit: 1000, failed: { log.error("feed socket failed", ["endpoint": endpoint, "error": "\($0)"]) }
        ) { frames in
            let parsed: (header: FeedReplyHeader, items: FeedItems)
            do {
                parsed = try FeedReplyHeader.parse(frames)
            } catch {
                log.warning("unreadable feed reply", ["endpoint": endpoint, "error": "\(error)"])
                statistics.unreadable += 1
                return true
            }
            guard let outstanding, parsed.header.id == outstanding.request.id else {
                statistics.outOfSequence += 1
                return true
            }
            self.outstanding = nil
            statistics.replies += 1
            onReply(parsed.header, parsed.items)
            // One answer a round of the loop: the owner's next request may be out already and answered by now, and
            // taking that answer in this same round would keep the loop for as long as the feed has a backlog, with
            // platform answers (a crash's verdict), timers and control commands waiting behind it.
            return false
        }
    }

    /// A connection ended or was made: after a loss, the request outstanding goes again on the new connection at
    /// once, instead of when its patience runs out.
    private func connectionsChanged() {
        for change in connections.changes() {
            switch change {
            case .lost:
                connectionLost = true
                statistics.connectionsLost += 1
            case .established:
                guard connectionLost else { continue }
                connectionLost = false
                guard let (request, _) = outstanding else { continue }
                outstanding = (request, loop.now)
                statistics.resent += 1
                send(request)
            case .refused:
                // The upstream's refusal is logged there; this end goes on asking, as before refusals were watched.
                continue
            }
        }
    }

    private func resendIfLate() {
        guard let (request, sentAt) = outstanding else { return }
        let patience = Double(request.waitMilliseconds) / 1000 + Self.answerGrace
        guard loop.now - sentAt >= patience else { return }
        outstanding = (request, loop.now)
        statistics.resent += 1
        send(request)
    }
}
