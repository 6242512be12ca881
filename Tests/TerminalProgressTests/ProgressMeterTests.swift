import Testing

@testable import TerminalProgress

/// A clock the test moves by hand; it counts how often the meter reads it.
private final class ManualClock: @unchecked Sendable {
    var now = 0.0
    var reads = 0
    var read: () -> Double {
        {
            self.reads += 1
            return self.now
        }
    }
}

/// Keeps what the meter would have drawn.
private final class RecordingDisplay: ProgressDisplay, @unchecked Sendable {
    var shown: [String] = []
    var clears = 0
    /// (clock time, text) of each drawing.
    var drawings: [(time: Double, text: String)] = []
    let clock: ManualClock?

    init(clock: ManualClock? = nil) { self.clock = clock }

    func show(_ text: String) {
        shown.append(text)
        drawings.append((clock?.now ?? 0, text))
    }

    func clear() { clears += 1 }
}

@Suite struct ProgressMeterFormattingTests {
    @Test func theLineSaysWhatIsDoneHowFastAndWhatIsLeft() {
        #expect(
            ProgressMeter.text(
                label: "replay", count: 412_345, noun: "records", rate: 981_234.4, fraction: 0.3712,
                left: 3.2) == "replay: 412,345 records, 981,234 records/s, 37%, 0:04 left")
    }

    @Test func withoutATotalThereIsNoPercentNorTimeLeft() {
        #expect(
            ProgressMeter.text(label: "send", count: 1_000, noun: "records", rate: 250, fraction: nil, left: nil)
                == "send: 1,000 records, 250 records/s")
        #expect(
            ProgressMeter.text(label: "send", count: 0, noun: "records", rate: nil, fraction: nil, left: nil)
                == "send: 0 records")
    }

    @Test func numbersAreGrouped() {
        #expect(ProgressMeter.grouped(0) == "0")
        #expect(ProgressMeter.grouped(999) == "999")
        #expect(ProgressMeter.grouped(1_000) == "1,000")
        #expect(ProgressMeter.grouped(741_308) == "741,308")
        #expect(ProgressMeter.grouped(12_345_678) == "12,345,678")
        #expect(ProgressMeter.grouped(-1_234) == "-1,234")
    }

    @Test func slowRatesKeepADecimal() {
        #expect(ProgressMeter.rate(2.46) == "2.5")
        #expect(ProgressMeter.rate(0.04) == "0.0")
        #expect(ProgressMeter.rate(12.4) == "12")
        #expect(ProgressMeter.rate(1_250_000) == "1,250,000")
        #expect(ProgressMeter.rate(.nan) == "0")
    }

    @Test func durationsAreClockLike() {
        #expect(ProgressMeter.duration(0) == "0:00")
        #expect(ProgressMeter.duration(4.1) == "0:05")
        #expect(ProgressMeter.duration(750) == "12:30")
        #expect(ProgressMeter.duration(3723) == "1:02:03")
        #expect(ProgressMeter.duration(.infinity) == nil)
        #expect(ProgressMeter.duration(100 * 3600) == nil)
    }

    @Test func showsOnlyOnATerminalThatRedrawsAndNotOverTheCommandsOutput() {
        func show(err: Bool, out: Bool, writes: Bool, term: String? = "xterm", off: Bool = false) -> Bool {
            ProgressMeter.shouldShow(
                standardErrorIsTerminal: err, standardOutputIsTerminal: out,
                writesStandardOutput: writes, term: term, turnedOff: off)
        }
        #expect(show(err: true, out: false, writes: true))
        #expect(show(err: true, out: true, writes: false))
        #expect(!show(err: false, out: false, writes: false))
        #expect(!show(err: true, out: true, writes: true))
        #expect(!show(err: true, out: false, writes: false, off: true))
        #expect(!show(err: true, out: false, writes: false, term: "dumb"))
        #expect(show(err: true, out: false, writes: false, term: nil))
    }
}

@Suite struct ProgressMeterTimingTests {
    /// A million records a second for three seconds: the line is drawn at most five times a second, never before
    /// the first quarter second, and the clock is read about 20 times a second, not once per record.
    @Test func drawsAtMostFiveTimesASecondAndReadsTheClockRarely() {
        let clock = ManualClock()
        let display = RecordingDisplay(clock: clock)
        var meter = ProgressMeter(label: "replay", display: display, clock: clock.read)
        for _ in 0..<3_000_000 {
            clock.now += 1e-6
            meter.advance()
        }
        #expect(display.drawings.first.map { $0.time >= 0.25 } == true, "\(display.drawings.first!)")
        #expect(display.drawings.count >= 10 && display.drawings.count <= 15, "\(display.drawings.count) drawings")
        for (earlier, later) in zip(display.drawings, display.drawings.dropFirst()) {
            #expect(later.time - earlier.time >= 0.2 - 1e-9)
        }
        #expect(clock.reads < 3 * 40, "\(clock.reads) clock readings for 3 million records")
        #expect(clock.reads > 3 * 10, "\(clock.reads) clock readings: the line would lag")
    }

