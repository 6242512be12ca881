import Feeds
import RoadSaveModel
import Wire
import ZeroMQ

/// detection's reading of one sensor-ingest journal: which journal the endpoint serves, how far detection has read
/// it, and how far detection's last checkpoint reflects it (sent with every request, so ingest keeps everything after).
final class JournalReader {
    let endpoint: String
    private var client: FeedClient!
    /// The journal's identity, once the first reply has named it.
    private(set) var feed: String?
    /// Records applied up to here.
    var position: UInt64 = 0
    /// The position of the last checkpoint (ingest may drop what is before it).
    var checkpointed: UInt64 = 0
    /// The last reply had nothing more (or reached the journal's head).
    private(set) var caughtUp = false
    /// When the last reply came (monotonic seconds).
    private(set) var lastReply: Double
    /// How long the journal had left detection without an answer when the last reply came.
    private(set) var unansweredBeforeReply = 0.0
    /// Newest position in the journal, for the lag.
    private(set) var head: UInt64 = 0
    /// Devices with a decision due, asked about with every request while detection is behind
    /// (`FeedRequest.watch`).
    var watch: [DeviceID] = []
    /// What the last reply said of the devices it was asked about: the position their records end at.
    private var lastPositions: [DeviceID: UInt64] = [:]
    private let consumer: String
    private let shard: (index: Int, count: Int)?
    private let loop: ReactorLoop
    /// The devices the request outstanding asked about.
    private var asked: [DeviceID] = []

    /// Items and bytes asked for at once: enough to keep detection busy between two round trips (the next request
    /// goes out before a reply is worked through), and little enough that a reply is a few tens of milliseconds of
    /// work, so that records stored meanwhile (a crash) do not wait behind a long one.
    static let maximumItems = 256
    static let maximumBytes = 2 << 20
    /// The largest frame accepted from ingest (ZMQ_MAXMSGSIZE on the DEALER). An item is one journal chunk: the
    /// records of one gateway batch (a body of at most 64 MiB) for one shard, re-encoded as MessagePack, where a number
    /// may widen to 9 bytes; four times the largest body leaves room for that.
    static let maximumFrameBytes: Int64 = 4 * 64 << 20
    /// How long ingest may hold a request while it has nothing new (it answers as soon as a batch is stored).
    static let waitMilliseconds = 1000

    /// With `curve` the link to ingest is a CurveZMQ client (detection's own key pair, ingest's public key).
    init(loop: ReactorLoop, endpoint: String, consumer: String, shard: (index: Int, count: Int)?,
         curve: CurveClientKeys? = nil, log: Log,
         onReply: @escaping (JournalReader, FeedReplyHeader, ArraySlice<[UInt8]>) -> Void) throws {
        self.endpoint = endpoint
        self.loop = loop
        self.consumer = consumer
        self.shard = shard
        lastReply = loop.now
        client = try FeedClient(loop: loop, endpoint: endpoint, log: log, maximumFrameBytes: Self.maximumFrameBytes,
                                curve: curve) { [unowned self] header, items in
            unansweredBeforeReply = loop.now - lastReply
            lastReply = loop.now
            head = header.head
            lastPositions = [:]
            if header.watched.count == asked.count {
                for (device, position) in zip(asked, header.watched) { lastPositions[device] = position }
            }
            onReply(self, header, items)
        }
    }

    /// Asks who the journal is (a request with no feed: the reply names it and carries nothing).
    func greet() {
        asked = []
        client.fetch(request(after: 0, through: nil, feed: nil))
    }

    /// The reply named this journal: take it, with the position stored for it (0 for a journal never read).
    func adopt(feed: String, position: UInt64, checkpointed: UInt64) {
        self.feed = feed
        self.position = position
        self.checkpointed = checkpointed
    }

    /// Asks for what follows `position` (and where the `watch` devices' records end).
    func fetchNext() {
        var next = request(after: position, through: nil, feed: feed)
        next.watch = watch
        asked = watch
        client.fetch(next)
    }

    /// Asks again for exactly the range (after, through] (a re-run after a restart).
    func fetchRange(after: UInt64, through: UInt64) {
        var range = request(after: after, through: through, feed: feed)
        range.maxItems = 1_000_000
        range.maxBytes = 64 << 20
        range.waitMilliseconds = 0
        asked = []
        client.fetch(range)
    }

    /// Notes what the reply said about the end of the journal.
    func noteReply(_ header: FeedReplyHeader, items: Int) {
        caughtUp = items == 0 || header.to >= header.head
    }

    /// Whether every record of `device` this journal had when it last answered has been read (by the last reply's
    /// word on it; false when it was not asked about).
    func hasGivenAll(of device: DeviceID) -> Bool {
        lastPositions[device].map { $0 <= position } ?? false
    }

    var isWaiting: Bool { client.isWaiting }

    /// The request/reply sequence of the link (resent requests, out-of-sequence answers), for /metrics.
    var linkStatistics: FeedClient.Statistics { client.statistics }

    func close() {
        client.close()
    }

    private func request(after: UInt64, through: UInt64?, feed: String?) -> FeedRequest {
        FeedRequest(id: 0, feed: feed, after: after, through: through, maxItems: Self.maximumItems,
                    maxBytes: Self.maximumBytes, acknowledged: checkpointed, consumer: consumer,
                    shard: shard?.index, shards: shard?.count, waitMilliseconds: Self.waitMilliseconds)
    }
}
