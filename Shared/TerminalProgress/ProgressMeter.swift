import SystemKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Progress of a long command (replay, send, simulate, convert) on one line of the terminal: what is done, how fast,
/// and, when the total is known, the percentage and the time left, e.g.
///
///     replay: 412,345 records, 981,234 records/s, 37%, 0:04 left
///
/// A value owned by the command's loop, like `DeviceSession`: time is an input (an injected clock), the line goes to
/// an injected `ProgressDisplay`, so the formatting and the rate limit are tested without a terminal or sleeps.
///
/// The loops it measures run at about a million records a second, so `advance` costs one addition and one
/// comparison: the clock is read only every `stride` records, a stride that adapts so the clock is read about every
/// `Timing.checkEvery` seconds whatever the pace (1 record a second or a million), and the line is drawn at most
/// once per `Timing.interval`. A meter without a display (stderr not a terminal, `--no-progress`) never reads the
/// clock. Keep one meter per job and pass it `inout`: a copy counts on its own.
public struct ProgressMeter {
    public struct Timing: Sendable, Equatable {
        /// Nothing is drawn before this many seconds: a short job leaves no trace.
        public var firstDraw = 0.25
        /// Seconds between two drawings at least (5 a second).
        public var interval = 0.2
        /// Rates and time left are taken over about this many seconds before each drawing.
        public var window = 2.0
        /// The clock is read about this often (seconds), between drawings.
        public var checkEvery = 0.05
        /// Set: the clock decides nothing; the line is drawn at the first advance of each phase and then every this
        /// many counts, rates included as soon as any time has passed. Only for the commands' tests on a
        /// pseudo-terminal, which must see the line and its erasure however fast the machine
        /// (`ROADSAVE_PROGRESS_EVERY`, see `Timing.init(environment:)`). Nil: by the clock, as above.
        public var drawEvery: Int?

        public init() {}

        /// The timing of `ROADSAVE_PROGRESS_EVERY=N` (hidden: in no `--help`, for tests): `drawEvery` N for a whole
        /// number N ≥ 1; the default timing for anything else (unset, empty, 0, not a number).
        public init(environment value: String?) {
            self.init()
            if let value, let every = Int(value), every >= 1 { drawEvery = every }
        }
    }

    // The hot path: `count` goes up by `advance`; the clock is read when it reaches `nextCheck`.
    @usableFromInline var count = 0
    @usableFromInline var nextCheck: Int

    /// What is measured: "replay", "send", "simulate", "convert".
    public private(set) var label: String
    /// What `count` counts: "records", "devices", "trials".
    public private(set) var noun: String
    /// The position at which the work is done (bytes of a file, milliseconds simulated), nil when unknown.
    public private(set) var total: Int?
    private var position = 0
    /// Whether the position is the count (`advance(by:)`) rather than given (`advance(by:at:)`).
    private var positionIsCount = true
    private let display: (any ProgressDisplay)?
    private let clock: () -> Double
    private let timing: Timing
    private var stride = 1
    private var lastCheck: (time: Double, count: Int)
    private let started: Double
    private var lastDraw: Double?
    /// (time, count, position) at the phase's start and at each drawing of the last `window` seconds.
    private var samples: [Sample]

    private struct Sample {
        var time: Double
        var count: Int
        var position: Int
    }

    /// A meter that draws on `display` (none: a meter that does nothing). `total` is the position at which the
    /// work is done; without `advance(at:)` the position is the count.
    public init(
        label: String, noun: String = "records", total: Int? = nil, display: (any ProgressDisplay)?,
        clock: @escaping () -> Double = ProgressMeter.monotonicClock(), timing: Timing = Timing()
    ) {
        self.label = label
        self.noun = noun
        self.total = total
        self.display = display
        self.clock = clock
        self.timing = timing
        let now = display == nil ? 0 : clock()
        started = now
        lastCheck = (now, 0)
        samples = [Sample(time: now, count: 0, position: 0)]
        nextCheck = display == nil ? Int.max : 1
    }

