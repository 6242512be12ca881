import RoadSaveModel
import Testing

@testable import DetectionEngine

/// A journal detection cannot hear (ingest down, or the link to it cut): said once each way, shown in readiness and
/// lag, and not taken for its gateways standing still, up to `journalSilenceLimit`; past it the journal is taken as
/// gone and the clock decides, so no crash decision waits for ever (docs/operating.md, "Links").
@Suite struct JournalSilenceTests {
    static func driver(hold: Double = 30, limit: Double = 300) -> CoreDriver {
        DetectionCoreTests.driver(
            options: .init(
                fleet: .init(watermarkHold: hold), silentJournalGrace: 10, journalSilenceLimit: limit,
                journalSilentAfter: 6))
    }

    /// A drive of `seconds` at a fix a second, as a gateway that holds each batch's last fix back for the next batch
    /// sends it (slightly out of order), with watermarks that promise only what it has sent: batch k of 10 s.
    static func reorderingBatches(seconds: Int) -> [(records: [SensorRecord], watermark: Double)] {
        let records = DetectionCoreTests.drive("held", seconds: seconds)
        var batches: [(records: [SensorRecord], watermark: Double)] = []
        var heldBack: SensorRecord?
        for start in stride(from: 0, to: records.count, by: 10) {
            var batch = Array(records[start..<min(start + 10, records.count)])
            let last = batch.removeLast()
            if let heldBack { batch.append(heldBack) } // older than the batch's first fix: out of order
            heldBack = last
            batches.append((batch, last.t))
        }
        if let heldBack { batches.append(([heldBack], .infinity)) }
        return batches
    }

    /// The gateway sends a batch every 10 s, while the journal answers or not as `answers(k)` says for batch k.
    static func run(_ driver: inout CoreDriver, answers: (Int) -> Bool) {
        for (k, batch) in reorderingBatches(seconds: 400).enumerated() {
            driver.store(batch.records, gateway: "gw", watermark: batch.watermark)
            driver.run(10, journalAnswers: answers(k))
        }
        driver.run(30)
    }

    @Test func aCutOfThreeMinutesIsNoGatewayStandingStillAndTheEventsStayExact() {
        var control = Self.driver()
        Self.run(&control) { _ in true }
        var cut = Self.driver()
        // A minute into the trip the link to ingest is cut for 180 s while the gateway goes on sending: longer
        // than the hold (30 s) and than the grace of gateways without watermarks (10 s).
        Self.run(&cut) { !(6..<24).contains($0) }
        #expect(control.events.map(\.name) == ["tripDidStart", "tripDidEnd", "tripBehaviour"])
        #expect(cut.unapplied.isEmpty, "records too late after the cut: \(cut.unapplied.count)")
        #expect(cut.events.map(\.eventID) == control.events.map(\.eventID))
        #expect(cut.core.fleet.statistics.forcedReleases == 0, "a watermark released by the clock during the cut")
        #expect(!cut.logs.contains { $0.contains("watermark has stood still too long") })
        #expect(cut.logs.filter { $0.contains("no answer from the journal") }.count == 1)
        #expect(cut.logs.filter { $0.contains("the journal answers again") }.count == 1)
    }

    @Test func aSilentJournalIsShownInReadinessAndLagFromWhenItLastAnswered() {
        var driver = Self.driver()
        driver.store(DetectionCoreTests.drive(seconds: 10), gateway: "gw", watermark: .infinity)
        driver.run(1)
        #expect(driver.core.lagSeconds(now: driver.time.monotonic) == 0)
        #expect(driver.core.silentJournals(now: driver.time.monotonic).isEmpty)
        driver.run(5, journalAnswers: false)
        #expect(driver.core.silentJournals(now: driver.time.monotonic).isEmpty, "within the request's wait: heard")
        driver.run(2, journalAnswers: false)
        let silent = driver.core.silentJournals(now: driver.time.monotonic)
        #expect(silent.map(\.endpoint) == ["tcp://ingest:5551"])
        #expect((6...7.1).contains(silent.first?.unanswered ?? 0))
        #expect((driver.core.lagSeconds(now: driver.time.monotonic) ?? 0) > 6, "lag from its last answer")
        driver.run(20, journalAnswers: false)
        #expect(driver.logs.filter { $0.contains("no answer from the journal") }.count == 1, "said once")
        driver.run(1)
        #expect(driver.core.silentJournals(now: driver.time.monotonic).isEmpty)
        #expect(driver.core.lagSeconds(now: driver.time.monotonic) == 0)
        #expect(driver.logs.filter { $0.contains("the journal answers again") }.count == 1)
    }

    @Test func aJournalSilentPastTheLimitIsGoneAndTheClockDecides() {
        var driver = Self.driver(hold: 30, limit: 60)
        let held = DetectionCoreTests.drive("held", seconds: 40)
        driver.store(held, gateway: "gw", watermark: held.last!.t - 5)
        driver.run(1)
        driver.run(55, journalAnswers: false)
        #expect(!DetectionCoreTests.ended(driver.events), "held within the limit")
        driver.run(30, journalAnswers: false)
        #expect(DetectionCoreTests.ended(driver.events), "a dead ingest holds no decision for ever")
        #expect(driver.logs.contains { $0.contains("watermark has stood still too long") })
    }

    /// What the limit is for: a crash whose decision falls due while its journal cannot be heard waits for the
    /// journal (what it holds may change the decision) up to the limit, then is decided on what was read.
    @Test func aCrashDecisionWaitsForASilentJournalAtMostTheLimit() {
        var driver = Self.driver(hold: 30, limit: 60)
        var crash = Script()
        crash.device = FleetStreams.device("crash")
        crash.activity(.automotive, .high)
        crash.drive(seconds: 60, speed: 15)
        crash.impact(peakG: 45)
        crash.accelerate(from: 5, to: 0, seconds: 2)
        crash.stand(seconds: 2)
        // The gateway has promised up to its last fix; the decision (5 s after the impact) is due after it.
        driver.store(crash.records, gateway: "gw", watermark: crash.records.last!.t)
        driver.run(0.5)
        func evaluated() -> Bool { driver.calls.contains { if case .evaluation = $0 { true } else { false } } }
        #expect(!evaluated(), "the decision waits for the watermark")
        driver.run(55, journalAnswers: false)
        #expect(!evaluated(), "held while the journal is silent, within the limit")
        driver.run(10, journalAnswers: false)
        #expect(evaluated(), "past the limit the clock decides: an ingest gone for good holds no crash alert")
    }

    @Test func aGatewayStandingStillOnAHeardJournalIsReleasedAfterItsHold() {
        var driver = Self.driver(hold: 30)
        let held = DetectionCoreTests.drive("held", seconds: 40)
        driver.store(held, gateway: "gw", watermark: held.last!.t - 5)
        driver.run(20)
        #expect(!DetectionCoreTests.ended(driver.events))
        driver.run(40)
        #expect(DetectionCoreTests.ended(driver.events), "the hold runs on a heard journal")
    }
}
