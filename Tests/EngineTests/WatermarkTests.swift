import Foundation
import GatewayKit
import RoadSaveModel
import Testing

@testable import DetectionEngine

/// Devices of a gateway's stream are ordered by its watermark (`FleetStreamState`), not by the wire's quiet: a
/// batch lost and sent again after newer ones, a gateway that pauses, an ingest that is down, none of them makes a
/// record late or a device look silent, and the events are those of a replay of the same records. Driven directly,
/// as detection drives the fleet: records, then the chunk's watermark, then ticks.
@Suite struct WatermarkTests {
    static let app = FleetStreams.app
    static let stream = "journal/0/gw-1"
    static let settings = DetectionSettings()

    /// The records of the mixed stream (a crash, a commuter, a driver who falls silent, another application), in
    /// the order a gateway reads them: disordered by up to a few seconds, one record repeated.
    static let records: [SensorRecord] = FleetStreams.mixed().compactMap { input in
        if case .record(let record, _) = input { record } else { nil }
    }

    /// A replay of `records`: the engines in one process, time only from the records, the end of input at the end.
    static func replayEvents() -> [RoadSaveEvent] { replay(records) }

    /// A replay of any records: every application's `settings` known from the start, crash evaluations answered at
    /// once (`answer`), time only from the records, the end of input at the end.
    static func replay(_ records: [SensorRecord], settings: DetectionSettings = settings) -> [RoadSaveEvent] {
        var fleet = DeviceFleet()
        var events: [RoadSaveEvent] = []
        for app in Set(records.map(\.device.app)).sorted() {
            events += answer(fleet.settingsFetched(app: app, .fetched(settings), now: nil), &fleet)
        }
        for record in records { events += answer(fleet.receive(record, now: nil), &fleet) }
        return events + answer(fleet.finish(), &fleet)
    }

    /// Answers crash evaluations at once (high), as the embedded platform would, and returns every event.
    static func answer(_ actions: [FleetAction], _ fleet: inout DeviceFleet) -> [RoadSaveEvent] {
        var events: [RoadSaveEvent] = []
        for action in actions {
            switch action {
            case .emit(let event): events.append(event)
            case .evaluateCrash(let device, let candidate):
                events += answer(
                    fleet.crashEvaluated(
                        device: device, crashID: candidate.crashID,
                        outcome: .verdict(.high)), &fleet)
            default: break
            }
        }
        return events
    }

    /// One entry of a journal: a batch's records and the watermark its header carried (nil: no header).
    struct Chunk {
        var records: [SensorRecord]
        var watermark: Double?
    }

    /// What a gateway (`GatewayWatermark`, the promises `roadsave send` makes) puts in the journal when batch
    /// `lost` goes missing with an ingest and is sent again after `laterBy` newer ones were stored.
    static func journal(batch size: Int, lost: Int?, laterBy: Int, headers: Bool = true) -> [Chunk] {
        let batches = stride(from: 0, to: records.count, by: size).map {
            Array(records[$0..<min($0 + size, records.count)])
        }
        var gateway = GatewayWatermark(maximumDisorder: 10)
        var chunks: [Chunk] = []
        for (number, batch) in batches.enumerated() {
            for record in batch { gateway.read(record.t) }
            gateway.seal(batch: number)
            let watermark = gateway.promise(excluding: number)
            if number != lost {
                chunks.append(Chunk(records: batch, watermark: headers ? watermark : nil))
                gateway.acknowledged(batch: number)
            }
            if let lost, number == lost + laterBy {
                chunks.append(
                    Chunk(records: batches[lost], watermark: headers ? gateway.promise(excluding: lost) : nil))
                gateway.acknowledged(batch: lost)
            }
        }
        return chunks
    }

