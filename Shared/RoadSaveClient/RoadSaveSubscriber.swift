import Wire
import ZeroMQ

/// A subscriber to RoadSave's events: the notifier's live endpoint and its catch-up endpoint, with or without
/// CurveZMQ keys, filtered by event kind, application or device, each event delivered once and in order.
///
/// Resume from the position you stored (`deliveries(after:)`, `run(after:delegate:handled:)`): the events after it
/// are read from the catch-up endpoint, then the live ones, across reconnects, notifier restarts and key reloads,
/// with nothing lost and nothing twice (PROTOCOL §7, "What a live subscriber may miss, and how it gets it": on every
/// handshake of the live connection it catches up from the last position seen, and once more a second later; it
/// drops positions already delivered). Each subscription runs its ZeroMQ work on a thread of its own and hands its
/// deliveries to async code, at most a few hundred ahead of the consumer.
///
///     let subscriber = try RoadSaveSubscriber(.init(filter: .init(events: [.crashDetected, .crashFollowUp])))
///     for try await delivery in subscriber.deliveries(after: storedPosition) {
///         handle(delivery.event)
///         storedPosition = delivery.position
///     }
public struct RoadSaveSubscriber: Sendable {
    /// What the subscriber was made with.
    public let configuration: Configuration
    private let settings: SubscriberEngine.Settings

    /// A subscriber for `configuration`: the endpoints, the filter and the link timings are checked and the key files
    /// read now (`invalidConfiguration`, `unusableKey`); nothing connects until a subscription starts.
    public init(_ configuration: Configuration) throws(RoadSaveClientError) {
        for (name, endpoint) in [
            ("endpoint", configuration.endpoint), ("catchUpEndpoint", configuration.catchUpEndpoint),
        ] {
            if let problem = ZMQEndpoint.problem(endpoint, connecting: true) {
                throw .invalidConfiguration("\(name): \(problem)")
            }
        }
        if let problem = configuration.filter.problem() { throw .invalidConfiguration(problem) }
        self.configuration = configuration
        settings = SubscriberEngine.Settings(
            endpoint: configuration.endpoint, catchUpEndpoint: configuration.catchUpEndpoint,
            keys: try configuration.keys?.load(), filter: configuration.filter, link: try configuration.link.checked(),
            followsByCatchUpOnly: configuration.followsByCatchUpOnly, reconnectCatchUpFailure: .ends)
    }

    /// The events after `position` (nil: from now), then the live ones, as they come; each iteration is a
    /// subscription of its own, which ends when the iterating task is cancelled or the iterator dropped. It throws
    /// `RoadSaveClientError` when it cannot go on (a refused key, a position older than the retention window, a
    /// catch-up endpoint that does not answer): resume from the last position handled once the cause is gone.
    public func deliveries(after position: UInt64?) -> Deliveries {
        Deliveries(settings: settings, start: position.map { .position($0) }, notices: nil)
    }

    /// `deliveries(after:)` for the commands built on the library: from a position or an eventID, with notices for
    /// their log and their way with a failed catch-up after a reconnect.
    package func deliveries(
        from start: CatchUpRequest.Start?, reconnectCatchUpFailure: ReconnectCatchUpFailure,
        notices: @escaping @Sendable (SubscriberNotice) -> Void
    ) -> Deliveries {
        var settings = settings
        settings.reconnectCatchUpFailure = reconnectCatchUpFailure
        return Deliveries(settings: settings, start: start, notices: notices)
    }

    /// Delivers the events after `position` (nil: from now) to `delegate` as its methods (`tripDidStart`,
    /// `tripDidEnd`, `crashDetected`, `crashDidFollowUp`, `tripWasScored`), in the caller's isolation (a main-actor
    /// delegate is called on the main actor), and hands each delivery to `handled` after its method returned: store
    /// its `position` to resume from (its `event.device` is the device the method was about). Returns when the calling
    /// task is cancelled; throws as `deliveries(after:)` does. Events of a notifier that publishes the legacy format
    /// reach no delegate method (they still reach `handled`).
    nonisolated(nonsending) public func run(
        after position: UInt64?, delegate: some RoadSaveDelegate, handled: (Delivery) -> Void = { _ in }
    ) async throws(RoadSaveClientError) {
        for try await delivery in deliveries(after: position) {
            delivery.event?.deliver(to: delegate)
            handled(delivery)
        }
    }
}
