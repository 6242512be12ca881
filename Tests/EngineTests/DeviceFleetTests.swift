import Foundation
import RecordCodecs
import RoadSaveModel
import Testing

@testable import DetectionEngine

/// The per-device core of replay and the detection service, driven directly: no sockets, no sleeps.
@Suite struct DeviceFleetTests {
    static let settings = DetectionSettings()
    static let alice = FleetStreams.device("alice")
    static let bob = FleetStreams.device("bob")
    /// Window 0: a record in order is applied at once, which keeps these tests short.
    static let immediate = DeviceFleet.Options(ordering: .init(window: 0))

    static func fix(_ device: DeviceID, at t: Double, seq: UInt64? = nil) -> SensorRecord {
        SensorRecord(
            device: device, seq: seq, t: t,
            payload: .location(LocationFix(latitude: -33.9, longitude: 18.4, speed: 0, horizontalAccuracy: 5)))
    }

    // MARK: Auto-monitor

    @Test func recordsWaitForTheirApplicationsSettingsWhichAreAskedForOnce() throws {
        var fleet = DeviceFleet(options: Self.immediate)
        let t = Script.start
        #expect(fleet.receive(Self.fix(Self.alice, at: t, seq: 1), now: 100) == [.fetchSettings(app: FleetStreams.app)])
        #expect(fleet.receive(Self.fix(Self.alice, at: t + 1, seq: 2), now: 101).isEmpty)
        #expect(fleet.receive(Self.fix(Self.bob, at: t + 1, seq: 1), now: 101).isEmpty, "one fetch per application")
        #expect(fleet.pendingPlatformCalls == [.fetchSettings(app: FleetStreams.app)])
        #expect(fleet.statistics.applied == 0)
        #expect(fleet.deviceState(Self.alice)?.waitingForSettings.count == 2)

        var settings = DetectionSettings()
        settings.stopDelay = 300
        _ = fleet.settingsFetched(app: FleetStreams.app, .fetched(settings), now: 102)
        #expect(fleet.pendingPlatformCalls.isEmpty)
        for device in [Self.alice, Self.bob] {
            let session = try #require(fleet.session(device))
            #expect(session.lifecycle == .monitoring)
            #expect(session.detectionMode == .all && session.autoTripDetection)
            #expect(session.settings.stopDelay == 300)
        }
        #expect(fleet.statistics.applied == 3)
        // A new device of a known application starts at once.
        let carol = FleetStreams.device("carol")
        #expect(fleet.receive(Self.fix(carol, at: t + 2), now: 103).isEmpty)
        #expect(fleet.session(carol)?.lifecycle == .monitoring)
        #expect(fleet.statistics.applied == 4)
    }

    @Test func waitingIsBoundedAndWhatOverflowsIsCounted() {
        var options = Self.immediate
        options.maximumWaitingRecords = 3
        var fleet = DeviceFleet(options: options)
        for i in 0..<5 {
            _ = fleet.receive(Self.fix(Self.alice, at: Script.start + Double(i), seq: UInt64(i)), now: nil)
        }
        #expect(fleet.statistics.notMonitored == 2 && fleet.statistics.waitingOverflow == 2)
        _ = fleet.settingsFetched(app: FleetStreams.app, .fetched(Self.settings), now: nil)
        #expect(fleet.statistics.applied == 3)
        #expect(fleet.statistics.records == 5)
    }

