/// At most `limit` log lines per `window` seconds for one noisy source (a flood of bad connections must not fill the
/// disk); what is held back is counted and reported once per window instead. A value: time is an input.
public struct LogBudget: Sendable, Equatable {
    public let limit: Int
    public let window: Double
    private var windowStart: Double?
    private var used = 0
    /// Lines held back in the current window.
    public private(set) var suppressed = 0

    public init(limit: Int = 20, window: Double = 60) {
        self.limit = limit
        self.window = window
    }

    /// Whether a line may be written at `now`, and how many were held back in the window that ended before it
    /// (to be reported first; 0 when none).
    public mutating func admit(at now: Double) -> (write: Bool, heldBack: Int) {
        let heldBack = roll(at: now)
        if windowStart == nil { windowStart = now }
        guard used < limit else {
            suppressed += 1
            return (false, heldBack)
        }
        used += 1
        return (true, heldBack)
    }

    /// Ends the window if it is over (a timer calls it, so a count is reported even when the flood stopped):
    /// the lines held back in it, 0 when none or the window goes on.
    public mutating func roll(at now: Double) -> Int {
        guard let start = windowStart, now >= start + window else { return 0 }
        let heldBack = suppressed
        windowStart = nil
        used = 0
        suppressed = 0
        return heldBack
    }
}
