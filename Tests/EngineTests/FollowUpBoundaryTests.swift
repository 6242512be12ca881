import Foundation
import RoadSaveModel
import Testing

@testable import DetectionEngine

/// Issue 28: a crash's follow-up is a function of event time alone. The records it counts are those strictly between
/// the first impact and `observedUntil`, whether the platform answers at once (replay) or after the watch ended (the
/// services through an outage), and wherever a tick or a watermark falls around the record at `observedUntil`.
@Suite struct FollowUpBoundaryTests {
    static let settings = DetectionSettings()

    /// Driving, an impact, a stop; then a fix every second on the impact's own phase, so that one fix falls exactly
    /// at the end of the watch (the boundary record) and another one second after it.
    static func crashWithAFixAtTheWatchsEnd() -> (records: [SensorRecord], impact: Double, until: Double) {
        var s = Script()
        s.activity(.automotive, .high)
        s.drive(seconds: 120, speed: 15)
        s.t += 0.4
        let impact = s.t
        s.impact(peakG: 40)
        s.activity(.stationary, .high)
        for second in 1...200 {
            s.t = impact + Double(second)
            // Moving a metre a fix, so that the last position counted shows which fixes were.
            s.advance(metres: 1)
            s.fix(speed: 0)
        }
        let until = impact + settings.crashDecisionDelay + settings.crashFollowUpDelay
        return (s.records, impact, until)
    }

    /// The follow-up replay gives: every verdict answered at once, time run on at the end.
    static func replayed(_ records: [SensorRecord]) throws -> CrashFollowUpInfo {
        var harness = Harness()
        harness.run(records)
        return try #require(harness.followUps.count == 1 ? harness.followUps.first : nil)
    }

    @Test func theBoundaryRecordIsThere() {
        let (records, _, until) = Self.crashWithAFixAtTheWatchsEnd()
        #expect(records.contains { $0.t == until && $0.kind == .location })
        #expect(records.contains { $0.t == until + 1 })
    }

    @Test func theWindowExcludesTheRecordAtItsEnd() throws {
        let (records, impact, until) = Self.crashWithAFixAtTheWatchsEnd()
        let followUp = try Self.replayed(records)
        #expect(followUp.observedUntil == until)
        let counted = records.filter { $0.t > impact && $0.t < until && $0.kind != .impact }
        #expect(followUp.records == counted.count)
        let lastCounted = try #require(counted.last)
        #expect(followUp.secondsOfData == lastCounted.t - impact)
        // The last position is the fix before the boundary record.
        let lastFix = try #require(counted.last { $0.kind == .location })
        guard case .location(let fix) = lastFix.payload else {
            Issue.record("not a fix")
            return
        }
        #expect(followUp.latitude == fix.latitude && followUp.longitude == fix.longitude)
    }

    /// One device's session driven as a shell drives it, the platform's answers held until `answer()` when
    /// `holdVerdicts`, else given at once.
    struct Driver {
        var session: DeviceSession
        var holdVerdicts: Bool
        var held: [CrashCandidate] = []
        var followUps: [CrashFollowUpInfo] = []

        init(holdVerdicts: Bool) throws {
            session = try CrashFollowUpTests.monitoringSession()
            self.holdVerdicts = holdVerdicts
        }

        mutating func take(_ actions: [DetectionAction]) {
            for action in actions {
                switch action {
                case .evaluateCrash(let candidate):
                    if holdVerdicts {
                        held.append(candidate)
                    } else {
                        take(session.crashEvaluated(crashID: candidate.crashID, outcome: .verdict(.high)))
                    }
                case .emit(let event):
                    if case .crashFollowUp(let info) = event.body { followUps.append(info) }
                default: break
                }
            }
        }

        mutating func handle(_ record: SensorRecord) { take(session.handle(record)) }
        mutating func advance(to t: Double) { take(session.advance(to: t)) }

        /// The platform answers every candidate held.
        mutating func answer() {
            let candidates = held
            held = []
            for candidate in candidates {
                take(session.crashEvaluated(crashID: candidate.crashID, outcome: .verdict(.high)))
            }
        }

        /// Time run on until nothing is pending (the end of input), as replay does.
        mutating func runOn() {
            var previous: Double?
            while let deadline = session.nextDeadline, deadline != previous {
                previous = deadline
                advance(to: deadline)
            }
        }
    }

    /// Where the platform's answer comes: after the record just before the boundary, after the boundary record,
    /// after the record after it, or only once every record is in.
    enum VerdictArrives: CaseIterable {
        case beforeTheBoundaryRecord, afterTheBoundaryRecord, afterTheNextRecord, atTheEnd
    }

