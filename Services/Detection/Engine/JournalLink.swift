import RoadSaveModel
import SystemKit

/// What detection knows of one sensor-ingest journal it reads (the socket that asks is its shell's): which journal
/// the endpoint serves, how far it has been read and checkpointed, whether it was read to its head and when it last
/// answered, and where the records of the devices asked about end in it. A value of `DetectionCore`.
public struct JournalLink: Sendable, Equatable {
    public let endpoint: String
    /// The journal's identity, once a reply has named it.
    public private(set) var feed: String?
    /// Records applied up to here.
    public internal(set) var position: UInt64 = 0
    /// The position of the last checkpoint (ingest may drop what is before it).
    public internal(set) var checkpointed: UInt64 = 0
    /// The last reply had nothing more, or reached the journal's head.
    public private(set) var caughtUp = false
    /// When the last reply came (monotonic seconds) and whether the journal has fallen silent since, and how long
    /// it had left detection without a reply when the last came.
    public private(set) var hearing: LinkHearing
    public var lastReply: Double { hearing.lastAnswer }
    public private(set) var unansweredBeforeReply = 0.0
    /// The newest position in the journal, for the lag.
    public private(set) var head: UInt64 = 0
    /// How long the replies asked for are: short once a reply reached the head, long again once more than
    /// `liveBacklog` chunks wait (between the two, as before: a flood that detection keeps up with only just is
    /// read in long replies, a quiet journal's small backlog in short ones).
    public private(set) var replySize: JournalReplySize = .catchUp
    /// Devices with a decision due, asked about with every request while detection is behind.
    var watch: [DeviceID] = []
    /// What the last reply said of the devices the request asked about: the position their records end at.
    private var lastPositions: [DeviceID: UInt64] = [:]
    private var asked: [DeviceID] = []
    /// A refused request is asked again at this time (monotonic seconds).
    var retryAt: Double?

    init(endpoint: String, silentAfter: Double, at monotonic: Double) {
        self.endpoint = endpoint
        hearing = LinkHearing(silentAfter: silentAfter, since: monotonic)
    }

    /// A reply came: when, how far the journal goes, and what it said of the devices asked about. Returns whether
    /// the journal answers again after it had fallen silent.
    mutating func replied(_ answer: JournalAnswer, at monotonic: Double) -> LinkHearing.Change? {
        unansweredBeforeReply = monotonic - lastReply
        let change = hearing.answered(at: monotonic)
        head = answer.head
        lastPositions = [:]
        if answer.watched.count == asked.count {
            for (device, position) in zip(asked, answer.watched) { lastPositions[device] = position }
        }
        return change
    }

    /// Time passed: whether the journal has just fallen silent.
    mutating func check(at monotonic: Double) -> LinkHearing.Change? {
        hearing.check(at: monotonic)
    }

    /// The reply named this journal: take it, with the position stored for it (0 for a journal never read).
    mutating func adopt(feed: String, position: UInt64, checkpointed: UInt64) {
        self.feed = feed
        self.position = position
        self.checkpointed = checkpointed
    }

    /// What the reply said of the end of the journal.
    mutating func noteEnd(_ answer: JournalAnswer, items: Int) {
        caughtUp = items == 0 || answer.to >= answer.head
    }

    /// Whether every record of `device` this journal had when it last answered has been read (by the last reply's
    /// word on it; false when it was not asked about).
    func hasGivenAll(of device: DeviceID) -> Bool {
        lastPositions[device].map { $0 <= position } ?? false
    }

    /// The question "who are you" (a request with no feed: the reply names the journal and carries nothing).
    mutating func greeting() -> JournalFetch {
        asked = []
        return JournalFetch(feed: nil, after: 0, through: nil, watch: [], checkpointed: checkpointed)
    }

