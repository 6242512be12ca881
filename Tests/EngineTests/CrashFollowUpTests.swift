import Foundation
import RoadSaveModel
import Testing

@testable import DetectionEngine

/// `crashFollowUp` (issue 22, point 2): one per reported crash, `crashFollowUpDelay` after its decision, saying what
/// the records show since the impact.
@Suite struct CrashFollowUpTests {
    /// Driving at 15 m/s, an impact, the vehicle stops within 2 s; then `after` tells what happens next.
    static func crash(then after: (inout Script) -> Void) -> (Script, impactTime: Double) {
        var s = Script()
        s.activity(.automotive, .high)
        s.drive(seconds: 120, speed: 15)
        s.t += 0.4
        let impactTime = s.t
        s.impact(peakG: 40)
        s.t += 0.6
        s.accelerate(from: 5, to: 0, seconds: 2)
        after(&s)
        return (s, impactTime)
    }

    static func followUp(_ harness: Harness) throws -> CrashFollowUpInfo {
        try #require(harness.followUps.count == 1 ? harness.followUps.first : nil)
    }

    @Test func theDriverWalksAway() throws {
        let (script, impactTime) = Self.crash { s in
            s.activity(.stationary, .high)
            s.stand(seconds: 30)
            s.activity(.walking, .high)
            s.walk(seconds: 120)
        }
        var harness = Harness()
        harness.run(script.records)
        let followUp = try Self.followUp(harness)
        #expect(followUp.outcome == .personWalking)
        #expect(followUp.steps >= 10)
        // Walking at 1.4 m/s from the 30th second until the watch ended.
        let walked = try #require(followUp.distanceMoved)
        #expect(walked > 50 && walked < 200)
        #expect(followUp.detectedAt == impactTime)
        #expect(followUp.crashID == harness.crashes.first?.crashID)
        #expect(followUp.confidence == .high && !followUp.isTest)
        // Sent `crashFollowUpDelay` after the crash's decision, on event time.
        let settings = DetectionSettings()
        #expect(followUp.observedUntil == impactTime + settings.crashDecisionDelay + settings.crashFollowUpDelay)
        #expect(abs(followUp.secondsOfData - (followUp.observedUntil - impactTime)) <= 1)
        #expect(followUp.records > 100)
        #expect(followUp.latitude != nil && followUp.longitude != nil)
        // After the crash, never before it, and only once.
        #expect(harness.events.map(\.name).filter { $0.hasPrefix("crash") } == ["crashDetected", "crashFollowUp"])
    }

    @Test func theDriverDrivesOnAfterAJoltThePlatformStillConfirmed() throws {
        // A brief stop (the screening sees a stop and sends it), then driving on for two minutes.
        let (script, _) = Self.crash { s in
            s.stand(seconds: 25)
            s.accelerate(from: 0, to: 14, seconds: 5)
            s.drive(seconds: 120, speed: 14)
        }
        var harness = Harness()
        harness.verdict = { _ in .verdict(.low) }
        harness.run(script.records)
        let followUp = try Self.followUp(harness)
        #expect(followUp.outcome == .vehicleMovedOn)
        #expect(try #require(followUp.maxSpeedAfter) >= 13.9)
        #expect(try #require(followUp.distanceMoved) > 1000)
        #expect(followUp.confidence == .low)
        // It never withdraws the crash: the crash event is there as it was.
        #expect(harness.crashes.count == 1)
    }

    @Test func theDriverStays() throws {
        let (script, _) = Self.crash { s in
            s.activity(.stationary, .high)
            s.stand(seconds: 200)
        }
        var harness = Harness()
        harness.run(script.records)
        let followUp = try Self.followUp(harness)
        #expect(followUp.outcome == .stationary)
        #expect(followUp.steps == 0)
        #expect(try #require(followUp.distanceMoved) < 5)
        #expect(followUp.records > 100)
    }

    @Test func thePhoneDiesWithTheImpact() throws {
        var s = Script()
        s.activity(.automotive, .high)
        s.drive(seconds: 120, speed: 15)
        s.t += 0.4
        let impactTime = s.t
        s.impact(peakG: 40)
        // Nothing after it: replay's end of input (and the services' clock) runs time on.
        var harness = Harness()
        harness.run(s.records)
        #expect(harness.crashes.count == 1)
        let followUp = try Self.followUp(harness)
        #expect(followUp.outcome == .deviceSilent)
        #expect(followUp.records == 0 && followUp.secondsOfData == 0 && followUp.steps == 0)
        #expect(followUp.distanceMoved == nil && followUp.maxSpeedAfter == nil)
        // Where the person was last known: the crash position.
        let crash = try #require(harness.crashes.first)
        #expect(followUp.latitude == crash.latitude && followUp.longitude == crash.longitude)
        #expect(followUp.detectedAt == impactTime)
    }

    @Test func aDismissedCrashHasNone() {
        let (script, _) = Self.crash { s in s.stand(seconds: 200) }
        var harness = Harness()
        harness.verdict = { _ in .verdict(.none) }
        harness.run(script.records)
        #expect(harness.crashes.isEmpty)
        #expect(harness.followUps.isEmpty)
        #expect(harness.session.nextDeadline == nil)
    }

    @Test func anUnreachablePlatformStillGetsOne() throws {
        let (script, _) = Self.crash { s in s.stand(seconds: 200) }
        var harness = Harness()
        harness.verdict = { _ in .unreachable }
        harness.run(script.records)
        #expect(try Self.followUp(harness).confidence == .unknown)
    }

