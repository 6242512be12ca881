/// What a subscriber does when catching up after a reconnect fails (the endpoint does not answer, or refuses).
package enum ReconnectCatchUpFailure: Sendable, Equatable {
    /// The subscription ends with the error: the caller resumes from its last position (the library's way: nothing
    /// may be missed without the caller knowing).
    case ends
    /// Said once (`SubscriberNotice.reconnectCatchUpFailed`), then live only (what `roadsave tail` has always done).
    case goesOnLive
}