    /// The records after `position`, and where the `watch` devices' records end (`replySize` long).
    mutating func next() -> JournalFetch {
        asked = watch
        let backlog = head > position ? head - position : 0
        if caughtUp || backlog == 0 {
            replySize = .live
        } else if backlog > Self.liveBacklog {
            replySize = .catchUp
        }
        return JournalFetch(
            feed: feed, after: position, through: nil, watch: watch, checkpointed: checkpointed, size: replySize)
    }

    /// Chunks stored and not yet asked for (one chunk is one gateway batch of one shard) beyond which replies are
    /// long again once they were short: a backlog that a few short replies clear.
    static let liveBacklog: UInt64 = 16

    /// Exactly the range (after, through] again (a re-run after a restart).
    mutating func range(after: UInt64, through: UInt64) -> JournalFetch {
        asked = []
        return JournalFetch(feed: feed, after: after, through: through, watch: [], checkpointed: checkpointed)
    }
}

/// A request for a journal's records, as the core wants it asked (the shell turns it into its feed's request).
public struct JournalFetch: Sendable, Equatable {
    /// The journal believed to be read; nil to ask which journal the endpoint serves.
    public var feed: String?
    public var after: UInt64
    /// An exact range to read again, all at once (`nil`: what follows `after`, a reply's worth).
    public var through: UInt64?
    /// Devices whose last position in the journal is asked for.
    public var watch: [DeviceID]
    /// The position detection's last checkpoint reflects: ingest keeps everything after it.
    public var checkpointed: UInt64
    /// How much one reply may hold (for `through == nil`).
    public var size: JournalReplySize = .catchUp
}

/// How much one reply to a `JournalFetch` may hold (the shell turns it into items and bytes; `JournalLink.replySize`
/// says which). A reply's actions go out once all of it is applied, so a crash's records wait for the chunks after
/// them in their reply too: at the journal's head replies are short (`live`, a few milliseconds of work). Behind it
/// (a start, a backlog after an outage or a burst), round trips are what hold the reading back, so replies are long
/// (`catchUp`).
public enum JournalReplySize: Sendable, Equatable {
    case live
    case catchUp
}

/// A journal's answer to a `JournalFetch`, as the core reads it.
public struct JournalAnswer: Sendable, Equatable {
    public var feed: String
    public var after: UInt64
    public var to: UInt64
    public var head: UInt64
    /// For each device asked about, the position after which the journal holds none of its records.
    public var watched: [UInt64]
    /// Why the request was refused (then nothing else counts).
    public var error: String?
    /// The highest position the journal's retention deleted of the records asked for, when above `after`: some
    /// records after `after` are gone (`FeedReplyHeader.deletedThrough`).
    public var deletedThrough: UInt64?

    public init(
        feed: String, after: UInt64, to: UInt64, head: UInt64, watched: [UInt64] = [], error: String? = nil,
        deletedThrough: UInt64? = nil
    ) {
        self.feed = feed
        self.after = after
        self.to = to
        self.head = head
        self.watched = watched
        self.error = error
        self.deletedThrough = deletedThrough
    }
}

/// One chunk of a journal, decoded by the shell: the records of one gateway batch for one shard, and the batch's
/// gateway stream and watermark when it had a header.
public struct JournalChunkRecords: Sendable, Equatable {
    /// A slice: the chunks of one reply share one array (`JournalReplyDecoder`).
    public var records: ArraySlice<SensorRecord>
    public var gateway: String?
    public var shard: Int
    /// Nothing of the gateway's stream below this is still to come (infinity: the stream ended).
    public var watermark: Double?

    public init(records: [SensorRecord], gateway: String? = nil, shard: Int = 0, watermark: Double? = nil) {
        self.init(records: records[...], gateway: gateway, shard: shard, watermark: watermark)
    }

    public init(records: ArraySlice<SensorRecord>, gateway: String? = nil, shard: Int = 0, watermark: Double? = nil) {
        self.records = records
        self.gateway = gateway
        self.shard = shard
        self.watermark = watermark
    }
}
