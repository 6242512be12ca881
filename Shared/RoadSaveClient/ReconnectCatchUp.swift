/// When a subscriber (`RoadSaveSubscriber`, and `roadsave tail` on it) reads the catch-up endpoint because its live
/// connection was renewed (PROTOCOL §7, "What a live subscriber may miss"): a value, fed the subscriber socket's
/// handshakes and the clock, that says what to ask. At the first handshake, with nothing known yet, the head (the
/// subscription starts from there); at every later one, what came after the last position seen, at once and once
/// more a second later (for an event published between that answer and the renewed subscription taking effect at the
/// notifier).
struct ReconnectCatchUp: Equatable {
    enum Request: Equatable {
        /// The newest position now (`started(fromHead:)` with the answer).
        case head
        /// The events after this position.
        case after(UInt64)
    }

    /// The second catch-up after a handshake, in seconds.
    static let again = 1.0

    /// Where catching up starts while nothing has been seen: where the caller resumed, or the head at the first
    /// connection.
    private(set) var baseline: UInt64?
    private(set) var handshakes = 0
    /// When the catch-ups asked for are due (monotonic seconds), earliest first.
    private(set) var pending: [Double] = []
    private var headWanted = false
    /// The catch-up endpoint did not answer: reconnects are not caught up.
    private(set) var gaveUp = false

    /// `known`: the position read up to already (a resumed subscription's catch-up), nil when it starts from now.
    init(known: UInt64?) {
        baseline = known
    }

    /// The subscriber socket finished a handshake at `now`.
    mutating func connected(at now: Double) {
        handshakes += 1
        guard !gaveUp else { return }
        if handshakes == 1 {
            headWanted = baseline == nil
        } else {
            pending = [now, now + Self.again]
        }
    }

    /// What to ask the catch-up endpoint at `now`, with `seen` the highest position delivered or passed over; nil for
    /// nothing. A request returned is taken as done.
    mutating func due(at now: Double, seen: UInt64?) -> Request? {
        guard !gaveUp else { return nil }
        if headWanted {
            headWanted = false
            return seen == nil ? .head : nil
        }
        guard let first = pending.first, first <= now else { return nil }
        pending.removeFirst()
        guard let after = seen.map({ max($0, baseline ?? 0) }) ?? baseline else { return nil }
        return .after(after)
    }

    /// The head at the first connection: what came after it is caught up on a reconnect even if nothing was seen.
    mutating func started(fromHead head: UInt64) {
        baseline = head
    }

    /// The catch-up endpoint cannot be reached: stop asking.
    mutating func giveUp() {
        gaveUp = true
        headWanted = false
        pending = []
    }
}
