/// What a catch-up endpoint's `{"error": …}` means for a client, read from the notifier's own words
/// (`CatchUpServer.reply` and `CurveAllowList.entry(for:role:)` write them; `ClientTests` hold the two together with
/// real notifiers), so that a caller gets a typed error it can act on.
enum CatchUpRefusal: Equatable {
    /// The connection's key is no longer listed (removed, replaced, renamed since its handshake).
    case key
    /// The position is older than the retention window.
    case positionTooOld
    /// The position is ahead of the newest event.
    case positionAhead
    /// Anything else (an unknown eventID, a long-poll over the limit, a store failure).
    case other

    init(_ message: String) {
        if message.contains("older than the retention window") {
            self = .positionTooOld
        } else if message.contains("is ahead of the newest") {
            self = .positionAhead
        } else if message.hasPrefix("subscriber key"),
            message.contains("no longer in the allow-list") || message.contains("under another name")
                || message.contains("carries no key")
        {
            self = .key
        } else {
            self = .other
        }
    }
}