    @Test(arguments: VerdictArrives.allCases)
    func aLateVerdictCountsWhatReplayCounts(_ arrives: VerdictArrives) throws {
        let (records, _, until) = Self.crashWithAFixAtTheWatchsEnd()
        let expected = try Self.replayed(records)
        let answerAfter: Double? =
            switch arrives {
            case .beforeTheBoundaryRecord: until - 1
            case .afterTheBoundaryRecord: until
            case .afterTheNextRecord: until + 1
            case .atTheEnd: nil
            }
        var driver = try Driver(holdVerdicts: true)
        for record in records {
            driver.handle(record)
            if record.t == answerAfter { driver.answer() }
        }
        driver.answer()
        driver.runOn()
        #expect(driver.followUps == [expected], "verdict \(arrives)")
    }

    /// Where time is run on to the end of the watch (a watermark or the clock, for a device whose next record is
    /// still on its way): before the boundary record, just after it, or after the next.
    enum TickFalls: CaseIterable {
        case beforeTheBoundaryRecord, justAfterTheBoundaryRecord, afterTheNextRecord
    }

    @Test(arguments: TickFalls.allCases, [false, true])
    func aTickAroundTheBoundaryCountsWhatReplayCounts(_ falls: TickFalls, verdictLate: Bool) throws {
        let (records, _, until) = Self.crashWithAFixAtTheWatchsEnd()
        let expected = try Self.replayed(records)
        var driver = try Driver(holdVerdicts: verdictLate)
        for record in records {
            if falls == .beforeTheBoundaryRecord, record.t == until { driver.advance(to: until) }
            driver.handle(record)
            if falls == .justAfterTheBoundaryRecord, record.t == until { driver.advance(to: until) }
            if falls == .afterTheNextRecord, record.t == until + 1 { driver.advance(to: until + 1) }
            // A late answer comes after the tick, whichever it was.
            if record.t == until + 2 { driver.answer() }
        }
        driver.runOn()
        #expect(driver.followUps == [expected], "tick \(falls), verdict late: \(verdictLate)")
    }

    // MARK: The fleet, with a gateway's watermark

    static let stream = "journal/0/gw-1"

    /// The fleet as detection drives it: the records up to and including `boundary`, then the gateway's watermark
    /// at `watermark`, a tick, the platform's answers (`verdictAfterTick`: held until after that tick), the rest
    /// of the records, the stream's end. Every event, in the order given.
    static func fleetEvents(
        _ records: [SensorRecord], boundary: Double, watermark: Double,
        verdictAfterTick: Bool
    ) -> [RoadSaveEvent] {
        var fleet = DeviceFleet()
        var now = 1000.0
        var held: [(DeviceID, String)] = []
        var events: [RoadSaveEvent] = []
        func take(_ actions: [FleetAction]) {
            for action in actions {
                switch action {
                case .emit(let event):
                    events.append(event)
                case .evaluateCrash(let device, let candidate):
                    if verdictAfterTick {
                        held.append((device, candidate.crashID))
                    } else {
                        take(fleet.crashEvaluated(device: device, crashID: candidate.crashID, outcome: .verdict(.high)))
                    }
                default: break
                }
            }
        }
        take(fleet.settingsFetched(app: Script.device.app, .fetched(settings), now: now))
        for record in records where record.t <= boundary { take(fleet.receive(record, from: stream, now: now)) }
        fleet.watermarkRead(stream: stream, watermark: watermark, now: now)
        now += 0.1
        take(fleet.tick(now: now))
        for (device, crashID) in held {
            take(fleet.crashEvaluated(device: device, crashID: crashID, outcome: .verdict(.high)))
        }
        held = []
        for record in records where record.t > boundary {
            take(fleet.receive(record, from: stream, now: now))
            for (device, crashID) in held {
                take(fleet.crashEvaluated(device: device, crashID: crashID, outcome: .verdict(.high)))
            }
            held = []
        }
        fleet.watermarkRead(stream: stream, watermark: .infinity, now: now)
        now += 0.1
        take(fleet.tick(now: now))
        for (device, crashID) in held {
            take(fleet.crashEvaluated(device: device, crashID: crashID, outcome: .verdict(.high)))
        }
        return events
    }

    static func sorted(_ events: [RoadSaveEvent]) -> [RoadSaveEvent] { events.sorted { $0.eventID < $1.eventID } }

    /// The crash's two deadlines, each with a record exactly on it: its decision (first impact +
    /// `crashDecisionDelay`) and the end of its follow-up's watch.
    enum CrashBoundary: CaseIterable { case decision, endOfWatch }

