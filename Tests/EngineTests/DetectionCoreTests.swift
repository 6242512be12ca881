import Foundation
import RoadSaveModel
import Testing

@testable import DetectionEngine

/// Detection's decisions without sockets, sleeps or a store: recovery, journals heard and silent, outages and
/// re-sends, a silent device beside a silent gateway, what waits to be stored, checkpoints, commands and the stop.
@Suite struct DetectionCoreTests {
    static let app = FleetStreams.app
    static let settings: DetectionSettings = {
        var settings = DetectionSettings()
        settings.stopDelay = 20
        // A silent device's trip ends after this on the clock (issue 29): as short as the stop delay here.
        settings.tripOfflineGrace = 20
        settings.crashDecisionDelay = 5
        return settings
    }()

    /// A core whose fleet knows the application's settings (so records are applied at once).
    static func driver(options: DetectionCore.Options = .init()) -> CoreDriver {
        var fleet = DeviceFleet(options: options.fleet)
        _ = fleet.settingsFetched(app: app, .fetched(settings), now: nil)
        _ = fleet.settingsFetched(app: "app-2", .fetched(settings), now: nil)
        _ = fleet.takeChangedDevices()
        var driver = CoreDriver(
            options: options,
            core: DetectionCore(
                options: options, fleet: fleet, journalEndpoints: ["tcp://ingest:5551"],
                at: CoreDriver.start))
        driver.start()
        driver.answer() // the journal names itself: live
        return driver
    }

    /// A driver's minute at 13 m/s, then it falls silent.
    static func drive(_ user: String = "driver", seconds: Int = 60, start: Double = Script.start) -> [SensorRecord] {
        var script = Script()
        script.device = FleetStreams.device(user)
        script.t = start
        script.activity(.automotive, .high)
        script.drive(seconds: seconds, speed: 13)
        return script.records
    }

    static func ended(_ events: [RoadSaveEvent]) -> Bool { events.contains { $0.name == "tripDidEnd" } }

    // MARK: Going live, recovery

    @Test func itGoesLiveOnceTheJournalNamedItselfAndReadsFromWhereItWas() {
        var driver = CoreDriver()
        driver.start()
        #expect(driver.outstanding?.feed == nil, "first: who are you")
        #expect(driver.core.isLive, "nothing to re-run")
        driver.answer()
        #expect(driver.outstanding?.feed == driver.feed && driver.outstanding?.after == 0)
    }

    /// Once a reply reached the journal's head, replies are short, so that a crash stored meanwhile waits behind
    /// little work; once more than `liveBacklog` chunks wait, long, so that round trips do not hold the reading back.
    @Test func repliesAreShortNearTheJournalsHeadAndLongBehindIt() {
        var driver = Self.driver()
        #expect(driver.outstanding?.size == .live, "the journal was empty")
        let records = Self.drive(seconds: 120)
        let backlog = Int(JournalLink.liveBacklog)
        var stored = 0
        func store(_ count: Int) {
            for _ in 0..<count {
                driver.store([records[stored]])
                stored += 1
            }
        }
        store(3 * backlog)
        // Each answer holds `backlog` chunks: 2, then 1, then no backlogs are left behind. Short replies only
        // once the head was reached.
        var sizes: [JournalReplySize?] = []
        for _ in 0..<3 {
            driver.answer(items: backlog)
            sizes.append(driver.outstanding?.size)
        }
        #expect(sizes == [.catchUp, .catchUp, .live], "\(sizes)")
        store(backlog + 1)
        driver.answer(items: 1)
        #expect(driver.outstanding?.size == .live, "still short with a backlog of \(backlog) chunks")
        store(2)
        driver.answer(items: 1)
        #expect(driver.outstanding?.size == .catchUp, "one chunk more")
        driver.answer()
        #expect(driver.outstanding?.size == .live)
        #expect(driver.core.counts.recordsRead == stored, "every record read once")
    }

