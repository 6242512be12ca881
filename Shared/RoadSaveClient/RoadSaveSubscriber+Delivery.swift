extension RoadSaveSubscriber {
    /// One event as the notifier published it, with its place in the notifier's stream.
    public struct Delivery: Sendable, Equatable {
        /// The event's position in the notifier's stream (consecutive over every event of every application). Store
        /// the last one handled and resume from it (`deliveries(after:)`): no gap, no duplicate.
        public var position: UInt64
        /// Its topic, `<event>.<app>.<user>`.
        public var topic: String
        /// The event's JSON as the notifier published it, on one line (PROTOCOL §3, in the notifier's
        /// `--publish-format`).
        public var json: String
        /// The event, typed; nil when its JSON is not the current format (a notifier run with
        /// `--publish-format legacy` publishes the 3.x keys, from which no `RoadSaveEvent` can be made).
        public var event: RoadSaveEvent?

        /// A delivery of `json` at `position`, with its topic and typed event.
        public init(position: UInt64, topic: String, json: String, event: RoadSaveEvent?) {
            self.position = position
            self.topic = topic
            self.json = json
            self.event = event
        }
    }
}
