/// Whether an upstream that answers at least every few seconds while it is there (a feed: its empty answer when a
/// request's wait runs out is its heartbeat) is being heard, as a value: when it last answered, and the two moments
/// worth one log line each: it fell silent, it answers again. Time is an input (monotonic seconds), so detection's
/// core and the notifier's shell decide silence the same way, and tests need no clock.
public struct LinkHearing: Sendable, Equatable {
    /// What changed at an input.
    public enum Change: Sendable, Equatable {
        /// Nothing has come for `silentAfter`: the link or the upstream is down. `unanswered` seconds so far.
        case fellSilent(unanswered: Double)
        /// An answer came after it had fallen silent, `unanswered` seconds after the one before.
        case answersAgain(unanswered: Double)
    }

    /// Seconds without an answer after which the upstream counts as silent.
    public let silentAfter: Double
    /// When it last answered (or when hearing began).
    public private(set) var lastAnswer: Double
    public private(set) var isSilent = false

    public init(silentAfter: Double, since now: Double) {
        self.silentAfter = silentAfter
        lastAnswer = now
    }

    /// Seconds since the last answer at `now`.
    public func unanswered(at now: Double) -> Double { max(0, now - lastAnswer) }

    /// An answer came at `now`.
    public mutating func answered(at now: Double) -> Change? {
        let unanswered = unanswered(at: now)
        lastAnswer = max(lastAnswer, now)
        guard isSilent else { return nil }
        isSilent = false
        return .answersAgain(unanswered: unanswered)
    }

    /// Time passed to `now`: says once when the upstream falls silent.
    public mutating func check(at now: Double) -> Change? {
        guard !isSilent, unanswered(at: now) > silentAfter else { return nil }
        isSilent = true
        return .fellSilent(unanswered: unanswered(at: now))
    }
}
