extension RoadSaveGateway {
    /// Where sensor-ingest is, with which keys, and how the gateway batches, paces, re-sends and promises.
    public struct Configuration: Sendable, Hashable {
        /// sensor-ingest's gateway endpoint, or several: each device's records then all go to the one at index
        /// FNV-1a-64(app, 0xFF, user) mod (their number) of this list (PROTOCOL §1; every gateway must list the same
        /// ingests in the same order), each with its own connection, window, re-sends and watermark stream.
        public var endpoints: [String]
        /// This gateway's key files, for an ingest that runs with keys (every ingest has the one server key); nil:
        /// plaintext (loopback only).
        public var keys: RoadSaveKeys?
        /// The encoding of the batches' bodies and headers.
        public var format: BodyFormat
        /// Records per batch: 1 to 100,000.
        public var batchSize: Int
        /// Batches awaiting their acknowledgement at once, per ingest: 1 to 1,000. `send` suspends while a full
        /// batch's window is full, so what the gateway holds in memory stays bounded.
        public var window: Int
        /// Seconds to wait for each acknowledgement before sending the batch again: 0.05 to 3,600.
        public var timeout: Double
        /// Sends of one batch before giving up (`notAcknowledged`): 1 to 100. Re-sends for a rate limit or a journal
        /// that could not store the batch use up none.
        public var attempts: Int
        /// The watermarks of the batches' headers (PROTOCOL §7), nil for none: detection then orders the records by
        /// its reorder window and its clock, and what a lost and re-sent batch brings may be late.
        public var watermarks: Watermarks?
        /// The pace of the records (nil: as fast as acknowledgements come).
        public var pace: Pace?
        /// How the connections notice a dead link and come back.
        public var link: RoadSaveLinkTimings

        /// One ingest on this machine's default port (what `roadsave up` binds), MessagePack, batches of 500, 8 in
        /// flight, 10 s per acknowledgement, 5 attempts, watermarks with 10 s of disorder, no pace, no keys.
        public init(
            endpoints: [String] = ["tcp://127.0.0.1:5550"], keys: RoadSaveKeys? = nil,
            format: BodyFormat = .messagePack, batchSize: Int = 500, window: Int = 8, timeout: Double = 10,
            attempts: Int = 5, watermarks: Watermarks? = Watermarks(), pace: Pace? = nil,
            link: RoadSaveLinkTimings = .standard
        ) {
            self.endpoints = endpoints
            self.keys = keys
            self.format = format
            self.batchSize = batchSize
            self.window = window
            self.timeout = timeout
            self.attempts = attempts
            self.watermarks = watermarks
            self.pace = pace
            self.link = link
        }
    }

    /// How batches are encoded.
    public enum BodyFormat: String, Sendable, Hashable, CaseIterable {
        /// `application/msgpack` (the smaller and faster).
        case messagePack = "msgpack"
        /// `application/json`.
        case json
    }

    /// How records are paced when they come from a recording rather than from phones.
    public enum Pace: Sendable, Hashable {
        /// This many records a second.
        case recordsPerSecond(Double)
        /// At the pace of the records' own times `t` (the first record at once).
        case recordTimes
    }

    /// What the batches' headers promise (PROTOCOL §7, "What a watermark promises"): no record older than the
    /// watermark follows the batch from this gateway's stream. The gateway computes it over everything not
    /// acknowledged besides the batch that carries it and what it may still be given: the newest time it was given
    /// less `maximumDisorder`.
    public struct Watermarks: Sendable, Hashable {
        /// How far out of time order the records handed to the gateway may be, in seconds (0 to 3,600): the
        /// watermark stays this far behind the newest time given. A record further behind may be late.
        public var maximumDisorder: Double
        /// The stream's name in the headers, 1 to 200 bytes; nil: `gw-<pid>-<random>`, new for each gateway (a stream
        /// is one run's promises: detection ignores a name's headers after its end).
        public var streamName: String?
        /// Whether `finish()` says the stream is over (then its devices' last records are decided at once, as a
        /// replay decides them at its end); false when more of the same devices' records follow from elsewhere.
        public var endsStream: Bool

        /// Watermarks with `maximumDisorder` seconds of disorder (10, detection's reorder window, by default).
        public init(maximumDisorder: Double = 10, streamName: String? = nil, endsStream: Bool = true) {
            self.maximumDisorder = maximumDisorder
            self.streamName = streamName
            self.endsStream = endsStream
        }
    }
}
