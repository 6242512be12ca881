import RoadSaveModel
import Testing

@testable import DetectionEngine

/// One scenario per crash rule of the brief ("Crash Detection") and of the issue.
@Suite struct CrashScenarioTests {
    /// Driving at `speed`, an impact, then what the vehicle does for 60 s: stops (a crash) or keeps going.
    static func impactWhileDriving(
        speed: Double = 15, peakG: Double = 45, durationMs: Double = 90, freeFall: Double = 0,
        speedAfter: Double = 0, extraImpacts: [(after: Double, peakG: Double)] = []
    )
        -> (Script, impactTime: Double)
    {
        var s = Script()
        s.activity(.automotive, .high)
        s.drive(seconds: 120, speed: speed)
        s.t += 0.4
        let impactTime = s.t
        s.impact(peakG: peakG, durationMs: durationMs, freeFall: freeFall)
        for extra in extraImpacts {
            s.add(.impact(ImpactObservation(peakG: extra.peakG, durationMs: 30)), at: impactTime + extra.after)
        }
        s.t += 0.6
        if speedAfter > 0 {
            s.drive(seconds: 60, speed: speedAfter)
        } else {
            s.accelerate(from: speed / 3, to: 0, seconds: 2)
            s.activity(.stationary, .high)
            s.stand(seconds: 60)
        }
        s.records.sort { $0.t < $1.t }
        return (s, impactTime)
    }

    @Test(arguments: [CrashVerdict.high, .medium, .low])
    func theVerdictSetsTheConfidence(verdict: CrashVerdict) throws {
        let (script, impactTime) = Self.impactWhileDriving()
        var harness = Harness()
        harness.verdict = { _ in .verdict(verdict) }
        harness.run(script.records)
        let crash = try #require(harness.crashes.count == 1 ? harness.crashes.first : nil)
        #expect(crash.confidence.rawValue == verdict.rawValue)
        #expect(crash.detectedAt == impactTime)
        #expect(!crash.isTest)
        // The position is the last good fix before the impact: within one second's travel of the script's place.
        let candidate = try #require(harness.candidates.first)
        #expect(abs(candidate.speedBefore! - 15) < 0.01)
        #expect(candidate.speedAfter! < 0.5)
        #expect(candidate.peakG == 45)
        #expect(crash.latitude != nil && crash.latitude == candidate.latitude && crash.longitude == candidate.longitude)
    }

    @Test func aVerdictOfNoneSuppressesTheEvent() {
        let (script, _) = Self.impactWhileDriving()
        var harness = Harness()
        harness.verdict = { _ in .verdict(.none) }
        harness.run(script.records)
        #expect(harness.candidates.count == 1)
        #expect(harness.crashes.isEmpty)
        #expect(harness.dismissals == [.platformVerdictNone])
    }

    @Test func anUnreachablePlatformGivesUnknown() throws {
        let (script, _) = Self.impactWhileDriving()
        var harness = Harness()
        harness.verdict = { _ in .unreachable }
        harness.run(script.records)
        #expect(try #require(harness.crashes.first).confidence == .unknown)
        #expect(harness.crashes.count == 1)
    }

    @Test func crashDetectedIsNeverEmittedBeforeTheEvaluationEnds() throws {
        let (script, _) = Self.impactWhileDriving()
        var session = DeviceSession(device: Script.device)
        _ = try session.configure(
            RoadSaveConfiguration(applicationID: "app-1", clientUserID: "user-1"), at: Script.start)
        _ = try session.startMonitoring(at: Script.start, fetch: .fetched(DetectionSettings()))
        var candidate: CrashCandidate?
        for record in script.records {
            for action in session.handle(record) {
                if case .evaluateCrash(let c) = action { candidate = c }
                if case .emit(let event) = action, case .crashDetected = event.body {
                    Issue.record("crashDetected emitted before the platform answered")
                }
            }
        }
        _ = session.advance(to: script.t + 3600)
        let pending = try #require(candidate)
        let actions = session.crashEvaluated(crashID: pending.crashID, outcome: .verdict(.medium))
        // The crash, then its follow-up (its watch ended long before this late answer), never the other way round.
        #expect(actions.events.map(\.name) == ["crashDetected", "crashFollowUp"])
        // A second answer for the same crash (a retried request) raises nothing more.
        #expect(session.crashEvaluated(crashID: pending.crashID, outcome: .verdict(.high)).isEmpty)
    }

