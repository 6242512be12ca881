import Foundation
import RoadSaveModel
import Testing

@testable import DetectionEngine

/// Phones that stop their GPS while they lie still (Android does) and wake it only minutes after moving off: the
/// first fix after the silence finds the phone away already, at speed (`TripEngine.WakeUp`). The trip begins when
/// the phone most likely set off, and a wait at a stop during the silence still counts as waiting.
@Suite struct SleepingGPSTests {
    /// Walks `walk` s to a place, lies still there 20 s (reporting), then nothing until a fix `away` metres on at
    /// `speed` after `silence` s; drives on at that speed for four minutes and stops.
    static func wakeUp(walk: Int, silence: Double, away: Double, speed: Double) -> (Script, firstFixAt: Double) {
        var s = Script()
        s.capabilities(activity: true, pedometer: false)
        if walk > 0 {
            s.activity(.walking, .high)
            s.walk(seconds: walk, pedometer: false)
        }
        s.activity(.stationary, .high)
        s.stand(seconds: 20)
        s.silence(seconds: silence)
        s.advance(metres: away)
        s.activity(.automotive, .high)
        s.fix(speed: speed)
        let firstFixAt = s.t
        s.drive(seconds: 240, speed: speed)
        s.accelerate(from: speed, to: 0, seconds: 6)
        s.stand(seconds: 30)
        return (s, firstFixAt)
    }

    static func trip(_ s: Script) throws -> TripInfo {
        var harness = Harness()
        harness.run(s.records)
        #expect(harness.tripStarts.count == 1 && harness.tripEnds.count == 1)
        return try #require(harness.tripEnds.first)
    }

    @Test func aTripThatWokeTheGPSBeginsWhenThePhoneSetOff() throws {
        // Off 60 s into a 210 s silence: 150 s at 12 m/s is 1,800 m by the first fix.
        let (s, firstFix) = Self.wakeUp(walk: 0, silence: 210, away: 1_800, speed: 12)
        let trip = try Self.trip(s)
        #expect(
            abs(trip.startDate - (firstFix - 150)) <= 1, "began \(firstFix - trip.startDate) s before the first fix")
        #expect(trip.distanceMetres >= 1_800 + 240 * 12 - 1, "the distance covered in the silence counts")
    }

    @Test func waitingAtAStopWhileTheGPSSleepsIsBoarding() throws {
        // Five minutes at the stop unseen, then 100 s on the bus at 10 m/s before the GPS wakes.
        let (s, _) = Self.wakeUp(walk: 300, silence: 400, away: 1_000, speed: 10)
        let trip = try Self.trip(s)
        #expect(trip.transportMode == .bus && trip.transportReason == .boardedAfterWaiting)
    }

    @Test func aDriverWhosePhoneSleptInTheCarIsNoPassenger() throws {
        // To the car, 40 s in it unseen, then three minutes at 12 m/s before the GPS wakes: a wait of 40 s at most.
        let (s, firstFix) = Self.wakeUp(walk: 300, silence: 220, away: 2_160, speed: 12)
        let trip = try Self.trip(s)
        #expect(trip.transportMode == .car && trip.transportSigns.isEmpty)
        #expect(abs(trip.startDate - (firstFix - 180)) <= 1)
    }

    @Test func waitingOnAPlatformWhileTheGPSSleepsIsBoardingWhereverTheFirstFixFindsIt() throws {
        // Four minutes on the platform unseen; the first fix is the train 50 m on at 8 m/s (no wake-up: too near).
        let (s, _) = Self.wakeUp(walk: 300, silence: 240, away: 50, speed: 8)
        let trip = try Self.trip(s)
        #expect(trip.transportMode == .bus && trip.transportReason == .boardedAfterWaiting)
    }

    @Test func aDriverWhosePhoneFellSilentAMinuteInTheCarIsNoPassenger() throws {
        // Walked to the car, a minute in it unseen, the first fix 30 m on at 6 m/s: a wait of 74 s at most.
        let (s, _) = Self.wakeUp(walk: 300, silence: 60, away: 30, speed: 6)
        let trip = try Self.trip(s)
        #expect(trip.transportMode == .car && trip.transportSigns.isEmpty)
    }

    @Test func aSilenceThatEndsWhereItBeganIsNoWakeUp() throws {
        // The phone lay still through the silence and drives off afterwards: the trip begins at moving off.
        var s = Script()
        s.capabilities(activity: true, pedometer: false)
        s.activity(.stationary, .high)
        s.stand(seconds: 20)
        s.silence(seconds: 300)
        s.stand(seconds: 10)
        s.activity(.automotive, .high)
        let movedOff = s.t
        s.accelerate(from: 2.5, to: 12, seconds: 8)
        s.drive(seconds: 240, speed: 12)
        s.accelerate(from: 12, to: 0, seconds: 6)
        s.stand(seconds: 30)
        let trip = try Self.trip(s)
        #expect(abs(trip.startDate - (movedOff + 1)) <= 1, "began \(trip.startDate - movedOff) s after moving off")
    }
}