    /// Detection over `chunks`: a chunk every `spacing` seconds of the shell's clock and a tick every 0.1 s; then
    /// the stream's end (with headers), or the clock running on (without).
    static func detect(_ chunks: [Chunk], spacing: Double = 0.05, options: DeviceFleet.Options = .init())
        -> (events: [RoadSaveEvent], fleet: DeviceFleet)
    {
        var fleet = DeviceFleet(options: options)
        var now = 1000.0
        var events = answer(fleet.settingsFetched(app: app, .fetched(settings), now: now), &fleet)
        _ = fleet.settingsFetched(app: "app-2", .fetched(settings), now: now)
        var nextTick = now
        let headers = chunks.contains { $0.watermark != nil }
        for chunk in chunks {
            for record in chunk.records {
                events += answer(fleet.receive(record, from: chunk.watermark == nil ? nil : stream, now: now), &fleet)
            }
            if let watermark = chunk.watermark { fleet.watermarkRead(stream: stream, watermark: watermark, now: now) }
            now += spacing
            while nextTick <= now {
                events += answer(fleet.tick(now: nextTick), &fleet)
                nextTick += 0.1
            }
        }
        if headers { fleet.watermarkRead(stream: stream, watermark: .infinity, now: now) }
        for _ in 0..<(headers ? 1 : 4000) {
            now += 0.1
            events += answer(fleet.tick(now: now), &fleet)
        }
        return (events, fleet)
    }

    static func sorted(_ events: [RoadSaveEvent]) -> [RoadSaveEvent] { events.sorted { $0.eventID < $1.eventID } }

    @Test(arguments: [(1, 3), (4, 2), (9, 6)])
    func aBatchSentAgainAfterNewerOnesIsNotLate(lost: Int, laterBy: Int) {
        let (events, fleet) = Self.detect(Self.journal(batch: 50, lost: lost, laterBy: laterBy))
        #expect(fleet.statistics.late == 0)
        #expect(Self.sorted(events) == Self.sorted(Self.replayEvents()))
        #expect(events.contains { $0.name == "crashDetected" })
    }

    /// The control: the same journal without headers, ordered by the window and the clock, has records too late
    /// and events that differ from the replay's (so the test above can fail).
    @Test func withoutHeadersTheSameJournalHasLateRecords() {
        let (events, fleet) = Self.detect(Self.journal(batch: 50, lost: 4, laterBy: 2, headers: false))
        #expect(fleet.statistics.late > 0)
        #expect(Self.sorted(events) != Self.sorted(Self.replayEvents()))
    }

    @Test func inOrderWithHeadersTheEventsAreTheReplays() {
        let (events, fleet) = Self.detect(Self.journal(batch: 37, lost: nil, laterBy: 0))
        #expect(fleet.statistics.late == 0 && fleet.statistics.forcedReleases == 0)
        #expect(Self.sorted(events) == Self.sorted(Self.replayEvents()))
    }

    // MARK: Silence and standing still

    static let driver = FleetStreams.device("driver")
    static let other = FleetStreams.device("other")

    /// A driver who crashes at `impact` and then says nothing more, and another device that goes on sending for
    /// `otherSeconds` after it.
    static func crashThenSilence(otherSeconds: Int) -> (records: [SensorRecord], impact: Double) {
        var driver = Script()
        driver.device = Self.driver
        driver.activity(.automotive, .high)
        driver.drive(seconds: 120, speed: 15)
        driver.t += 0.4
        driver.impact(peakG: 45)
        let impact = driver.t
        driver.t += 0.6
        driver.accelerate(from: 5, to: 0, seconds: 2)
        var other = Script()
        other.device = Self.other
        other.activity(.walking, .high)
        other.walk(seconds: 130 + otherSeconds)
        return ((driver.records + other.records).sorted { $0.t < $1.t }, impact)
    }

    /// The crash of a device that fell silent is decided when its gateway's watermark passes the decision time,
    /// whatever the shell's clock says: here the clock stands still, and only the other device's records (and the
    /// watermarks they bring) move time on.
    @Test func aSilentDeviceIsDecidedWhenItsGatewaysWatermarkPassesItsDecisionTime() throws {
        let (records, impact) = Self.crashThenSilence(otherSeconds: 60)
        var fleet = DeviceFleet()
        let now = 5000.0
        _ = fleet.settingsFetched(app: Self.app, .fetched(Self.settings), now: now)
        var decidedAt: Double?
        for record in records {
            var actions = fleet.receive(record, from: Self.stream, now: now)
            // The gateway's promise after each record: its input is in order, so everything before this record.
            fleet.watermarkRead(stream: Self.stream, watermark: record.t, now: now)
            actions += fleet.tick(now: now)
            if decidedAt == nil, actions.contains(where: { if case .evaluateCrash = $0 { true } else { false } }) {
                decidedAt = record.t
            }
        }
        let decision = try #require(decidedAt)
        #expect(decision > impact + Self.settings.crashDecisionDelay)
        #expect(decision < impact + Self.settings.crashDecisionDelay + 1.5, "at the first watermark past it")
        #expect(fleet.statistics.forcedReleases == 0)
    }