    /// At one record a second the clock is still read at each record, so the line keeps up.
    @Test func aSlowPaceIsStillShown() {
        let clock = ManualClock()
        let display = RecordingDisplay(clock: clock)
        var meter = ProgressMeter(label: "send", display: display, clock: clock.read)
        for _ in 0..<10 {
            clock.now += 1
            meter.advance()
        }
        #expect(display.shown.count == 10)
        #expect(display.shown.last == "send: 10 records, 1.0 records/s")
    }

    /// 100,000 records a second through a file of 100 MB at 100 bytes a record (in steps of 1/8 s, which binary
    /// floating point holds exactly): after 3 s, 300,000 records, 30% and 7 s left.
    @Test func theLineCarriesCountRatePercentAndTimeLeft() {
        let clock = ManualClock()
        let display = RecordingDisplay(clock: clock)
        var meter = ProgressMeter(label: "replay", total: 100_000_000, display: display, clock: clock.read)
        for step in 1...24 {
            clock.now = Double(step) * 0.125
            meter.advance(by: 12_500, at: step * 12_500 * 100)
        }
        #expect(display.drawings.map(\.time) == stride(from: 0.25, through: 3, by: 0.25).map { $0 })
        #expect(display.shown.last == "replay: 300,000 records, 100,000 records/s, 30%, 0:07 left")
    }

    @Test func aMeterWithoutDisplayNeverReadsTheClock() {
        let clock = ManualClock()
        var meter = ProgressMeter(label: "replay", display: nil, clock: clock.read)
        for _ in 0..<100_000 {
            clock.now += 1
            meter.advance(at: Int.max)
        }
        meter.refresh()
        meter.finish()
        #expect(clock.reads == 0)
        #expect(!meter.isShown)
    }

    @Test func finishClearsTheLineOnlyIfOneWasDrawnAndDrawsNoMore() {
        let clock = ManualClock()
        let quick = RecordingDisplay(clock: clock)
        var short = ProgressMeter(label: "convert", display: quick, clock: clock.read)
        clock.now = 0.1
        short.advance()
        short.finish()
        #expect(quick.shown.isEmpty && quick.clears == 0)

        let display = RecordingDisplay(clock: clock)
        var meter = ProgressMeter(label: "convert", display: display, clock: clock.read)
        clock.now = 1
        meter.advance()
        #expect(display.shown.count == 1)
        meter.finish()
        #expect(display.clears == 1)
        clock.now = 5
        meter.advance(by: 1_000_000)
        meter.refresh()
        meter.finish()
        #expect(display.shown.count == 1 && display.clears == 1)
    }

    /// The simulator's two phases: devices, then records, each with its own count, total and rate.
    @Test func aNewPhaseCountsAgain() {
        let clock = ManualClock()
        let display = RecordingDisplay(clock: clock)
        var meter = ProgressMeter(label: "simulate", display: display, clock: clock.read)
        meter.startPhase(noun: "devices", total: 4)
        for _ in 0..<2 {
            clock.now += 0.5
            meter.advance()
        }
        #expect(display.shown.last == "simulate: 2 devices, 2.0 devices/s, 50%, 0:01 left")
        meter.startPhase(noun: "records", total: 60_000)
        for minute in 1...3 {
            clock.now += 0.3
            meter.advance(by: 1_000, at: minute * 10_000)
        }
        #expect(
            display.shown.last?.hasPrefix("simulate: 3,000 records, 3,333 records/s, 50%, 0:01 left") == true,
            "\(display.shown.last ?? "")")
    }

    /// A phase that has just begun has no rate nor time left yet (a rate over a hundredth of a second is noise).
    @Test func aPhaseJustBegunShowsNoRateYet() {
        let clock = ManualClock()
        let display = RecordingDisplay(clock: clock)
        var meter = ProgressMeter(label: "convert", noun: "trials", display: display, clock: clock.read)
        clock.now = 1
        meter.refresh()
        clock.now = 1.25
        meter.startPhase(noun: "trials", total: 10)
        clock.now = 1.26
        meter.advance()
        #expect(display.shown == ["convert: 0 trials, 0.0 trials/s", "convert: 1 trials, 10%"])
        // The stride after that burst is a few trials: a refresh (or a later trial) draws.
        clock.now = 1.5
        meter.advance()
        meter.refresh()
        #expect(display.shown.last == "convert: 2 trials, 8.0 trials/s, 20%, 0:01 left")
    }

    /// A command that waits (send pacing) refreshes the line without counting.
    @Test func refreshDrawsWithoutCounting() {
        let clock = ManualClock()
        let display = RecordingDisplay(clock: clock)
        var meter = ProgressMeter(label: "send", display: display, clock: clock.read)
        meter.advance(by: 10)
        clock.now = 1
        meter.refresh()
        #expect(display.shown == ["send: 10 records, 10 records/s"])
    }
}