    @Test(arguments: CrashBoundary.allCases, [0.0, 0.5, 1.0])
    func aWatermarkAroundACrashDeadlineGivesReplaysEvents(_ boundary: CrashBoundary, after offset: Double) throws {
        let (records, impact, until) = Self.crashWithAFixAtTheWatchsEnd()
        let expected = WatermarkTests.replay(records)
        #expect(expected.filter { $0.name == "crashFollowUp" }.count == 1)
        let deadline = boundary == .decision ? impact + Self.settings.crashDecisionDelay : until
        #expect(records.contains { $0.t == deadline })
        for verdictAfterTick in [false, true] {
            let events = Self.fleetEvents(
                records, boundary: deadline, watermark: deadline + offset,
                verdictAfterTick: verdictAfterTick)
            #expect(
                Self.sorted(events) == Self.sorted(expected),
                "\(boundary): watermark at the deadline + \(offset) s, verdict after the tick: \(verdictAfterTick)")
        }
    }

    /// A trip's stop delay, with a fix of movement exactly at its deadline (replay ends the trip first, then
    /// applies the fix), and the watermark at, between or after it and the next record.
    @Test(arguments: [0.0, 0.5, 1.0])
    func aWatermarkAroundAStopDeadlineGivesReplaysEvents(after offset: Double) throws {
        var s = Script()
        s.activity(.automotive, .high)
        s.drive(seconds: 180, speed: 15)
        let lastMovement = try #require(s.lastMovement)
        s.activity(.stationary, .high)
        s.stand(seconds: 239)
        let deadline = lastMovement + Self.settings.stopDelay
        s.t = deadline
        s.fix(speed: 12)
        s.drive(seconds: 60, speed: 12)
        let expected = WatermarkTests.replay(s.records)
        let ends = expected.compactMap { if case .tripDidEnd(let info) = $0.body { info } else { nil } }
        #expect(ends.first?.endReason == .stopDelay && ends.first?.endDate == lastMovement)
        #expect(s.records.contains { $0.t == deadline && $0.kind == .location })
        let events = Self.fleetEvents(
            s.records, boundary: deadline, watermark: deadline + offset, verdictAfterTick: false)
        #expect(Self.sorted(events) == Self.sorted(expected), "watermark at the stop deadline + \(offset) s")
    }

    // MARK: The clock, with records held for ordering

    /// A gateway without watermarks: the clock runs a device's timers on, but never past a record its reorder
    /// window still holds (replay applies that record before the later deadline fires).
    @Test func theClockDoesNotRunATimerPastARecordHeldForOrdering() throws {
        let (fixes, _, until) = Self.crashWithAFixAtTheWatchsEnd()
        // Two activity reports just before the end of the watch and one 9.5 s after it: once the last has arrived,
        // the 10 s window has released everything up to the first (the device's event time is then `until` − 0.5)
        // and still holds the second, at `until` − 0.3, which the follow-up counts.
        func report(_ t: Double) -> SensorRecord {
            SensorRecord(
                device: Script.device, seq: nil, t: t, payload: .activity(ActivityObservation(.stationary, .high)))
        }
        let records = (fixes + [report(until - 0.5), report(until - 0.3), report(until + 9.5)]).sorted { $0.t < $1.t }
        let expected = try Self.replayed(records)
        #expect(
            expected.records
                == records.filter { $0.t > expected.detectedAt && $0.t < until && $0.kind != .impact }.count)

        var fleet = DeviceFleet()
        var now = 1000.0
        var events: [RoadSaveEvent] = []
        func take(_ actions: [FleetAction]) { events += WatermarkTests.answer(actions, &fleet) }
        var followUps: [CrashFollowUpInfo] {
            events.compactMap { if case .crashFollowUp(let info) = $0.body { info } else { nil } }
        }
        take(fleet.settingsFetched(app: Script.device.app, .fetched(Self.settings), now: now))
        for record in records where record.t <= until + 9.5 { take(fleet.receive(record, from: nil, now: now)) }
        #expect(fleet.deviceState(Script.device)?.lastEventTime == until - 0.5)
        // 0.6 s of quiet (less than the idle flush): the device's event time has run past the end of the watch, but
        // a record before it is still held.
        now += 0.6
        take(fleet.tick(now: now))
        #expect(followUps.isEmpty, "the follow-up was sent before a record it counts was applied")
        for record in records where record.t > until + 9.5 {
            now += 0.01
            take(fleet.receive(record, from: nil, now: now))
        }
        for _ in 0..<300 {
            now += 1
            take(fleet.tick(now: now))
        }
        #expect(followUps == [expected])
    }
}
