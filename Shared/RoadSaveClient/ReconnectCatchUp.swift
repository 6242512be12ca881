/// When a subscriber (`RoadSaveSubscriber`, and `roadsave tail` on it) reads the catch-up endpoint because its live
/// connection was renewed (PROTOCOL §7, "What a live subscriber may miss"): a value, fed the subscriber socket's
/// handshakes, the outcome of each catch-up and the clock, that says what to ask. At the first handshake, with
/// nothing known yet, the head (the subscription starts from there); at every later one, what came after the last
/// position seen, at once and once more a second later (for an event published between that answer and the renewed
/// subscription taking effect at the notifier).
///
/// A catch-up after a reconnect that the endpoint did not answer (a link still failing, the notifier restarting) is
/// asked again after a pause that doubles up to `longestPause`, up to `unansweredLimit` times in a row, and live
/// events wait in the socket meanwhile (`holdsLive`): delivered after what they follow, never instead of it.
struct ReconnectCatchUp: Equatable {
    enum Request: Equatable {
        /// The newest position now (`started(fromHead:)` with the answer).
        case head
        /// The events after this position.
        case after(UInt64)
    }

    /// The second catch-up after a handshake, and the first pause before asking again, in seconds.
    static let again = 1.0
    /// The longest pause between catch-ups the endpoint did not answer (each waits `CatchUpClient.patience` besides).
    static let longestPause = 8.0
    /// Catch-ups in a row the endpoint may leave unanswered before the subscriber's `ReconnectCatchUpFailure` applies:
    /// six take about a minute and a half (pauses of 1, 2, 4, 8 and 8 s, and 10 s each unanswered).
    static let unansweredLimit = 6

    /// Where catching up starts while nothing has been seen: where the caller resumed, or the head at the first
    /// connection.
    private(set) var baseline: UInt64?
    private(set) var handshakes = 0
    /// When the catch-ups asked for are due (monotonic seconds), earliest first.
    private(set) var pending: [Double] = []
    private var headWanted = false
    /// Catch-ups in a row that the endpoint did not answer.
    private(set) var unansweredInARow = 0
    /// A catch-up after a reconnect is owed and not made yet: live events wait so that they come after it, in order.
    private(set) var holdsLive = false
    /// The catch-up endpoint refused, or did not answer (with `ReconnectCatchUpFailure.goesOnLive`): reconnects are
    /// not caught up.
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
    /// nothing. A request returned is taken as done unless `unanswered(_:at:)` says otherwise.
    mutating func due(at now: Double, seen: UInt64?) -> Request? {
        guard !gaveUp else { return nil }
        if headWanted {
            headWanted = false
            return seen == nil ? .head : nil
        }
        guard let first = pending.first, first <= now else { return nil }
        pending.removeFirst()
        guard let after = seen.map({ max($0, baseline ?? 0) }) ?? baseline else {
            holdsLive = false
            return nil
        }
        return .after(after)
    }

    /// The head at the first connection: what came after it is caught up on a reconnect even if nothing was seen.
    mutating func started(fromHead head: UInt64) {
        baseline = head
    }

    /// The events after a position were read up to the head: live events flow again.
    mutating func caughtUp() {
        unansweredInARow = 0
        holdsLive = false
    }

    /// A catch-up after a reconnect got no answer by `now`: asked again after a pause, live events held until then.
    /// False once `unansweredLimit` went unanswered in a row: the caller gives up (`giveUp`) or ends.
    mutating func unanswered(at now: Double) -> Bool {
        unansweredInARow += 1
        guard unansweredInARow < Self.unansweredLimit else { return false }
        pending = [now + min(Self.again * Double(1 << (unansweredInARow - 1)), Self.longestPause)]
        holdsLive = true
        return true
    }

    /// The catch-up endpoint refused, or did not answer `unansweredLimit` times: stop asking (live events go on).
    mutating func giveUp() {
        gaveUp = true
        headWanted = false
        pending = []
        holdsLive = false
    }
}