    @Test func unreachableSettingsDropTheWaitingRecordsAndAreAskedAgainAfterTheRetryTime() throws {
        var fleet = DeviceFleet(options: Self.immediate)
        let t = Script.start
        _ = fleet.receive(Self.fix(Self.alice, at: t, seq: 1), now: 1000)
        _ = fleet.receive(Self.fix(Self.alice, at: t + 1, seq: 2), now: 1001)
        let offline = DeviceFleet.settingsUnavailable
        #expect(
            fleet.settingsFetched(app: FleetStreams.app, .unreachable, now: 1002)
                == [.deviceNotMonitored(Self.alice, offline)])
        #expect(offline.code == "offlineLimitExceeded")
        #expect(fleet.statistics.notMonitored == 2)
        #expect(fleet.deviceState(Self.alice)?.waitingForSettings.isEmpty == true)
        // Before the retry time: not asked again, counted, each device reported once.
        #expect(fleet.receive(Self.fix(Self.alice, at: t + 2, seq: 3), now: 1010).isEmpty)
        #expect(
            fleet.receive(Self.fix(Self.bob, at: t + 2, seq: 1), now: 1011) == [.deviceNotMonitored(Self.bob, offline)])
        #expect(fleet.receive(Self.fix(Self.bob, at: t + 3, seq: 2), now: 1012).isEmpty)
        #expect(fleet.statistics.notMonitored == 5)
        #expect(fleet.pendingPlatformCalls.isEmpty)
        // 30 s after the failure on the shell's clock: asked again, and this time it works.
        #expect(
            fleet.receive(Self.fix(Self.alice, at: t + 4, seq: 4), now: 1032) == [.fetchSettings(app: FleetStreams.app)]
        )
        _ = fleet.receive(Self.fix(Self.bob, at: t + 5, seq: 3), now: 1033)
        _ = fleet.settingsFetched(app: FleetStreams.app, .fetched(Self.settings), now: 1034)
        #expect(fleet.session(Self.alice)?.lifecycle == .monitoring)
        #expect(fleet.session(Self.bob)?.lifecycle == .monitoring)
        #expect(fleet.statistics.applied == 2)
        #expect(fleet.deviceState(Self.bob)?.notMonitoredReported == false)
        // A later failed answer leaves known settings in use.
        #expect(fleet.settingsFetched(app: FleetStreams.app, .unreachable, now: 1040).isEmpty)
        #expect(fleet.settings(app: FleetStreams.app) == Self.settings)
    }

    @Test func withoutAClockTheRetryRunsOnRecordTime() {
        var fleet = DeviceFleet(options: Self.immediate)
        let t = Script.start
        _ = fleet.receive(Self.fix(Self.alice, at: t, seq: 1), now: nil)
        _ = fleet.settingsFetched(app: FleetStreams.app, .unreachable, now: nil)
        #expect(fleet.receive(Self.fix(Self.alice, at: t + 29, seq: 2), now: nil).isEmpty)
        #expect(
            fleet.receive(Self.fix(Self.alice, at: t + 30, seq: 3), now: nil) == [.fetchSettings(app: FleetStreams.app)]
        )
    }

    @Test func withoutAutoMonitorRecordsOfUnconfiguredDevicesAreCountedNotApplied() {
        var options = Self.immediate
        options.autoMonitor = false
        var fleet = DeviceFleet(options: options)
        #expect(fleet.receive(Self.fix(Self.alice, at: Script.start), now: 1).isEmpty)
        #expect(fleet.statistics.notMonitored == 1 && fleet.statistics.applied == 0)
        #expect(fleet.session(Self.alice)?.lifecycle == .unconfigured)
        #expect(fleet.pendingPlatformCalls.isEmpty)
    }

    @Test func rejectedRecordsAreReportedAndCounted() {
        var fleet = DeviceFleet(options: Self.immediate)
        _ = fleet.settingsFetched(app: FleetStreams.app, .fetched(Self.settings), now: nil)
        let t = Script.start
        _ = fleet.receive(Self.fix(Self.alice, at: t, seq: 1), now: nil)
        let duplicate = Self.fix(Self.alice, at: t, seq: 1)
        #expect(fleet.receive(duplicate, now: nil) == [.recordRejected(duplicate, .duplicate)])
        _ = fleet.receive(Self.fix(Self.alice, at: t + 20, seq: 2), now: nil)
        let late = Self.fix(Self.alice, at: t + 5, seq: 3)
        #expect(fleet.receive(late, now: nil) == [.recordRejected(late, .late(appliedUpTo: t + 20))])
        #expect(fleet.statistics.duplicates == 1 && fleet.statistics.late == 1 && fleet.statistics.applied == 2)
    }

    // MARK: Control commands

    /// A fleet that knows alice and bob from their records but starts nothing itself.
    static func knownDevices() -> DeviceFleet {
        var options = immediate
        options.autoMonitor = false
        var fleet = DeviceFleet(options: options)
        _ = fleet.receive(fix(bob, at: Script.start, seq: 1), now: 5000)
        _ = fleet.receive(fix(alice, at: Script.start, seq: 1), now: 5000)
        return fleet
    }

    @Test func everyCommandRunsOnTheSession() throws {
        var fleet = Self.knownDevices()
        let now = 5010.0
        func run(_ request: ControlRequest, fetch: SettingsFetch? = nil) -> (ControlOutcome, [FleetAction]) {
            fleet.control(request, now: now, fetch: fetch)
        }
        func state(_ outcome: ControlOutcome) -> ControlDeviceState? {
            if case .ok(_, let states) = outcome { states.first } else { nil }
        }
        let configure = ControlRequest(
            command: .configure, app: FleetStreams.app, user: "alice",
            detectionMode: .crashOnly, shouldAutoDetectTrips: false)
        #expect(state(run(configure).0)?.lifecycle == .configured)
        #expect(fleet.session(Self.alice)?.detectionMode == .crashOnly)

        let start = ControlRequest(command: .startMonitoring, app: FleetStreams.app, user: "alice")
        #expect(start.needsSettings)
        #expect(state(run(start, fetch: .fetched(Self.settings)).0)?.lifecycle == .monitoring)
        #expect(fleet.settings(app: FleetStreams.app) == Self.settings, "the fetch is kept for the application")
        // The command ran at the device's event time: its last record, run on by the clock since it arrived.
        #expect(fleet.session(Self.alice)?.clock == Script.start + 10)

        let mode = ControlRequest(command: .setDetectionMode, app: FleetStreams.app, user: "alice", detectionMode: .all)
        #expect(state(run(mode).0)?.detectionMode == .all)

        let pause = ControlRequest(command: .setAutoTripDetection, app: FleetStreams.app, user: "alice", enabled: false)
        #expect(!pause.needsSettings)
        #expect(state(run(pause).0)?.autoTripDetection == false)
        let resume = ControlRequest(command: .setAutoTripDetection, app: FleetStreams.app, user: "alice", enabled: true)
        #expect(resume.needsSettings)
        #expect(state(run(resume, fetch: .fetched(Self.settings)).0)?.autoTripDetection == true)

        let (testCrash, actions) = run(ControlRequest(command: .raiseTestCrash, app: FleetStreams.app, user: "alice"))
        #expect(state(testCrash) != nil)
        guard case .evaluateCrash(let device, let candidate)? = actions.first else {
            Issue.record("expected an evaluation, got \(actions)")
            return
        }
        #expect(device == Self.alice && candidate.isTest)
        #expect(fleet.pendingPlatformCalls == [.evaluateCrash(device: Self.alice, candidate: candidate)])
        let answered = fleet.crashEvaluated(device: Self.alice, crashID: candidate.crashID, outcome: .verdict(.high))
        guard case .crashDetected(let info)? = answered.events.first?.body else {
            Issue.record("expected a crash event, got \(answered)")
            return
        }
        #expect(info.isTest && info.confidence == .high)
        #expect(fleet.pendingPlatformCalls.isEmpty)

        let stop = ControlRequest(command: .stopMonitoring, app: FleetStreams.app, user: "alice")
        #expect(state(run(stop).0)?.lifecycle == .configured)
    }

    @Test func refusalsCarryTheSessionsErrorAndTheDevice() throws {
        var fleet = Self.knownDevices()
        let start = ControlRequest(command: .startMonitoring, app: FleetStreams.app, user: "alice")
        let (refused, _) = fleet.control(start, now: 5001, fetch: .fetched(Self.settings))
        #expect(
            refused == .failure(code: "notConfigured", message: RoadSaveError.notConfigured.message, device: Self.alice)
        )
        let reply = try JSONParser.parse(refused.reply)
        #expect(
            reply["ok"] == .bool(false) && reply["error"] == .string("notConfigured")
                && reply["user"] == .string("alice"))

        _ = fleet.control(
            ControlRequest(command: .configure, app: FleetStreams.app, user: "alice"), now: 5002, fetch: nil)
        let (offline, _) = fleet.control(start, now: 5003, fetch: .unreachable)
        guard case .failure("offlineLimitExceeded", _, .some(Self.alice)) = offline else {
            Issue.record("expected offlineLimitExceeded, got \(offline)")
            return
        }
        let (notMonitoring, _) = fleet.control(
            ControlRequest(command: .raiseTestCrash, app: FleetStreams.app, user: "alice"),
            now: 5004, fetch: nil)
        #expect(
            notMonitoring
                == .failure(code: "notMonitoring", message: RoadSaveError.notMonitoring.message, device: Self.alice))
    }

    @Test func withoutAUserEveryKnownDeviceOfTheApplicationIsAddressedInOrder() throws {
        var fleet = Self.knownDevices()
        let configure = ControlRequest(command: .configure, app: FleetStreams.app)
        let (outcome, _) = fleet.control(configure, now: 5001, fetch: nil)
        guard case .ok(let devices, let states) = outcome else {
            Issue.record("expected ok, got \(outcome)")
            return
        }
        #expect(devices == [Self.alice, Self.bob], "sorted, whatever order they were met in")
        #expect(states.map(\.lifecycle) == [.configured, .configured])
        let reply = try JSONParser.parse(outcome.reply)
        #expect(reply["ok"] == .bool(true) && reply["devices"] == .number(2))

        // The first refusal stops the command: bob is left as he was.
        var partly = Self.knownDevices()
        _ = partly.control(
            ControlRequest(command: .configure, app: FleetStreams.app, user: "alice"), now: 5001, fetch: nil)
        let stop = ControlRequest(command: .stopMonitoring, app: FleetStreams.app)
        if case .failure(let code, _, let device) = partly.control(stop, now: 5002, fetch: nil).outcome {
            #expect(code == "notConfigured" && device == Self.bob)
        } else {
            Issue.record("expected bob to refuse")
        }

        var empty = Self.knownDevices()
        let (none, _) = empty.control(ControlRequest(command: .configure, app: "app-unknown"), now: 5001, fetch: nil)
        #expect(none == .failure(code: "noDevices", message: "no device of that application is known yet", device: nil))
        #expect(empty.deviceCount == 2)
    }

    @Test func aCommandForANewUserCreatesTheDeviceAtTheClock() {
        var fleet = DeviceFleet(options: Self.immediate)
        let configure = ControlRequest(command: .configure, app: FleetStreams.app, user: "dave")
        _ = fleet.control(configure, now: 7000, fetch: nil)
        let dave = FleetStreams.device("dave")
        #expect(fleet.session(dave)?.lifecycle == .configured)
        #expect(fleet.session(dave)?.clock == 7000)
        #expect(fleet.deviceState(dave)?.lastEventTime == 7000)
        #expect(fleet.statistics.devices == 1)
    }

    // MARK: The clock

    @Test func aQuietDevicesReorderBufferIsReleasedOnTheClock() {
        var fleet = DeviceFleet() // the default 10 s window
        _ = fleet.settingsFetched(app: FleetStreams.app, .fetched(Self.settings), now: 0)
        _ = fleet.receive(Self.fix(Self.alice, at: Script.start, seq: 1), now: 500)
        _ = fleet.receive(Self.fix(Self.alice, at: Script.start + 1, seq: 2), now: 501)
        #expect(fleet.statistics.applied == 0, "held for the reorder window")
        _ = fleet.tick(now: 501.9)
        #expect(fleet.statistics.applied == 0)
        _ = fleet.tick(now: 502)
        #expect(fleet.statistics.applied == 2)
        #expect(fleet.deviceState(Self.alice)?.ordering.bufferedCount == 0)
    }

    /// The shell's clock runs this far ahead of the device's in the clock tests.
    static let clockOffset = 100.0

    /// A fleet in which alice drove two minutes and then fell silent (records arrived `clockOffset` after their
    /// time), the events it gave, and her last movement.
    static func aliceDroveAndFellSilent() throws -> (fleet: DeviceFleet, events: [RoadSaveEvent], lastMovement: Double)
    {
        var script = Script()
        script.device = Self.alice
        script.activity(.automotive, .high)
        script.drive(seconds: 120, speed: 13)
        var fleet = DeviceFleet()
        _ = fleet.settingsFetched(app: FleetStreams.app, .fetched(Self.settings), now: 0)
        var events: [RoadSaveEvent] = []
        for record in script.records { events += fleet.receive(record, now: record.t + clockOffset).events }
        return (fleet, events, try #require(script.lastMovement))
    }

    /// Issue 29: silence is not a stop. The clock does not end a silent device's trip at the stop delay (its
    /// records may be on their way: a phone offline keeps recording); after `tripOfflineGrace` of silence it does.
    @Test func aSilentDevicesTripEndsWhenTheClockRunsItsEventTimeToTheOfflineGrace() throws {
        var (fleet, events, lastMovement) = try Self.aliceDroveAndFellSilent()
        let clockOffset = Self.clockOffset
        let grace = Self.settings.tripOfflineGrace
        #expect(events.map(\.name) == ["tripDidStart"])
        // Nothing arrives any more. Time goes on only on the shell's clock.
        var now = lastMovement + clockOffset
        var ended: [(now: Double, event: RoadSaveEvent)] = []
        while now < lastMovement + clockOffset + grace + 60 {
            now += 1
            ended += fleet.tick(now: now).events.map { (now, $0) }
        }
        let end = try #require(ended.first)
        #expect(ended.map(\.event.name) == ["tripDidEnd", "tripBehaviour"], "the end, then how the trip was driven")
        guard case .tripDidEnd(let info) = end.event.body else {
            Issue.record("expected tripDidEnd")
            return
        }
        #expect(info.endReason == .deviceSilent && info.endDate == lastMovement)
        #expect(end.now == lastMovement + clockOffset + grace, "at the offline grace on the clock, not the stop delay")
    }

    /// A restart of the shell is not the device's silence: after `resumeClock` its quiet time counts from the
    /// restart for its offline grace, and the device is written at the next checkpoint.
    @Test func theTimeTheShellWasDownIsNotTheDevicesSilence() throws {
        var (fleet, _, lastMovement) = try Self.aliceDroveAndFellSilent()
        let clockOffset = Self.clockOffset
        _ = fleet.tick(now: lastMovement + clockOffset + 2) // the reorder buffer is released while the shell runs
        _ = fleet.takeChangedDevices()
        // Down for twice the offline grace, then live again.
        let grace = Self.settings.tripOfflineGrace
        let restart = lastMovement + clockOffset + 2 * grace
        fleet.resumeClock(now: restart)
        let written = fleet.hasChangedDevices
        #expect(written, "the new quiet time is part of the device's state")
        #expect(fleet.tick(now: restart).events.isEmpty, "ended at the restart, as if silent all the while")
        var now = restart
        var ended: [Double] = []
        while now < restart + grace + 60 {
            now += 1
            if fleet.tick(now: now).events.contains(where: { $0.name == "tripDidEnd" }) { ended.append(now) }
        }
        #expect(ended == [restart + grace], "a silent device still ends its trip, counted from the restart")
        // A clock behind the last arrival (a restart reading its own time wrong) moves nothing back.
        var behind = DeviceFleet()
        _ = behind.settingsFetched(app: FleetStreams.app, .fetched(Self.settings), now: 0)
        _ = behind.receive(Self.fix(Self.alice, at: Script.start, seq: 1), now: 500)
        _ = behind.takeChangedDevices()
        behind.resumeClock(now: 400)
        var unchanged = !behind.hasChangedDevices
        #expect(behind.deviceState(Self.alice)?.lastArrival == 500 && unchanged)
        // A reorder buffer is released a quiet time after the resume, not at it.
        var buffered = DeviceFleet()
        _ = buffered.settingsFetched(app: FleetStreams.app, .fetched(Self.settings), now: 0)
        _ = buffered.receive(Self.fix(Self.alice, at: Script.start, seq: 1), now: 500)
        buffered.resumeClock(now: 600)
        _ = buffered.tick(now: 600.5)
        #expect(buffered.statistics.applied == 0)
        _ = buffered.tick(now: 601)
        #expect(buffered.statistics.applied == 1)
        // Records waiting for their application's settings count too: the trip they start must not end at once.
        var waiting = DeviceFleet()
        _ = waiting.receive(Self.fix(Self.alice, at: Script.start, seq: 1), now: 500)
        #expect(waiting.deviceState(Self.alice)?.waitingForSettings.count == 1)
        waiting.resumeClock(now: 700)
        #expect(waiting.deviceState(Self.alice)?.lastArrival == 700)
        // A device with nothing in flight is not touched (nor written again).
        _ = behind.tick(now: 502)
        #expect(behind.deviceState(Self.alice)?.ordering.bufferedCount == 0)
        _ = behind.takeChangedDevices()
        behind.resumeClock(now: 900)
        unchanged = !behind.hasChangedDevices
        #expect(behind.deviceState(Self.alice)?.lastArrival == 500 && unchanged)
    }

    /// Alice and bob drove and fell silent, bob a minute after alice; records arrived `clockOffset` after their time.
    static func aliceAndBobFellSilent() throws -> (fleet: DeviceFleet, stopAlice: Double, stopBob: Double) {
        var fleet = DeviceFleet()
        _ = fleet.settingsFetched(app: FleetStreams.app, .fetched(Self.settings), now: 0)
        var stops: [Double] = []
        var lastArrival = 0.0
        for (device, seconds) in [(Self.alice, 120), (Self.bob, 180)] {
            var script = Script()
            script.device = device
            script.activity(.automotive, .high)
            script.drive(seconds: seconds, speed: 13)
            for record in script.records { _ = fleet.receive(record, now: record.t + clockOffset) }
            lastArrival = max(lastArrival, script.records.last!.t + clockOffset)
            // Silent from their last movement on: the clock ends their trips after the offline grace.
            stops.append(try #require(script.lastMovement) + clockOffset + Self.settings.tripOfflineGrace)
        }
        _ = fleet.tick(now: lastArrival + 2) // reorder buffers released
        #expect(lastArrival + 2 < stops[0])
        return (fleet, stops[0], stops[1])
    }

    @Test func devicesDueAreTickedAloneAsAFullTickWouldTickThem() throws {
        var (fleet, stopAlice, stopBob) = try Self.aliceAndBobFellSilent()
        #expect(fleet.dueDevices(now: stopAlice - 1, limit: 10).isEmpty)
        #expect(fleet.dueDevices(now: stopAlice, limit: 10) == [Self.alice])
        #expect(fleet.dueDevices(now: stopBob, limit: 10) == [Self.alice, Self.bob], "in the order met")
        #expect(fleet.dueDevices(now: stopBob, limit: 1) == [Self.alice])
        var whole = fleet
        let all = whole.tick(now: stopBob)
        #expect(all.events.map(\.name) == ["tripDidEnd", "tripBehaviour", "tripDidEnd", "tripBehaviour"])
        // Bob alone (his records all read, alice's not yet): his trip ends, alice's goes on.
        let bobAlone = fleet.tick(now: stopBob, only: [Self.bob, DeviceID(app: FleetStreams.app, user: "unknown")])
        #expect(bobAlone.events.map(\.device) == [Self.bob, Self.bob] && fleet.lastTickChangedState)
        #expect(fleet.dueDevices(now: stopBob, limit: 10) == [Self.alice])
        #expect(fleet.tick(now: stopBob, only: [Self.bob]).isEmpty, "nothing left due for bob")
        // Then the full tick: alice's end, and together exactly the events of the full tick.
        let rest = fleet.tick(now: stopBob)
        #expect(rest.events.map(\.device) == [Self.alice, Self.alice])
        #expect(Set((bobAlone + rest).events.map { $0.json() }) == Set(all.events.map { $0.json() }))
        #expect(fleet.dueDevices(now: stopBob + 1000, limit: 10).isEmpty)
    }

    // MARK: Determinism and checkpoints

    @Test func theSameInputsGiveTheSameActionsAndState() {
        let inputs = FleetStreams.mixed()
        var first = FleetDriver()
        first.answerDelay = 3
        first.run(inputs)
        first.finish()
        var second = FleetDriver()
        second.answerDelay = 3
        second.run(inputs)
        second.finish()
        #expect(first.actions == second.actions)
        #expect(first.replies == second.replies)
        #expect(FleetDriver.snapshot(first.fleet) == FleetDriver.snapshot(second.fleet))
        // The story happened: both trips and the crash (and its follow-up), the silent driver's trip ended on the clock, the test crash.
        let names = Dictionary(grouping: first.events, by: \.device.user).mapValues { $0.map(\.name) }
        #expect(names["crash"] == ["tripDidStart", "crashDetected", "crashFollowUp", "tripDidEnd", "tripBehaviour"])
        // A trip with a crash in it is not scored: its last seconds are the crash.
        let crashTripBehaviour = first.events.compactMap { event -> TripBehaviour? in
            guard event.device.user == "crash", case .tripBehaviour(let behaviour) = event.body else { return nil }
            return behaviour
        }
        #expect(crashTripBehaviour.map(\.unscored) == [.crash])
        #expect(names["commuter"]?.filter { $0 == "crashDetected" }.count == 1)
        #expect(names["commuter"]?.filter { $0 == "tripDidEnd" }.count == 1)
        #expect(names["silent"] == ["tripDidStart", "tripDidEnd", "tripBehaviour"])
        #expect(names["other"] == ["tripDidStart", "tripDidEnd", "tripBehaviour"])
        #expect(first.fleet.statistics.duplicates == 1)
    }

    @Test(arguments: [0.1, 0.25, 0.4, 0.5, 0.55, 0.7, 0.9])
    func aCheckpointAnywhereContinuesExactlyAsTheUninterruptedRun(at fraction: Double) throws {
        let inputs = FleetStreams.mixed()
        var whole = FleetDriver()
        whole.answerDelay = 25
        whole.run(inputs)
        whole.finish()

        let cut = Int(Double(inputs.count) * fraction)
        var restored = FleetDriver()
        restored.answerDelay = 25
        restored.run(Array(inputs[..<cut]))
        // What a restored shell would ask the platform again is exactly what was in flight.
        let pendingBefore = restored.fleet.pendingPlatformCalls
        #expect(Set(pendingBefore.map { "\($0)" }) == Set(restored.callsInFlight.map { "\($0)" }))
        restored.checkpointAndRestore()
        #expect(restored.fleet.pendingPlatformCalls == pendingBefore)
        restored.run(Array(inputs[cut...]))
        restored.finish()

        #expect(restored.actions.count == whole.actions.count)
        #expect(restored.actions == whole.actions, "cut at input \(cut) of \(inputs.count)")
        #expect(restored.replies == whole.replies)
        #expect(FleetDriver.snapshot(restored.fleet) == FleetDriver.snapshot(whole.fleet))
    }

    @Test func checkpointsWithCrashEvaluationsInFlightContinueExactly() throws {
        let inputs = FleetStreams.mixed()
        var whole = FleetDriver()
        whole.answerDelay = 40
        whole.run(inputs)
        whole.finish()
        // Every input at which an evaluation is outstanding is a cut point; take several of them.
        var probe = FleetDriver()
        probe.answerDelay = 40
        var cuts: [Int] = []
        for (index, input) in inputs.enumerated() {
            probe.apply(input)
            if probe.fleet.pendingPlatformCalls.contains(where: { if case .evaluateCrash = $0 { true } else { false } })
            {
                cuts.append(index)
            }
        }
        #expect(cuts.count > 20)
        for cut in stride(from: 0, to: cuts.count, by: max(1, cuts.count / 4)).map({ cuts[$0] }) {
            var restored = FleetDriver()
            restored.answerDelay = 40
            restored.run(inputs, checkpointAfter: [cut])
            restored.finish()
            #expect(restored.actions == whole.actions, "cut after input \(cut)")
        }
    }

    @Test func aCheckpointAfterEveryInputChangesNothing() throws {
        let inputs = FleetStreams.mixed()
        var whole = FleetDriver()
        whole.answerDelay = 7
        whole.run(inputs)
        whole.finish()
        var restored = FleetDriver()
        restored.answerDelay = 7
        // Every 50th input, and during the settings wait at the start.
        restored.run(inputs, checkpointAfter: Set([0, 1, 2] + stride(from: 0, to: inputs.count, by: 50)))
        restored.finish()
        #expect(restored.actions == whole.actions)
        let sizes = restored.checkpoints
        let largest = try #require(sizes.max { $0.bytes < $1.bytes })
        let perDevice = sizes.reduce(0.0) { $0 + $1.seconds } / Double(sizes.reduce(0) { $0 + max(1, $1.devices) })
        print(
            "fleet checkpoints: \(sizes.count), largest \(largest.bytes) bytes for \(largest.devices) devices; "
                + "about \(Int(perDevice * 1e6)) µs a device to encode (debug build)")
    }

    @Test func changedDevicesAreThoseTouchedSinceTheLastCall() {
        var fleet = DeviceFleet(options: Self.immediate)
        _ = fleet.settingsFetched(app: FleetStreams.app, .fetched(Self.settings), now: nil)
        _ = fleet.receive(Self.fix(Self.bob, at: Script.start, seq: 1), now: nil)
        _ = fleet.receive(Self.fix(Self.alice, at: Script.start, seq: 1), now: nil)
        #expect(fleet.takeChangedDevices() == [Self.bob, Self.alice], "in the order met")
        #expect(fleet.takeChangedDevices().isEmpty)
        _ = fleet.receive(Self.fix(Self.alice, at: Script.start + 1, seq: 2), now: nil)
        #expect(fleet.takeChangedDevices() == [Self.alice])
        #expect(fleet.sharedState.deviceOrder == [Self.bob, Self.alice])
    }

    @Test func recordOrderingSurvivesItsCheckpointWithItsDuplicateMemory() throws {
        var ordering = RecordOrdering(options: .init(window: 5, sequenceMemory: 100))
        // 121 arrives before 120 (within the window).
        for seq in (0..<150).map(UInt64.init).map({ $0 == 120 ? 121 : $0 == 121 ? 120 : $0 }) {
            #expect(ordering.insert(Self.fix(Self.alice, at: Script.start + Double(seq), seq: seq)).rejected.isEmpty)
        }
        let data = try JSONEncoder().encode(ordering)
        var copy = try JSONDecoder().decode(RecordOrdering.self, from: data)
        #expect(copy.bufferedCount == ordering.bufferedCount)
        #expect(copy.released == ordering.released && copy.newest == ordering.newest)
        // Remembered: still a duplicate. Forgotten (beyond the memory): taken as new (and late).
        let again = Self.fix(Self.alice, at: Script.start + 149, seq: 149)
        #expect(copy.insert(again).rejected.map(\.1) == [.duplicate])
        let old = Self.fix(Self.alice, at: Script.start + 10, seq: 10)
        #expect(copy.insert(old).rejected.map(\.1) == [.late(appliedUpTo: ordering.released!)])
        // The runs are compact: the 100 values up to the highest, ascending.
        #expect(String(decoding: data, as: UTF8.self).contains("\"sequenceRuns\":[50,100]"))
    }

    @Test func aCheckpointOfTheOldFormatWithSeqsInArrivalOrderStillLoads() throws {
        var ordering = RecordOrdering(options: .init(window: 5, sequenceMemory: 100))
        for seq in (0..<150).map(UInt64.init) {
            _ = ordering.insert(Self.fix(Self.alice, at: Script.start + Double(seq), seq: seq))
        }
        // As the Set-based RecordOrdering wrote it: the last 100 values in arrival order, 121 before 120.
        let current = String(decoding: try JSONEncoder().encode(ordering), as: UTF8.self)
        let old = current.replacingOccurrences(
            of: "\"sequenceRuns\":[50,100]",
            with: "\"sequenceRuns\":[50,70,121,1,120,1,122,28]")
        #expect(old != current)
        var copy = try JSONDecoder().decode(RecordOrdering.self, from: Data(old.utf8))
        #expect(copy.bufferedCount == ordering.bufferedCount)
        for seq in [50, 120, 121, 149] as [UInt64] {
            #expect(
                copy.insert(Self.fix(Self.alice, at: Script.start + 150, seq: seq)).rejected.map(\.1) == [.duplicate])
        }
        #expect(String(decoding: try JSONEncoder().encode(copy), as: UTF8.self).contains("\"sequenceRuns\":[50,100]"))
    }
}
