extension RoadSaveSubscriber {
    /// Which events a subscriber receives: some kinds of event, of one application, of one device (user), or a raw
    /// topic prefix. The notifier filters by topic prefix (ZeroMQ subscriptions, the catch-up's `prefix`), which cannot
    /// tell `app-1` from `app-10`, so the subscriber checks each topic whole as well.
    ///
    /// A subscriber key listed for some applications only receives theirs, whatever the filter asks (the notifier
    /// leaves the others out without a word, by design: a limited key learns nothing of other applications).
    public struct Filter: Sendable, Hashable {
        /// The kinds of event wanted; empty: every kind.
        public var events: Set<EventKind>
        /// Only the devices of this applicationID (a credential: the library never logs it); nil: every application.
        public var application: String?
        /// Only this clientUserID (of `application`, or of any application); nil: every device.
        public var user: String?
        /// A raw topic prefix instead of the three above (topics are `<event>.<app>.<user>`).
        public private(set) var topicPrefix: String?

        /// Every event of every device.
        public static let everything = Filter()

        /// Events of `events` (empty: every kind) of `application` (nil: any), of `user` (nil: any).
        public init(events: Set<EventKind> = [], application: String? = nil, user: String? = nil) {
            self.events = events
            self.application = application
            self.user = user
        }

        /// The events whose topic starts with `prefix`, as a ZeroMQ subscription matches them.
        public static func topicPrefix(_ prefix: String) -> Filter {
            var filter = Filter()
            filter.topicPrefix = prefix
            return filter
        }

        /// The problem with the filter, in words (nil: none).
        func problem() -> String? {
            if application?.isEmpty == true { return "filter: the application must not be empty" }
            if user?.isEmpty == true { return "filter: the user must not be empty" }
            if topicPrefix != nil, !events.isEmpty || application != nil || user != nil {
                return "filter: a topic prefix is instead of events, application and user, not with them"
            }
            return nil
        }

        /// The kinds asked for, in the order of PROTOCOL §3.
        private var kinds: [EventKind] {
            events.isEmpty ? EventKind.allCases : EventKind.allCases.filter(events.contains)
        }

        /// The subscription prefixes; ZeroMQ matches prefixes only, so `accepts` checks the whole topic.
        var prefixes: [String] {
            if let topicPrefix { return [topicPrefix] }
            return kinds.map { kind in
                guard let application else { return kind.rawValue + "." }
                guard let user else { return "\(kind.rawValue).\(application)." }
                return "\(kind.rawValue).\(application).\(user)"
            }
        }

        /// Whether every event is asked for (then the live positions have no jumps unless something was missed).
        var takesEverything: Bool { topicPrefix == nil && events.isEmpty && application == nil && user == nil }

        /// The catch-up prefix: the subscription's, when there is one (other filters are applied by `accepts`).
        var catchUpPrefix: String? {
            let prefixes = prefixes
            return prefixes.count == 1 ? prefixes[0] : nil
        }

        /// Whether a received topic is one asked for (`app-1` must not take `app-10`, `user-9` not `user-90`).
        func accepts(_ topic: String) -> Bool {
            if let topicPrefix { return topic.hasPrefix(topicPrefix) }
            return kinds.contains { kind in
                let name = kind.rawValue
                switch (application, user) {
                case (let application?, let user?): return topic == "\(name).\(application).\(user)"
                case (let application?, nil): return topic.hasPrefix("\(name).\(application).")
                case (nil, let user?): return topic.hasPrefix(name + ".") && topic.hasSuffix("." + user)
                case (nil, nil): return topic.hasPrefix(name + ".")
                }
            }
        }
    }
}