    /// A device whose records its gateway's watermark released at a tick keeps no room for records while it is
    /// quiet (a ring of 8 records, about 1 KB of a quiet device's 4 KB); its next records take one again and go
    /// out in order as before.
    @Test func aDeviceReleasedByTheClockKeepsNoBufferMemoryWhileQuiet() throws {
        var fleet = DeviceFleet()
        let now = 5000.0
        _ = fleet.settingsFetched(app: Self.app, .fetched(Self.settings), now: now)
        let device = DeviceID(app: Self.app, user: "quiet")
        let t = 1_772_433_000.0
        func fix(_ seq: UInt64, _ time: Double) -> SensorRecord {
            SensorRecord(
                device: device, seq: seq, t: time,
                payload: .location(LocationFix(latitude: -33.93, longitude: 18.42, speed: 0, horizontalAccuracy: 14)))
        }
        _ = fleet.receive(
            SensorRecord(device: device, seq: 0, t: t, payload: .capabilities(.full)), from: Self.stream, now: now)
        _ = fleet.receive(fix(1, t + 0.2), from: Self.stream, now: now)
        // No watermark yet: both wait in the reorder buffer.
        #expect(fleet.deviceState(device)?.ordering.bufferedCount == 2)
        #expect(fleet.deviceState(device)?.ordering.bufferCapacity ?? 0 >= 2)

        fleet.watermarkRead(stream: Self.stream, watermark: t + 1, now: now)
        _ = fleet.tick(now: now + 0.1)
        let quiet = try #require(fleet.deviceState(device))
        #expect(quiet.ordering.bufferedCount == 0)
        #expect(quiet.ordering.released == t + 0.2, "both applied")
        #expect(quiet.ordering.bufferCapacity == 0, "the emptied ring went with them")

        // Heard again: buffered, then released by the next watermark, in order.
        _ = fleet.receive(fix(3, t + 30.4), from: Self.stream, now: now + 30)
        _ = fleet.receive(fix(2, t + 30.2), from: Self.stream, now: now + 30)
        #expect(fleet.deviceState(device)?.ordering.bufferedCount == 2)
        fleet.watermarkRead(stream: Self.stream, watermark: t + 30.3, now: now + 30)
        _ = fleet.tick(now: now + 30.1)
        let partly = try #require(fleet.deviceState(device))
        #expect(partly.ordering.released == t + 30.2)
        #expect(partly.ordering.bufferedCount == 1, "the newer one waits for the watermark")
        #expect(partly.ordering.bufferCapacity > 0, "kept while it holds a record")
    }

