extension RoadSaveSubscriber {
    /// Where the notifier is, with which keys, and what to receive.
    public struct Configuration: Sendable, Hashable {
        /// The notifier's live endpoint (PUB, `--publish-endpoint`).
        public var endpoint: String
        /// The notifier's catch-up endpoint (`--catch-up-endpoint`): what was missed while away, and resuming.
        public var catchUpEndpoint: String
        /// This client's key files, for a notifier that runs with keys; nil: plaintext (loopback only).
        public var keys: RoadSaveKeys?
        /// Which events to receive.
        public var filter: Filter
        /// How the connections notice a dead link and come back.
        public var link: RoadSaveLinkTimings
        /// Follow from the catch-up endpoint alone, by long-polls, never subscribing to the live endpoint. The
        /// subscriber does this by itself when the live endpoint refuses a key that the catch-up endpoint takes (a
        /// key limited to applications, on a notifier whose libzmq is older than 4.3.5).
        public var followsByCatchUpOnly: Bool

        /// The notifier on this machine's default ports (what `roadsave up` binds), every event, no keys.
        public init(
            endpoint: String = "tcp://127.0.0.1:5554", catchUpEndpoint: String = "tcp://127.0.0.1:5555",
            keys: RoadSaveKeys? = nil, filter: Filter = .everything, link: RoadSaveLinkTimings = .standard,
            followsByCatchUpOnly: Bool = false
        ) {
            self.endpoint = endpoint
            self.catchUpEndpoint = catchUpEndpoint
            self.keys = keys
            self.filter = filter
            self.link = link
            self.followsByCatchUpOnly = followsByCatchUpOnly
        }
    }
}
