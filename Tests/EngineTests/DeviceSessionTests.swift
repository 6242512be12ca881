import RecordCodecs
import RoadSaveModel
import Testing

@testable import DetectionEngine

/// The brief's API rules: configure first, the startup guard, pausing trips, detection modes.
@Suite struct DeviceSessionTests {
    let configuration = RoadSaveConfiguration(applicationID: "app-1", clientUserID: "user-1")

    @Test func everyCallBeforeConfigureFailsWithNotConfigured() {
        var session = DeviceSession(device: Script.device)
        let t = Script.start
        #expect(throws: RoadSaveError.notConfigured) {
            try session.startMonitoring(at: t, fetch: .fetched(DetectionSettings()))
        }
        #expect(throws: RoadSaveError.notConfigured) { try session.stopMonitoring(at: t) }
        #expect(throws: RoadSaveError.notConfigured) { try session.setAutoTripDetection(false, at: t) }
        #expect(throws: RoadSaveError.notConfigured) { try session.setDetectionMode(.crashOnly, at: t) }
        #expect(throws: RoadSaveError.notConfigured) { try session.raiseTestCrash(at: t) }
        // Records for an unconfigured device are not applied.
        let (script, _) = CrashScenarioTests.impactWhileDriving()
        #expect(script.records.flatMap { session.handle($0) }.isEmpty)
    }

    @Test func configureValidatesTheConfiguration() {
        var session = DeviceSession(device: DeviceID(app: "", user: "user-1"))
        #expect(throws: RoadSaveError.invalidConfiguration(field: "applicationID", reason: "must not be empty")) {
            try session.configure(RoadSaveConfiguration(applicationID: "", clientUserID: "user-1"), at: 0)
        }
        var other = DeviceSession(device: Script.device)
        #expect(throws: RoadSaveError.self) {
            try other.configure(RoadSaveConfiguration(applicationID: "app-1", clientUserID: "someone-else"), at: 0)
        }
    }

    @Test func raiseTestCrashNeedsMonitoringAndCrashDetection() throws {
        var session = DeviceSession(device: Script.device)
        _ = try session.configure(configuration, at: 0)
        #expect(throws: RoadSaveError.notMonitoring) { try session.raiseTestCrash(at: 1) }
        _ = try session.startMonitoring(at: 1, fetch: .fetched(DetectionSettings()))
        _ = try session.setDetectionMode(.tripOnly, at: 2)
        #expect(throws: RoadSaveError.crashDetectionDisabled) { try session.raiseTestCrash(at: 3) }
        _ = try session.setDetectionMode(.crashOnly, at: 4)
        #expect(try session.raiseTestCrash(at: 5).count == 1)
    }

    @Test func startMonitoringEnforcesTheOfflineGraceLimit() throws {
        let grace = DetectionSettings().offlineGrace
        var session = DeviceSession(device: Script.device)
        _ = try session.configure(configuration, at: 0)
        // Never fetched, platform unreachable.
        #expect(throws: RoadSaveError.offlineLimitExceeded(lastSuccessfulFetch: nil, graceSeconds: grace)) {
            try session.startMonitoring(at: 100, fetch: .unreachable)
        }
        _ = try session.startMonitoring(at: 100, fetch: .fetched(DetectionSettings()))
        _ = try session.stopMonitoring(at: 200)
        // Within the grace limit cached settings do.
        _ = try session.startMonitoring(at: 100 + grace, fetch: .unreachable)
        _ = try session.stopMonitoring(at: 100 + grace + 1)
        #expect(throws: RoadSaveError.offlineLimitExceeded(lastSuccessfulFetch: 100, graceSeconds: grace)) {
            try session.startMonitoring(at: 100 + grace + 2, fetch: .unreachable)
        }
    }

    @Test func settingsFromThePlatformAreApplied() throws {
        var settings = DetectionSettings()
        settings.stopDelay = 60
        settings.tripOfflineGrace = 90
        var s = Script()
        s.activity(.automotive, .high)
        s.drive(seconds: 200, speed: 14)
        let last = s.t
        var parked = s
        parked.stand(seconds: 100)
        var harness = Harness(settings: settings)
        harness.run(parked.records)
        #expect(harness.tripEndDecisionTimes == [last + 60])
        // Silent after the drive: the platform's offline grace.
        var silent = Harness(settings: settings)
        silent.run(s.records)
        #expect(silent.tripEndDecisionTimes == [last + 90])

        var disabled = DetectionSettings()
        disabled.tripDetectionEnabled = false
        var off = Harness(settings: disabled)
        off.run(s.records)
        #expect(off.events.isEmpty)
    }

    @Test func pausingTripsEndsTheTripInProgressAndKeepsCrashDetection() throws {
        var s = Script()
        s.activity(.automotive, .high)
        s.drive(seconds: 200, speed: 14)
        var harness = Harness()
        harness.feed(s.records)
        #expect(harness.tripStarts.count == 1)
        let lastMovement = s.t
        harness.record(try harness.session.setAutoTripDetection(false, at: s.t + 5), at: s.t + 5)
        let ended = try #require(harness.tripEnds.first)
        #expect(ended.endReason == .detectionPaused)
        #expect(ended.endDate == lastMovement)

        // Driving on while paused: no trip; a crash is still detected.
        var more = Script()
        more.t = s.t + 5
        more.latitude = s.latitude
        more.longitude = s.longitude
        more.activity(.automotive, .high)
        more.drive(seconds: 300, speed: 14)
        more.impact(peakG: 45)
        more.accelerate(from: 5, to: 0, seconds: 2)
        more.stand(seconds: 60)
        harness.feed(more.records)
        harness.finish()
        #expect(harness.tripStarts.count == 1)
        #expect(harness.crashes.count == 1)
    }

    @Test func resumingTripsRunsTheStartupGuardAgain() throws {
        var harness = Harness()
        harness.record(try harness.session.setAutoTripDetection(false, at: Script.start), at: Script.start)
        // Unreachable within the grace limit: fine. Beyond it: offlineLimitExceeded, and trips stay paused.
        _ = try harness.session.setAutoTripDetection(true, at: Script.start + 10, fetch: .unreachable)
        _ = try harness.session.setAutoTripDetection(false, at: Script.start + 20)
        let late = Script.start + DetectionSettings().offlineGrace + 100
        #expect(throws: RoadSaveError.self) {
            try harness.session.setAutoTripDetection(true, at: late, fetch: .unreachable)
        }
        #expect(!harness.session.autoTripDetection)

        var s = Script()
        s.t = late + 10
        s.activity(.automotive, .high)
        s.drive(seconds: 200, speed: 14)
        harness.feed(s.records)
        #expect(harness.tripStarts.isEmpty)

        // With settings fetched again, trips start.
        harness.record(
            try harness.session.setAutoTripDetection(true, at: s.t + 1, fetch: .fetched(DetectionSettings())),
            at: s.t + 1)
        var more = Script()
        more.t = s.t + 2
        more.activity(.automotive, .high)
        more.drive(seconds: 200, speed: 14)
        harness.feed(more.records)
        #expect(harness.tripStarts.count == 1)
    }

    @Test func shouldAutoDetectTripsFalseStartsWithTripsPaused() throws {
        var s = Script()
        s.activity(.automotive, .high)
        s.drive(seconds: 300, speed: 14)
        var session = DeviceSession(device: Script.device)
        var configuration = self.configuration
        configuration.shouldAutoDetectTrips = false
        _ = try session.configure(configuration, at: Script.start)
        _ = try session.startMonitoring(at: Script.start, fetch: .fetched(DetectionSettings()))
        #expect(s.records.flatMap { session.handle($0) }.isEmpty)
    }

    @Test(arguments: CrashDetectionMode.allCases)
    func theDetectionModeChoosesTheEngines(mode: CrashDetectionMode) {
        let (crash, _) = CrashScenarioTests.impactWhileDriving()
        var harness = Harness(mode: mode)
        harness.run(crash.records)
        #expect(harness.tripStarts.isEmpty == !mode.detectsTrips)
        #expect(harness.crashes.isEmpty == !mode.detectsCrashes)
    }

    @Test func switchingToCrashOnlyEndsTheTripInProgress() throws {
        var s = Script()
        s.activity(.automotive, .high)
        s.drive(seconds: 200, speed: 14)
        var harness = Harness()
        harness.feed(s.records)
        harness.record(try harness.session.setDetectionMode(.crashOnly, at: s.t + 1), at: s.t + 1)
        #expect(harness.tripEnds.first?.endReason == .detectionModeChanged)
        var more = Script()
        more.t = s.t + 2
        more.activity(.automotive, .high)
        more.drive(seconds: 300, speed: 14)
        harness.run(more.records)
        #expect(harness.tripStarts.count == 1)
        // Switching back: trips again.
        harness.record(try harness.session.setDetectionMode(.all, at: more.t + 1), at: more.t + 1)
        var again = Script()
        again.t = more.t + 2
        again.activity(.automotive, .high)
        again.drive(seconds: 300, speed: 14)
        harness.run(again.records)
        #expect(harness.tripStarts.count == 2)
    }

    @Test func stopMonitoringEndsTheTripAndDecidesPendingImpacts() throws {
        var s = Script()
        s.activity(.automotive, .high)
        s.drive(seconds: 200, speed: 14)
        s.impact(peakG: 45)
        var harness = Harness()
        harness.feed(s.records)
        harness.record(try harness.session.stopMonitoring(at: s.t + 2), at: s.t + 2)
        #expect(harness.tripEnds.first?.endReason == .monitoringStopped)
        #expect(harness.candidates.count == 1)
        #expect(harness.crashes.count == 1)
        // Records after stopping are not applied.
        var more = Script()
        more.t = s.t + 10
        more.activity(.automotive, .high)
        more.drive(seconds: 300, speed: 14)
        harness.run(more.records)
        #expect(harness.tripStarts.count == 1)
    }

    @Test func replayIsDeterministic() {
        let (script, _, _) = TripScenarioTests.commute()
        var a = Harness()
        a.run(script.records)
        var b = Harness()
        b.run(script.records)
        #expect(a.events == b.events)
        #expect(a.events.map { $0.json() } == b.events.map { $0.json() })
    }
}