    /// A meter that never draws.
    public static func off(label: String = "") -> ProgressMeter { ProgressMeter(label: label, display: nil) }

    /// The meter of a command: on `StatusLine.standardError` when `shouldShow` says so for this process.
    /// `writesStandardOutput`: the command writes to standard output while it works (records, events), which must
    /// not land on the progress line when standard output is the same terminal.
    public static func standardError(
        label: String, noun: String = "records", total: Int? = nil,
        turnedOff: Bool, writesStandardOutput: Bool
    ) -> ProgressMeter {
        let show = shouldShow(
            standardErrorIsTerminal: isatty(2) == 1, standardOutputIsTerminal: isatty(1) == 1,
            writesStandardOutput: writesStandardOutput, term: getenv("TERM").map { String(cString: $0) },
            turnedOff: turnedOff)
        // Whether it shows is decided as above either way; the variable only changes when it draws.
        let timing = Timing(environment: getenv(timingVariable).map { String(cString: $0) })
        return ProgressMeter(
            label: label, noun: noun, total: total, display: show ? StatusLine.standardError : nil,
            timing: timing)
    }

    /// The hidden environment variable of `Timing.drawEvery`.
    public static let timingVariable = "ROADSAVE_PROGRESS_EVERY"

    /// Progress is shown only on a terminal that can redraw a line (not `TERM=dumb`), unless `--no-progress`
    /// turned it off, and not when the command's own output goes to a terminal while it works.
    public static func shouldShow(
        standardErrorIsTerminal: Bool, standardOutputIsTerminal: Bool,
        writesStandardOutput: Bool, term: String?, turnedOff: Bool
    ) -> Bool {
        !turnedOff && standardErrorIsTerminal && term != "dumb" && !(writesStandardOutput && standardOutputIsTerminal)
    }

    /// The commands' flag that turns the meter off.
    public static let flag = "--no-progress"

    /// Whether this meter draws at all.
    public var isShown: Bool { display != nil }

    /// Counts `amount` more done, the position being the count.
    @inlinable @inline(__always)
    public mutating func advance(by amount: Int = 1) {
        count &+= amount
        if _slowPath(count >= nextCheck) { check(position: nil) }
    }

    /// Counts `amount` more done; `position` (bytes read, time simulated) is evaluated only when the clock is read.
    @inlinable @inline(__always)
    public mutating func advance(by amount: Int = 1, at position: @autoclosure () -> Int) {
        count &+= amount
        if _slowPath(count >= nextCheck) { check(position: position()) }
    }

    /// Reads the clock now (a command that waits calls it so the line does not stand still).
    public mutating func refresh(at position: Int? = nil) {
        guard display != nil, nextCheck != Int.max else { return }
        check(position: position ?? (positionIsCount ? nil : self.position))
    }

    /// A new phase of the job with its own count, total and rates: the simulator simulates its devices, then
    /// writes their records.
    public mutating func startPhase(label: String? = nil, noun: String, total: Int?) {
        if let label { self.label = label }
        self.noun = noun
        self.total = total
        guard display != nil, nextCheck != Int.max else { return }
        let now = clock()
        count = 0
        position = 0
        stride = 1
        nextCheck = 1
        lastCheck = (now, 0)
        samples = [Sample(time: now, count: 0, position: 0)]
    }

    /// Clears the line (the command's own summary follows on a clean row); the meter draws no more.
    public mutating func finish() {
        nextCheck = Int.max
        guard lastDraw != nil else { return }
        display?.clear()
        lastDraw = nil
    }