    @Test func aDroppedPhoneIsNotACrash() {
        // Walking, then the phone falls for 0.7 s and hits the floor at 20 g.
        var s = Script()
        s.activity(.walking, .high)
        s.walk(seconds: 60)
        s.t += 0.5
        s.impact(peakG: 20, durationMs: 12, freeFall: 0.7)
        s.walk(seconds: 60)
        var harness = Harness()
        harness.run(s.records)
        #expect(harness.candidates.isEmpty)
        #expect(harness.crashes.isEmpty)
        #expect(harness.dismissals == [.freeFallBeforeImpact])
    }

    @Test func aPhoneFallingOffTheDashboardWhileDrivingIsNotACrash() {
        let (script, _) = Self.impactWhileDriving(peakG: 18, durationMs: 10, freeFall: 0.35, speedAfter: 15)
        var harness = Harness()
        harness.run(script.records)
        #expect(harness.candidates.isEmpty)
        #expect(harness.dismissals == [.freeFallBeforeImpact])
    }

    @Test func aPotholeJoltAtSpeedIsNotACrash() {
        let (script, _) = Self.impactWhileDriving(speed: 16, peakG: 5.5, durationMs: 40, speedAfter: 16)
        var harness = Harness()
        harness.run(script.records)
        #expect(harness.candidates.isEmpty)
        #expect(harness.dismissals == [.speedMaintainedAfterImpact])
    }

    @Test func aSmallBumpIsAWeakImpact() {
        let (script, _) = Self.impactWhileDriving(peakG: 2.8, durationMs: 20)
        var harness = Harness()
        harness.run(script.records)
        #expect(harness.candidates.isEmpty)
        #expect(harness.dismissals == [.weakImpact])
    }

    @Test func hardBrakingWithoutImpactIsNotACrash() {
        var s = Script()
        s.activity(.automotive, .high)
        s.drive(seconds: 120, speed: 20)
        s.accelerate(from: 20, to: 0, seconds: 3) // about 0.7 g: below the gateway's 2 g trigger, so no impact record
        s.stand(seconds: 60)
        var harness = Harness()
        harness.run(s.records)
        #expect(harness.candidates.isEmpty)
        #expect(harness.crashes.isEmpty)
        #expect(harness.dismissals.isEmpty)
    }

    @Test func aKnockWhileWalkingIsNotInAVehicle() {
        var s = Script()
        s.activity(.walking, .high)
        s.walk(seconds: 60)
        s.impact(peakG: 12, durationMs: 30)
        s.walk(seconds: 30)
        var harness = Harness()
        harness.run(s.records)
        #expect(harness.dismissals == [.notInVehicle])
    }

    @Test func anImpactAtWalkingSpeedIsTooSlow() {
        var s = Script()
        s.activity(.automotive, .high) // in a car in a car park, creeping
        s.drive(seconds: 60, speed: 1.5)
        s.impact(peakG: 12, durationMs: 30)
        s.stand(seconds: 30)
        var harness = Harness()
        harness.run(s.records)
        #expect(harness.dismissals == [.tooSlowBeforeImpact])
    }

    @Test func anImpactWithNoPositionAndNoVehicleEvidenceIsUnusable() {
        var s = Script()
        s.impact(peakG: 40, durationMs: 80)
        s.silence(seconds: 60)
        s.activity(.stationary, .high)
        var harness = Harness()
        harness.run(s.records)
        #expect(harness.dismissals == [.unusablePosition])
    }