/// `ROADSAVE_PROGRESS_EVERY` (the commands' tests): drawings by the count, not by the clock.
@Suite struct ProgressMeterDrawEveryTests {
    private static func every(_ count: Int) -> ProgressMeter.Timing {
        var timing = ProgressMeter.Timing()
        timing.drawEvery = count
        return timing
    }

    @Test func theVariableTakesAWholeNumberAndNothingElse() {
        #expect(ProgressMeter.Timing(environment: "500").drawEvery == 500)
        #expect(ProgressMeter.Timing(environment: "1").drawEvery == 1)
        for value in [nil, "", "0", "-3", "fast", "2.5"] {
            #expect(ProgressMeter.Timing(environment: value) == ProgressMeter.Timing(), "\(value ?? "nil")")
        }
        #expect(ProgressMeter.Timing().drawEvery == nil)
    }

    /// A million records a second, far quicker than the clock's first quarter second: drawn at the first record and
    /// then at every 1,000th after it, each line with its rate, percent and time left; cleared at the end.
    @Test func drawsAtTheFirstAdvanceAndEveryNCountsWhateverTheClock() {
        let clock = ManualClock()
        let display = RecordingDisplay(clock: clock)
        var meter = ProgressMeter(
            label: "replay", total: 3_000, display: display, clock: clock.read,
            timing: Self.every(1_000))
        for record in 1...3_000 {
            clock.now += 1e-6
            meter.advance(at: record)
        }
        #expect(
            display.shown == [
                "replay: 1 records, 1,000,000 records/s, 0%, 0:01 left",
                "replay: 1,001 records, 1,000,000 records/s, 33%, 0:01 left",
                "replay: 2,001 records, 1,000,000 records/s, 66%, 0:01 left",
            ], "\(display.shown)")
        meter.finish()
        #expect(display.clears == 1)
    }

    /// Each phase draws at its first advance, however short.
    @Test func eachPhaseDrawsAtItsFirstAdvance() {
        let clock = ManualClock()
        let display = RecordingDisplay(clock: clock)
        var meter = ProgressMeter(label: "simulate", display: display, clock: clock.read, timing: Self.every(1_000))
        meter.startPhase(noun: "devices", total: 4)
        for _ in 0..<4 {
            clock.now += 0.001
            meter.advance()
        }
        meter.startPhase(noun: "records", total: 60_000)
        clock.now += 0.001
        meter.advance(by: 10, at: 1_000)
        #expect(
            display.shown == [
                "simulate: 1 devices, 1,000 devices/s, 25%, 0:01 left",
                "simulate: 10 records, 10,000 records/s, 1%, 0:01 left",
            ], "\(display.shown)")
    }

    /// No time at all since the phase began: no rate to show (nor time left), but the line still is.
    @Test func aClockThatHasNotMovedGivesNoRate() {
        let clock = ManualClock()
        let display = RecordingDisplay(clock: clock)
        var meter = ProgressMeter(
            label: "convert", noun: "trials", total: 10, display: display, clock: clock.read,
            timing: Self.every(5))
        meter.advance()
        #expect(display.shown == ["convert: 1 trials, 10%"])
    }

    /// Without a display the variable changes nothing: no clock, no line.
    @Test func aMeterWithoutDisplayStillDoesNothing() {
        let clock = ManualClock()
        var meter = ProgressMeter(label: "replay", display: nil, clock: clock.read, timing: Self.every(1))
        for _ in 0..<1_000 { meter.advance() }
        meter.finish()
        #expect(clock.reads == 0 && !meter.isShown)
    }
}