    /// The clock is due: adapt the stride to the pace, and draw if the interval has passed. `position` nil: the
    /// count.
    @usableFromInline
    mutating func check(position: Int?) {
        guard display != nil else {
            nextCheck = Int.max
            return
        }
        let now = clock()
        if let every = timing.drawEvery {
            lastCheck = (now, count)
            nextCheck = count &+ every
            positionIsCount = position == nil
            self.position = position ?? count
            draw(now: now)
            return
        }
        let elapsed = now - lastCheck.time
        let counted = count - lastCheck.count
        // Records per `checkEvery` at the pace just seen; never more than 16 times the last stride, so a burst at
        // the start cannot put the next reading minutes away.
        let ideal = elapsed > 0 ? Double(counted) * timing.checkEvery / elapsed : Double(stride) * 16
        stride = max(1, min(Int(min(ideal, 1e9)), stride * 16, 1 << 24))
        lastCheck = (now, count)
        nextCheck = count &+ stride
        positionIsCount = position == nil
        self.position = position ?? count
        guard now - started >= timing.firstDraw else { return }
        if let lastDraw, now - lastDraw < timing.interval { return }
        draw(now: now)
    }

    private mutating func draw(now: Double) {
        lastDraw = now
        while samples.count > 1, now - samples[1].time >= timing.window { samples.removeFirst() }
        let oldest = samples[0]
        let span = now - oldest.time
        // Rates over less than half an interval (a phase that has just begun) would be noise; the tests' `drawEvery`
        // shows them anyway, so that each line it draws has every part a test looks for.
        let measured = timing.drawEvery != nil ? span > 0 : span >= timing.interval / 2
        let rate = measured ? Double(count - oldest.count) / span : nil
        var fraction: Double?
        var left: Double?
        if let total, total > 0 {
            fraction = min(1, max(0, Double(position) / Double(total)))
            let advanced = Double(position - oldest.position)
            if measured, advanced > 0 { left = Double(max(0, total - position)) / (advanced / span) }
        }
        samples.append(Sample(time: now, count: count, position: position))
        display?.show(Self.text(label: label, count: count, noun: noun, rate: rate, fraction: fraction, left: left))
    }

    // MARK: Formatting

    /// "replay: 412,345 records, 981,234 records/s, 37%, 0:04 left"; the parts not known are left out.
    public static func text(
        label: String, count: Int, noun: String, rate: Double?, fraction: Double?,
        left: Double?
    ) -> String {
        var text = "\(label): \(grouped(count)) \(noun)"
        if let rate { text += ", \(Self.rate(rate)) \(noun)/s" }
        if let fraction { text += ", \(Int((fraction * 100).rounded(.down)))%" }
        if let left, let duration = duration(left) { text += ", \(duration) left" }
        return text
    }

    /// 1234567 → "1,234,567".
    public static func grouped(_ value: Int) -> String {
        let digits = String(value.magnitude)
        var result = ""
        for (index, digit) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { result.append(",") }
            result.append(digit)
        }
        return value < 0 ? "-" + result : result
    }

    /// A rate: one decimal under 10 ("2.5"), whole and grouped above ("981,234").
    public static func rate(_ value: Double) -> String {
        guard value.isFinite, value >= 0 else { return "0" }
        if value < 10 {
            let tenths = Int((value * 10).rounded())
            return "\(tenths / 10).\(tenths % 10)"
        }
        return grouped(Int(value.rounded()))
    }

    /// Seconds, rounded up, as "0:04", "12:30" or "1:02:03"; nil for nothing sensible (not finite, over 99 hours).
    public static func duration(_ seconds: Double) -> String? {
        guard seconds.isFinite, seconds >= 0, seconds < 99 * 3600 else { return nil }
        let whole = Int(seconds.rounded(.up))
        let (hours, minutes, secs) = (whole / 3600, whole / 60 % 60, whole % 60)
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return hours > 0 ? "\(hours):\(two(minutes)):\(two(secs))" : "\(minutes):\(two(secs))"
    }

    /// Seconds on the project's monotonic clock (`MonotonicClock`) since this call: only differences are used.
    public static func monotonicClock() -> () -> Double {
        let origin = MonotonicClock.now()
        return { MonotonicClock.now() - origin }
    }
}
