import Wire

/// What a subscriber's engine tells, besides its deliveries: how `roadsave tail` writes its log lines (the library
/// writes nothing to its caller's standard error). Called on the engine's thread: a handler must not block.
package enum SubscriberNotice: Sendable, Equatable {
    /// Subscribed to the live endpoint (its connection may come later).
    case subscribed(endpoint: String)
    /// Following from the catch-up endpoint alone, from this point.
    case followingByCatchUp(endpoint: String, after: CatchUpRequest.Start)
    /// The live endpoint refused the key while the catch-up endpoint takes it (a key limited to applications on a
    /// notifier whose libzmq is older than 4.3.5): following by catch-up from here.
    case liveKeyRefused(endpoint: String, status: UInt32)
    /// The live connection was renewed: catching up on what came after this position.
    case catchingUp(after: UInt64)
    /// A catch-up reply was read up to `to`.
    case caughtUp(to: UInt64, head: UInt64)
    /// Catching up after a reconnect got no answer (`catchUpUnreachable`): asked again after a pause, live events held
    /// until it answers; `retryCount` in a row so far.
    case reconnectCatchUpUnanswered(RoadSaveClientError, retryCount: Int)
    /// The catch-up endpoint refused catching up after a reconnect; with `ReconnectCatchUpFailure.goesOnLive` the
    /// subscription goes on live without catching up again.
    case reconnectCatchUpFailed(RoadSaveClientError)
    /// A live message that is not `[topic, body, position]` was skipped.
    case skippedMessage(frames: Int)
}