    @Test func anImpactWithoutGPSButInAVehicleIsStillEvaluated() {
        // No fix around the impact (a tunnel), but the classifier says automotive: better an unconfirmed alert
        // than none.
        var s = Script()
        s.activity(.automotive, .high)
        s.silence(seconds: 300)
        s.impact(peakG: 40, durationMs: 80)
        s.silence(seconds: 60)
        s.activity(.stationary, .high)
        var harness = Harness()
        harness.run(s.records)
        #expect(harness.candidates.count == 1)
        #expect(harness.crashes.count == 1)
        // No position was ever reported: the alert says so rather than pointing at 0,0.
        #expect(harness.crashes.first?.latitude == nil && harness.crashes.first?.longitude == nil)
    }

    @Test func withoutAFixNearTheImpactTheLastKnownPositionIsReported() throws {
        var s = Script()
        s.activity(.automotive, .high)
        s.drive(seconds: 60, speed: 15)
        let (lastLatitude, lastLongitude) = (s.latitude, s.longitude)
        s.silence(seconds: 400) // a long tunnel: nothing within the position window
        s.impact(peakG: 45)
        s.silence(seconds: 60)
        s.activity(.stationary, .high)
        var harness = Harness()
        harness.run(s.records)
        let crash = try #require(harness.crashes.first)
        #expect(abs(crash.latitude! - lastLatitude) < 1e-6 && abs(crash.longitude! - lastLongitude) < 1e-6)
    }

    @Test func severalImpactsOfOneCrashAreOneCrash() throws {
        let (script, _) = Self.impactWhileDriving(extraImpacts: [(0.8, 25), (2.5, 12), (24, 8)])
        var harness = Harness()
        harness.run(script.records)
        #expect(harness.candidates.count == 1)
        #expect(harness.crashes.count == 1)
        // The impacts inside the decision delay are counted in; the one after it is absorbed by the crash.
        #expect(try #require(harness.candidates.first).impactCount == 3)
    }

    @Test func twoCrashesFarApartAreTwoEvents() {
        var (s, _) = Self.impactWhileDriving()
        s.activity(.automotive, .high)
        s.drive(seconds: 300, speed: 15)
        s.impact(peakG: 40, durationMs: 80)
        s.accelerate(from: 5, to: 0, seconds: 2)
        s.stand(seconds: 60)
        var harness = Harness()
        harness.run(s.records)
        #expect(harness.crashes.count == 2)
        #expect(Set(harness.crashes.map(\.crashID)).count == 2)
    }

    @Test func aTestCrashRunsTheSamePathFlaggedIsTest() throws {
        var s = Script()
        s.activity(.automotive, .high)
        s.drive(seconds: 30, speed: 10)
        var harness = Harness()
        harness.feed(s.records)
        harness.record(try harness.session.raiseTestCrash(at: s.t + 1), at: s.t + 1)
        let candidate = try #require(harness.candidates.first)
        #expect(candidate.isTest)
        let crash = try #require(harness.crashes.first)
        #expect(crash.isTest)
        #expect(crash.detectedAt == s.t + 1)
        #expect(crash.latitude != nil)
        // And a verdict of none suppresses a test crash too: the same path.
        var suppressed = Harness()
        suppressed.verdict = { _ in .verdict(.none) }
        suppressed.record(try suppressed.session.raiseTestCrash(at: Script.start), at: Script.start)
        #expect(suppressed.crashes.isEmpty)
    }

    @Test func theEmbeddedEvaluatorScoresRealisticCandidates() {
        let (script, _) = Self.impactWhileDriving()
        var harness = Harness()
        harness.verdict = { .verdict(CrashEvaluator().verdict(for: $0)) }
        harness.run(script.records)
        #expect(harness.crashes.first?.confidence == .high)

        // A minor collision: 9 g at 8 m/s, then stopped.
        let (minor, _) = Self.impactWhileDriving(speed: 8, peakG: 9, durationMs: 30)
        var minorHarness = Harness()
        minorHarness.verdict = { .verdict(CrashEvaluator().verdict(for: $0)) }
        minorHarness.run(minor.records)
        #expect(minorHarness.crashes.first?.confidence == .low)
    }
}
