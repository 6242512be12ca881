import DetectionEngine
import Feeds
import Logging
import Wire
import ZeroMQ

/// detection's link to one sensor-ingest journal: the socket that asks (a `FeedClient`), turning the core's
/// `JournalFetch` into the feed's request. What the link knows (which journal, how far read, heard or silent) is the
/// core's (`JournalLink`).
final class JournalReader {
    let endpoint: String
    private var client: FeedClient!
    private let consumer: String
    private let shard: (index: Int, count: Int)?

    /// Items asked for at once, whatever the reply's size.
    static let maximumItems = 256
    /// Bytes asked for at once (the core says which size, `JournalReplySize`). Near the head: a few milliseconds of
    /// work (256 KiB is about 2,000 records), so that records stored meanwhile (a crash) do not wait behind a long
    /// reply. Behind: enough to keep detection busy between two round trips (the next request goes out before a
    /// reply is worked through; ingest answers between its commits), a few tens of milliseconds.
    static func maximumBytes(_ size: JournalReplySize) -> Int {
        switch size {
        case .live: 256 << 10
        case .catchUp: 2 << 20
        }
    }
    /// The largest frame accepted from ingest (ZMQ_MAXMSGSIZE on the DEALER). An item is one journal chunk: the
    /// records of one gateway batch (a body of at most 64 MiB) for one shard, re-encoded as MessagePack, where a number
    /// may widen to 9 bytes; four times the largest body leaves room for that.
    static let maximumFrameBytes: Int64 = 4 * 64 << 20
    /// How long ingest may hold a request while it has nothing new (it answers as soon as a batch is stored).
    static let waitMilliseconds = 1000
    static var waitSeconds: Double { Double(waitMilliseconds) / 1000 }

    /// With `curve` the link to ingest is a CurveZMQ client (detection's own key pair, ingest's public key).
    init(
        loop: ReactorLoop, endpoint: String, consumer: String, shard: (index: Int, count: Int)?,
        curve: CurveClientKeys? = nil, log: Log, onReply: @escaping (FeedReplyHeader, FeedItems) -> Void
    ) throws {
        self.endpoint = endpoint
        self.consumer = consumer
        self.shard = shard
        client = try FeedClient(
            loop: loop, endpoint: endpoint, log: log, maximumFrameBytes: Self.maximumFrameBytes,
            curve: curve, onReply: onReply)
    }

    /// Asks what the core wants: an exact range at once (a re-run), else a reply's worth after a position.
    func fetch(_ fetch: JournalFetch) {
        var request = FeedRequest(
            id: 0, feed: fetch.feed, after: fetch.after, through: fetch.through,
            maxItems: Self.maximumItems, maxBytes: Self.maximumBytes(fetch.size), acknowledged: fetch.checkpointed,
            consumer: consumer, shard: shard?.index, shards: shard?.count,
            waitMilliseconds: Self.waitMilliseconds, pack: true)
        request.watch = fetch.watch
        if fetch.through != nil {
            request.maxItems = 1_000_000
            request.maxBytes = 64 << 20
            request.waitMilliseconds = 0
        }
        client.fetch(request)
    }

    /// The request/reply sequence of the link (resent requests, out-of-sequence answers), for /metrics.
    var linkStatistics: FeedClient.Statistics { client.statistics }

    func close() {
        client.close()
    }
}

extension JournalAnswer {
    /// The core's view of a feed reply's header.
    init(_ header: FeedReplyHeader) {
        self.init(
            feed: header.feed, after: header.after, to: header.to, head: header.head, watched: header.watched,
            error: header.error, deletedThrough: header.deletedThrough)
    }
}
