/// What a subscriber does when the catch-up endpoint refuses catching up after a reconnect (a key no longer admitted,
/// a position pruned), or leaves it unanswered `ReconnectCatchUp.unansweredLimit` times in a row (asked again after
/// pauses until then, live events held).
package enum ReconnectCatchUpFailure: Sendable, Equatable {
    /// The subscription ends with the error: the caller resumes from its last position (the library's way: nothing
    /// may be missed without the caller knowing).
    case ends
    /// Said once (`SubscriberNotice.reconnectCatchUpFailed`), then live only (what `roadsave tail` has always done).
    case goesOnLive
}