    /// The inputs stored by one run, given to a new core as its recovery, give the same events again.
    @Test func aReRunOfTheStoredInputsGivesTheSameEvents() {
        var first = Self.driver()
        for batch in stride(from: 0, to: 60, by: 10) { first.store(Array(Self.drive()[batch..<batch + 10])) }
        first.run(1)
        // Silent for longer than the stop delay: the clock ends the trip (a tick input is stored).
        first.run(30)
        first.answerPlatform()
        #expect(Self.ended(first.events))
        // A restart: the fleet as it was before any input (no checkpoint), and every input stored after it.
        var fleet = DeviceFleet()
        _ = fleet.settingsFetched(app: Self.app, .fetched(Self.settings), now: nil)
        _ = fleet.settingsFetched(app: "app-2", .fetched(Self.settings), now: nil)
        let core = DetectionCore(
            options: .init(), fleet: fleet, recovery: first.storedInputs,
            lastInput: Int64(first.storedInputs.count), journalEndpoints: ["tcp://ingest:5551"],
            at: first.time)
        var second = CoreDriver(core: core)
        second.journal = first.journal
        second.time = first.time
        second.start()
        #expect(!second.core.isLive, "waiting for the journal to name itself")
        while !second.core.isLive {
            let answered = second.answer()
            #expect(answered)
            if !answered { break }
        }
        #expect(second.core.counts.recoveredInputs == first.storedInputs.count)
        #expect(second.events.map(\.eventID) == first.events.map(\.eventID))
        #expect(
            second.storedInputs.filter { if case .resumed = $0 { false } else { true } }.isEmpty,
            "a re-run stores nothing but its resume")
        #expect(second.outstanding?.after == UInt64(first.journal.count), "reading goes on after the re-run")
    }

    @Test func commandsThatComeWhileReRunningWaitForTheLiveFleet() {
        var fleet = DeviceFleet()
        _ = fleet.settingsFetched(app: Self.app, .fetched(Self.settings), now: nil)
        let recovery: [DetectionInput] = [.records(feed: "journal-1", after: 0, to: 1, now: CoreDriver.start.wall)]
        var driver = CoreDriver(
            core: DetectionCore(
                options: .init(), fleet: fleet, recovery: recovery, lastInput: 1,
                journalEndpoints: ["e"], at: CoreDriver.start))
        driver.store(Self.drive(seconds: 5))
        driver.start()
        driver.command(ControlRequest(command: .stopMonitoring, app: Self.app, user: "driver"))
        #expect(driver.replies.isEmpty, "held until the re-run is done")
        while !driver.core.isLive { driver.answer() }
        #expect(driver.replies.count == 1)
        #expect(String(decoding: driver.replies[0], as: UTF8.self).contains(#""ok":true"#))
    }

    // MARK: Journals heard and silent

    /// A device of a gateway without watermarks goes by the clock, but only while detection hears its journal: an
    /// ingest that stops answering is no device's silence until the grace is over.
    @Test func aJournalThatStopsAnsweringHoldsTheClockForItsGrace() {
        var driver = Self.driver(options: .init(silentJournalGrace: 60))
        driver.store(Self.drive())
        driver.run(0.5)
        #expect(driver.events.map(\.name) == ["tripDidStart"])
        // Ingest goes down: its journal answers nothing for 45 s, more than the stop delay.
        driver.run(45, journalAnswers: false)
        #expect(!Self.ended(driver.events), "the trip ended while the journal was silent")
        // It answers again: quiet time counts from now (a resume is stored), the trip ends a stop delay later.
        driver.run(1)
        #expect(driver.storedInputs.contains { if case .resumed = $0 { true } else { false } })
        #expect(!Self.ended(driver.events))
        driver.run(25)
        #expect(Self.ended(driver.events))
    }

    /// A journal silent past its grace is not waited for any more: a dead ingest never holds a decision for ever.
    @Test func pastTheGraceTheClockRunsOnWithoutTheJournal() {
        var driver = Self.driver(options: .init(silentJournalGrace: 10))
        driver.store(Self.drive())
        driver.run(0.5)
        driver.run(40, journalAnswers: false)
        #expect(Self.ended(driver.events))
    }

    // MARK: Gateways' streams

    /// A batch lost and sent again lands after newer ones: with watermarks nothing is late, and the events are
    /// those of the records in order.
    @Test func aBatchSentAgainAfterNewerOnesGivesNothingLate() {
        let records = Self.drive(seconds: 120)
        var inOrder = Self.driver()
        var outOfOrder = Self.driver()
        let batches = stride(from: 0, to: records.count, by: 20).map {
            Array(records[$0..<min($0 + 20, records.count)])
        }
        for batch in batches {
            inOrder.store(batch, gateway: "gw", watermark: batch.last!.t)
        }
        // Batch 1 lost: batches 2 and 3 land first, promising no more than batch 1's oldest.
        outOfOrder.store(batches[0], gateway: "gw", watermark: batches[1].first!.t)
        outOfOrder.store(batches[2], gateway: "gw", watermark: batches[1].first!.t)
        outOfOrder.store(batches[3], gateway: "gw", watermark: batches[1].first!.t)
        outOfOrder.store(batches[1], gateway: "gw", watermark: batches[3].last!.t)
        for batch in batches.dropFirst(4) { outOfOrder.store(batch, gateway: "gw", watermark: batch.last!.t) }
        for driver in [0, 1] {
            if driver == 0 {
                inOrder.store([], gateway: "gw", watermark: .infinity)
            } else {
                outOfOrder.store([], gateway: "gw", watermark: .infinity)
            }
        }
        inOrder.run(2)
        outOfOrder.run(2)
        #expect(outOfOrder.unapplied.isEmpty)
        #expect(outOfOrder.events.map(\.eventID) == inOrder.events.map(\.eventID))
        #expect(
            outOfOrder.events.map(\.name) == ["tripDidStart", "tripDidEnd", "tripBehaviour"],
            "the end of the stream ends the trip")
    }

    /// A silent device beside an active one of the same gateway is decided as soon as the gateway's watermark
    /// passes its deadline; a silent device of a gateway that stands still is held, for the hold, then the clock
    /// decides and says so.
    @Test func aSilentDeviceBesideASilentGateway() {
        var driver = Self.driver(options: .init(fleet: .init(watermarkHold: 30), silentJournalGrace: 3600))
        let quiet = Self.drive("quiet", seconds: 40)
        let busy = Self.drive("busy", seconds: 200)
        let held = Self.drive("held", seconds: 40)
        // Gateway A carries the quiet driver and the busy one; gateway B the held driver, then stands still.
        driver.store(quiet, gateway: "A", watermark: quiet.last!.t)
        driver.store(held, gateway: "B", watermark: held.last!.t - 5)
        for start in stride(from: 0, to: busy.count, by: 10) {
            let batch = Array(busy[start..<min(start + 10, busy.count)])
            driver.store(batch, gateway: "A", watermark: batch.last!.t)
        }
        driver.run(1)
        let trips = driver.events.filter { $0.name == "tripDidEnd" }.map(\.device.user)
        #expect(trips == ["quiet"], "A's watermark passed quiet's stop delay; B's stands still")
        driver.run(20, journalAnswers: true)
        #expect(!driver.events.contains { $0.name == "tripDidEnd" && $0.device.user == "held" }, "held within the hold")
        driver.run(40, journalAnswers: true)
        #expect(
            driver.events.contains { $0.name == "tripDidEnd" && $0.device.user == "held" }, "the clock, after the hold")
        #expect(driver.logs.contains { $0.contains("watermark has stood still too long") })
        #expect(driver.core.fleet.statistics.forcedReleases >= 1)
    }

    /// A gateway's batches are cut into a stream per shard, each with its own hold: when the gateway stands still
    /// the operator is warned once for it, not once a shard; and once again after it has moved and stood still anew.
    @Test func aStalledGatewayIsWarnedOnceWhateverItsShards() {
        var driver = Self.driver(options: .init(fleet: .init(watermarkHold: 30), silentJournalGrace: 3600))
        let first = Self.drive("first", seconds: 40)
        let second = Self.drive("second", seconds: 40)
        driver.store(first, gateway: "B", watermark: first.last!.t - 5, shard: 0)
        driver.store(second, gateway: "B", watermark: second.last!.t - 5, shard: 1)
        driver.run(1)
        driver.run(60, journalAnswers: true)
        func warnings() -> Int { driver.logs.filter { $0.contains("watermark has stood still too long") }.count }
        #expect(
            ["first", "second"].allSatisfy { user in
                driver.events.contains { $0.name == "tripDidEnd" && $0.device.user == user }
            }, "both held devices released by the clock")
        #expect(driver.core.fleet.statistics.forcedReleases >= 2, "a release in each shard's stream")
        #expect(warnings() == 1, "\(driver.logs)")

        // The gateway moves on (both shards' streams), then stands still again: one more warning.
        let later = Self.drive("later", seconds: 40, start: second.last!.t + 600)
        let other = Self.drive("other", seconds: 40, start: second.last!.t + 600)
        driver.store(later, gateway: "B", watermark: later.last!.t - 5, shard: 0)
        driver.store(other, gateway: "B", watermark: other.last!.t - 5, shard: 1)
        driver.run(1)
        driver.run(60, journalAnswers: true)
        #expect(warnings() == 2, "\(driver.logs)")
    }

    // MARK: Storing

    /// Records that give nothing to send wait to be stored (no fsync for them), at most `deferredCommitDelay`;
    /// an event is stored at once with the inputs that gave it.
    @Test func inputsThatGiveNothingToSendWaitATickAndEventsDoNot() {
        var driver = Self.driver()
        driver.store(Array(Self.drive()[0..<5]))
        driver.answer()
        #expect(driver.commits.isEmpty, "five records that moved a device along: nothing to store yet")
        driver.run(0.1, journalAnswers: false)
        #expect(driver.commits.count == 1 && driver.storedInputs.count == 1)
        driver.store(Array(Self.drive()[5...]))
        driver.answer()
        #expect(driver.events.map(\.name) == ["tripDidStart"])
        #expect(driver.commits.last?.events.count == 1 && driver.commits.last?.inputs.count == 1)
    }

    // MARK: Checkpoints

    @Test func aCheckpointIsTakenEveryIntervalAndLetsItsInputsGo() throws {
        var driver = Self.driver(options: .init(checkpointInterval: 2))
        driver.store(Self.drive(seconds: 10))
        driver.run(2.1)
        let order = try #require(driver.checkpoints.last)
        #expect(order.positions[driver.feed] == 1)
        #expect(!order.changed.isEmpty)
        driver.finishCheckpoint()
        #expect(driver.forgotten == order.input)
        #expect(driver.core.checkpointInput == order.input)
        driver.run(0.1)
        #expect(driver.outstanding?.checkpointed == 1, "the journal learns what it may drop with the next request")
    }

    @Test func aCheckpointThatFailedIsWrittenWithTheNext() throws {
        var driver = Self.driver(options: .init(checkpointInterval: 2))
        driver.store(Self.drive(seconds: 10))
        driver.run(2.1)
        let failed = try #require(driver.checkpoints.last)
        driver.finishCheckpoint(failing: true)
        #expect(driver.forgotten == nil)
        #expect(driver.logs.contains { $0.contains("checkpoint not written") })
        driver.run(2.1)
        let next = try #require(driver.checkpoints.last)
        #expect(next.generation == failed.generation + 1)
        #expect(Set(next.changed.map(\.device)).isSuperset(of: failed.changed.map(\.device)))
    }

    // MARK: The stop

    @Test func aStopWaitsForThePlatformThenTakesALastCheckpoint() {
        var driver = Self.driver()
        var crash = Script()
        crash.device = FleetStreams.device("crash")
        crash.activity(.automotive, .high)
        crash.drive(seconds: 60, speed: 15)
        crash.impact(peakG: 45)
        crash.accelerate(from: 5, to: 0, seconds: 2)
        crash.stand(seconds: 30)
        driver.store(crash.records)
        driver.run(0.5)
        #expect(driver.calls.contains { if case .evaluation = $0 { true } else { false } })
        driver.stop()
        #expect(!driver.stopped, "a platform call is in flight")
        driver.run(1, journalAnswers: false)
        #expect(!driver.stopped)
        driver.answerPlatform()
        driver.run(0.1, journalAnswers: false)
        #expect(driver.stopped)
        #expect(driver.events.contains { $0.name == "crashDetected" }, "the answer was stored before the stop")
        #expect(driver.checkpoints.last?.wait == true, "the stop's last checkpoint")
    }

    @Test func aStopDoesNotWaitForThePlatformForEver() {
        var driver = Self.driver()
        driver.command(ControlRequest(command: .startMonitoring, app: Self.app, user: "someone"))
        #expect(driver.calls.count == 1, "the startup guard's settings")
        driver.stop()
        driver.run(9.5, journalAnswers: false)
        #expect(!driver.stopped)
        driver.run(1, journalAnswers: false)
        #expect(driver.stopped)
        #expect(driver.logs.contains { $0.contains("stopping with platform calls unanswered") })
    }

    @Test func theLagCountsFromTheLastTimeEveryJournalWasReadToItsHead() {
        var driver = Self.driver()
        #expect(driver.core.lagSeconds(now: driver.time.monotonic) == nil, "not caught up since the start")
        driver.run(0.3)
        #expect(driver.core.lagSeconds(now: driver.time.monotonic) == 0)
        let caughtUpAt = driver.time.monotonic
        for _ in 0..<300 { driver.store(Self.drive(seconds: 2)) }
        driver.answer(items: 1)
        #expect(driver.core.lagSeconds(now: caughtUpAt + 8) == 8, "behind: seconds since it was last caught up")
    }
}