    /// A gateway that stops (paused, its link or ingest down) holds its devices: no trip ends, no crash is decided
    /// and nothing held is released while its watermark stands still, for `watermarkHold` on the shell's clock;
    /// then the clock's rules take over, said once and counted.
    @Test func aGatewayStandingStillHoldsItsDevicesForTheHoldThenTheClockDecides() throws {
        let (records, impact) = Self.crashThenSilence(otherSeconds: 0)
        let options = DeviceFleet.Options(watermarkHold: 30)
        var fleet = DeviceFleet(options: options)
        var now = 5000.0
        _ = fleet.settingsFetched(app: Self.app, .fetched(Self.settings), now: now)
        let upToImpact = records.filter { $0.t <= impact + 1 }
        for record in upToImpact {
            _ = fleet.receive(record, from: Self.stream, now: now)
            fleet.watermarkRead(stream: Self.stream, watermark: record.t - 10, now: now)
            now += 0.01
        }
        let stoodStillAt = now
        // Nothing more comes; the clock runs on (ten ticks a second).
        var actions: [FleetAction] = []
        while now < stoodStillAt + options.watermarkHold - 0.1 {
            now += 0.1
            actions += fleet.tick(now: now)
        }
        #expect(actions.isEmpty, "held: \(actions)")
        #expect(fleet.deviceState(Self.driver)?.ordering.bufferedCount ?? 0 > 0)
        while now < stoodStillAt + options.watermarkHold + 30 {
            now += 0.1
            actions += fleet.tick(now: now)
        }
        let expired = actions.filter { if case .watermarkHoldExpired = $0 { true } else { false } }
        #expect(expired.count == 1)
        guard case .watermarkHoldExpired(let name, let stillSince)? = expired.first else { return }
        #expect(name == Self.stream && stillSince < stoodStillAt)
        #expect(
            actions.contains { if case .evaluateCrash = $0 { true } else { false } },
            "decided by the clock after the hold")
        #expect(fleet.statistics.forcedReleases >= 1)
        // When the watermark moves again the stream orders its devices again, and a later stall is said again.
        fleet.watermarkRead(stream: Self.stream, watermark: impact + 100, now: now)
        #expect(fleet.streams[Self.stream]?.holdExpiredReported == false)
    }

    /// The time the shell could not hear its journals (it was down, or they did not answer) is not the gateway's
    /// standing still: `resumeClock` counts the hold again from then.
    @Test func theHoldCountsAgainFromWhenTheShellHearsItsJournals() {
        let (records, _) = Self.crashThenSilence(otherSeconds: 0)
        var fleet = DeviceFleet(options: .init(watermarkHold: 30))
        _ = fleet.settingsFetched(app: Self.app, .fetched(Self.settings), now: 0)
        for record in records.prefix(100) {
            _ = fleet.receive(record, from: Self.stream, now: 0)
            fleet.watermarkRead(stream: Self.stream, watermark: record.t - 10, now: 0)
        }
        // Down for a minute; then heard again.
        fleet.resumeClock(now: 60)
        #expect(fleet.tick(now: 89).isEmpty)
        #expect(fleet.statistics.forcedReleases == 0)
        #expect(!fleet.tick(now: 91).isEmpty, "the hold ran out 30 s after the resume")
    }

    /// The end of a stream (a bounded input such as `roadsave send FILE` at its end) decides its devices as the end
    /// of a replay's input does: buffers released, every timer fired.
    @Test func theEndOfAStreamDecidesItsDevicesAsTheEndOfAReplay() {
        var fleet = DeviceFleet()
        _ = fleet.settingsFetched(app: Self.app, .fetched(Self.settings), now: 0)
        _ = fleet.settingsFetched(app: "app-2", .fetched(Self.settings), now: 0)
        var events: [RoadSaveEvent] = []
        for record in Self.records {
            events += Self.answer(fleet.receive(record, from: Self.stream, now: 0), &fleet)
        }
        #expect(events.count < Self.replayEvents().count, "nothing released yet: no watermark")
        fleet.watermarkRead(stream: Self.stream, watermark: .infinity, now: 0)
        events += Self.answer(fleet.tick(now: 0), &fleet)
        #expect(Self.sorted(events) == Self.sorted(Self.replayEvents()))
        #expect(fleet.deviceIDs.allSatisfy { fleet.deviceState($0)?.ordering.bufferedCount == 0 })
    }

    /// Records that waited for their application's settings go in all before any is released: a watermark past
    /// all of them must not make the older ones late.
    @Test func recordsThatWaitedForSettingsAreNotMadeLateByAWatermarkPastThem() {
        var fleet = DeviceFleet()
        let first = Self.records.filter { $0.device.app == Self.app }.prefix(200)
        var actions: [FleetAction] = []
        for record in first { actions += fleet.receive(record, from: Self.stream, now: 0) }
        #expect(actions.contains { if case .fetchSettings = $0 { true } else { false } })
        fleet.watermarkRead(stream: Self.stream, watermark: first.map(\.t).max()! + 1, now: 0)
        _ = fleet.settingsFetched(app: Self.app, .fetched(Self.settings), now: 0)
        #expect(fleet.statistics.late == 0)
        #expect(fleet.statistics.applied > 0)
    }

    /// A checkpoint holds the streams: the fleet read back goes on as the one that wrote it.
    @Test func aCheckpointKeepsTheStreams() throws {
        let chunks = Self.journal(batch: 50, lost: 4, laterBy: 2)
        var fleet = DeviceFleet()
        _ = fleet.settingsFetched(app: Self.app, .fetched(Self.settings), now: 0)
        for chunk in chunks.prefix(8) {
            for record in chunk.records { _ = fleet.receive(record, from: Self.stream, now: 0) }
            fleet.watermarkRead(stream: Self.stream, watermark: chunk.watermark!, now: 0)
        }
        let shared = try JSONDecoder().decode(FleetSharedState.self, from: JSONEncoder().encode(fleet.sharedState))
        let devices = try fleet.deviceIDs.map { id in
            (id, try JSONDecoder().decode(FleetDeviceState.self, from: JSONEncoder().encode(fleet.deviceState(id)!)))
        }
        var restored = DeviceFleet(options: .init(), shared: shared, devices: devices)
        #expect(restored.streams == fleet.streams)
        #expect(restored.deviceState(Self.records[0].device)?.stream == Self.stream)
        for chunk in chunks.dropFirst(8) {
            for record in chunk.records {
                #expect(
                    restored.receive(record, from: Self.stream, now: 1)
                        == fleet.receive(record, from: Self.stream, now: 1))
            }
            fleet.watermarkRead(stream: Self.stream, watermark: chunk.watermark!, now: 1)
            restored.watermarkRead(stream: Self.stream, watermark: chunk.watermark!, now: 1)
            #expect(restored.tick(now: 1) == fleet.tick(now: 1))
        }
        #expect(restored.statistics == fleet.statistics)
    }

    /// A stream no device in memory came through is forgotten once it is over.
    @Test func finishedStreamsAreForgotten() {
        var fleet = DeviceFleet()
        _ = fleet.settingsFetched(app: Self.app, .fetched(Self.settings), now: 0)
        _ = fleet.receive(Self.records[0], from: "a", now: 0)
        fleet.watermarkRead(stream: "a", watermark: .infinity, now: 0)
        fleet.watermarkRead(stream: "b", watermark: .infinity, now: 0)
        fleet.forgetFinishedStreams(now: 0)
        #expect(fleet.streams.keys.sorted() == ["a"], "a's device is in memory")
        _ = fleet.tick(now: 0)
    }

    // MARK: Records too late

    /// An impact record too late for ordering is still screened: a crash alert is not lost to the order its
    /// records came in (a gateway without watermarks whose batch came back after the window had moved on).
    @Test func anImpactTooLateForOrderingIsStillScreened() throws {
        let (records, impact) = Self.crashThenSilence(otherSeconds: 0)
        let impactRecord = try #require(records.first { $0.t == impact })
        var fleet = DeviceFleet()
        _ = fleet.settingsFetched(app: Self.app, .fetched(Self.settings), now: nil)
        var actions: [FleetAction] = []
        for record in records where record != impactRecord && record.device == Self.driver {
            actions += fleet.receive(record, now: nil)
        }
        // Time moves on past the decision time; then the impact arrives, far behind.
        let later = SensorRecord(
            device: Self.driver, seq: 100_000, t: impact + 40,
            payload: .location(
                LocationFix(
                    latitude: -33.9, longitude: 18.5, speed: 0,
                    horizontalAccuracy: 5)))
        actions += fleet.receive(later, now: nil)
        actions += fleet.receive(impactRecord, now: nil)
        #expect(actions.contains { if case .recordRejected(_, .late) = $0 { true } else { false } })
        #expect(fleet.statistics.lateImpactsScreened == 1)
        actions += fleet.finish()
        let screened = actions.contains { action in
            switch action {
            case .evaluateCrash(_, let candidate), .crashDismissed(_, let candidate, _): candidate.time == impact
            default: false
            }
        }
        #expect(screened, "screened once the session's time passed its decision time")
    }
}