    @Test func aDelayOfZeroSendsNone() {
        var settings = DetectionSettings()
        settings.crashFollowUpDelay = 0
        let (script, _) = Self.crash { s in s.stand(seconds: 200) }
        var harness = Harness(settings: settings)
        harness.run(script.records)
        #expect(harness.crashes.count == 1)
        #expect(harness.followUps.isEmpty)
    }

    @Test func theDelayIsConfigurable() throws {
        var settings = DetectionSettings()
        settings.crashFollowUpDelay = 30
        let (script, impactTime) = Self.crash { s in
            s.stand(seconds: 50)
            s.activity(.walking, .high)
            s.walk(seconds: 60)
        }
        var harness = Harness(settings: settings)
        harness.run(script.records)
        let followUp = try Self.followUp(harness)
        // Watched until 50 s after the impact: the walk that began after it is not seen.
        #expect(followUp.observedUntil == impactTime + settings.crashDecisionDelay + 30)
        #expect(followUp.outcome == .stationary)
    }

    @Test func aTestCrashHasNoneUnlessAsked() throws {
        for asked in [false, true] {
            var s = Script()
            s.drive(seconds: 30, speed: 10)
            var harness = Harness()
            harness.feed(s.records)
            let raisedAt = s.t + 1
            harness.record(try harness.session.raiseTestCrash(at: raisedAt, followUp: asked), at: raisedAt)
            s.t = raisedAt
            s.stand(seconds: 150)
            harness.run(Array(s.records.drop { $0.t <= raisedAt }))
            #expect(harness.crashes.count == 1 && harness.crashes[0].isTest)
            if asked {
                let followUp = try Self.followUp(harness)
                #expect(followUp.isTest)
                #expect(followUp.outcome == .stationary)
                #expect(followUp.observedUntil == raisedAt + DetectionSettings().crashFollowUpDelay)
            } else {
                #expect(harness.followUps.isEmpty)
            }
        }
    }

    @Test func aLateVerdictGivesTheSameFollowUpRightAfterTheCrash() throws {
        // The services' case: the platform answers after the watch has ended. The follow-up is the one an answer
        // at once gives, sent right after the crash.
        let (script, _) = Self.crash { s in
            s.stand(seconds: 30)
            s.activity(.walking, .high)
            s.walk(seconds: 200)
        }
        var prompt = Harness()
        prompt.run(script.records)
        let expected = try Self.followUp(prompt)

        var session = try Self.monitoringSession()
        var candidate: CrashCandidate?
        for record in script.records {
            for action in session.handle(record) {
                if case .evaluateCrash(let c) = action { candidate = c }
                if case .emit(let event) = action, event.name.hasPrefix("crash") {
                    Issue.record("\(event.name) before the platform answered")
                }
            }
        }
        let answered = session.crashEvaluated(crashID: try #require(candidate).crashID, outcome: .verdict(.high))
        #expect(answered.events.map(\.name) == ["crashDetected", "crashFollowUp"])
        guard case .crashFollowUp(let info)? = answered.events.last?.body else { return }
        #expect(info == expected)
    }

    @Test func aCheckpointMidWatchGivesTheSameFollowUp() throws {
        let (script, impactTime) = Self.crash { s in
            s.activity(.stationary, .high)
            s.stand(seconds: 30)
            s.activity(.walking, .high)
            s.walk(seconds: 150)
        }
        var straight = Harness()
        straight.run(script.records)
        let expected = try Self.followUp(straight)

        var resumed = Harness()
        let cut = impactTime + 60
        resumed.feed(script.records.filter { $0.t <= cut })
        let data = try JSONEncoder().encode(resumed.session)
        resumed.session = try JSONDecoder().decode(DeviceSession.self, from: data)
        resumed.run(script.records.filter { $0.t > cut })
        #expect(try Self.followUp(resumed) == expected)
    }

    @Test func stoppingMonitoringSendsTheFollowUpWithWhatCameUntilThen() throws {
        let (script, _) = Self.crash { s in
            s.activity(.stationary, .high)
            s.stand(seconds: 60)
        }
        var harness = Harness()
        harness.feed(script.records)
        let stop = script.t + 1
        harness.record(try harness.session.stopMonitoring(at: stop), at: stop)
        let followUp = try Self.followUp(harness)
        #expect(followUp.observedUntil == stop)
        #expect(followUp.outcome == .stationary)
        #expect(harness.session.nextDeadline == nil)
    }

    @Test func anImpactTooLateToWatchWhatFollowedHasNone() throws {
        let (script, _) = Self.crash { s in s.stand(seconds: 200) }
        let impact = try #require(script.records.first { $0.kind == .impact })
        var harness = Harness()
        harness.feed(script.records.filter { $0.kind != .impact })
        harness.record(harness.session.lateImpact(impact), at: impact.t)
        harness.finish()
        #expect(harness.crashes.count == 1)
        #expect(harness.followUps.isEmpty)
    }

    static func monitoringSession() throws -> DeviceSession {
        var session = DeviceSession(device: Script.device)
        _ = try session.configure(
            RoadSaveConfiguration(applicationID: "app-1", clientUserID: "user-1"), at: Script.start)
        _ = try session.startMonitoring(at: Script.start, fetch: .fetched(DetectionSettings()))
        return session
    }
}
