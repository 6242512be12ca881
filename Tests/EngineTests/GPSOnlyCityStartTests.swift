import Foundation
import GatewayKit
import RoadSaveModel
import Testing

@testable import DetectionEngine

/// Devices without a classifier in city traffic, and phones whose GPS sleeps (issue 19's points 4 and 5): a drive at
/// 30–40 km/h between lights starts a trip within about half a minute of moving off; a bicycle at 25 km/h and a
/// GPS leap while the phone lies still start none; a gap in the fixes that began while the phone stood still is its
/// GPS sleeping, not a tunnel, and one lost minute of a long drive is no underground ride either.
@Suite struct GPSOnlyCityStartTests {
    /// Lights every 400 m: away at 35 km/h (9.7 m/s), 30 s at the light, again.
    static func cityDrive(lights: Int) -> Script {
        var s = Script()
        s.capabilities(activity: false, pedometer: false)
        s.stand(seconds: 20)
        for _ in 0..<lights {
            s.accelerate(from: 2, to: 9.7, seconds: 5)
            s.drive(seconds: 36, speed: 9.7, turnEvery: 0)
            s.accelerate(from: 9.7, to: 0.5, seconds: 4)
            s.stand(seconds: 30)
        }
        return s
    }

    @Test func aCityDriveThatNeverPassesFortyKilometresAnHourStartsWithinHalfAMinute() throws {
        let s = Self.cityDrive(lights: 6)
        var harness = Harness()
        harness.feed(s.records)
        let decision = try #require(
            harness.log.first { if case .emit(let e) = $0.action, case .tripDidStart = e.body { true } else { false } })
        let movedOff = Script.start + 21
        #expect(decision.time - movedOff <= 30, "decided \(decision.time - movedOff) s after moving off")
        let start = try #require(harness.tripStarts.first)
        #expect(abs(start.startDate - movedOff) <= 2, "backdated to moving off")
        harness.finish()
        #expect(harness.tripEnds.count == 1, "one trip across the lights")
    }

    @Test func aBicycleAtTwentyFiveKilometresAnHourStartsNone() {
        var s = Script()
        s.capabilities(activity: false, pedometer: false)
        for _ in 0..<8 {
            s.drive(seconds: 90, speed: 6.9, turnEvery: 45)
            s.accelerate(from: 6.9, to: 0.5, seconds: 3)
            s.stand(seconds: 20)
        }
        var harness = Harness()
        harness.run(s.records)
        #expect(harness.events.isEmpty)
    }

    /// The position leaps 100 m away and drifts on at vehicle speed for twenty seconds, then jumps back: seen in the
    /// travel diaries' stops. Only a speed-up a vehicle can make starts the held stretch.
    @Test func aGPSLeapWhileThePhoneLiesStillStartsNone() {
        var random = SplitMix64(seed: 3)
        var s = Script()
        s.capabilities(activity: false, pedometer: false)
        s.stand(seconds: 120, speedKnown: false, random: &random)
        var leap = s
        let home = (s.latitude, s.longitude)
        for second in 1...18 {
            let (lat, lon) = Script.moved(home.0, home.1, north: 100 + Double(second) * 18, east: 0)
            leap.records.append(
                SensorRecord(
                    device: s.device, seq: UInt64(10_000 + second), t: s.t + Double(second),
                    payload: .location(
                        LocationFix(
                            latitude: lat, longitude: lon, speed: nil,
                            horizontalAccuracy: 5))))
        }
        leap.t = s.t + 20
        leap.stand(seconds: 300, speedKnown: false, random: &random)
        var harness = Harness()
        harness.run(leap.records)
        #expect(harness.tripStarts.isEmpty)
    }

    /// A phone that sleeps its GPS at a standstill and wakes it minutes later, far away: the gap began standing still.
    @Test func aGapThatBeganStandingStillIsTheGPSSleepingNotATunnel() throws {
        var s = Script()
        s.activity(.automotive, .high)
        s.drive(seconds: 240, speed: 12)
        s.accelerate(from: 12, to: 0.5, seconds: 6)
        s.stand(seconds: 20)
        // GPS asleep for 150 s; the car went on meanwhile (1.5 km); fixes resume at speed.
        s.advance(metres: 1500)
        s.t += 150
        s.drive(seconds: 240, speed: 12)
        s.accelerate(from: 12, to: 0, seconds: 6)
        s.stand(seconds: 300)
        var harness = Harness()
        harness.run(s.records)
        let trip = try #require(harness.tripEnds.first)
        #expect(trip.transportMode == .car, "\(trip.transportReason)")
    }

    /// One lost minute and a half of a long motorway drive (a recording's hole) is no underground ride; two of them,
    /// or a hole of a fifth of the ride, still are (a metro).
    @Test func oneGapOfALongDriveIsNotUndergroundButSeveralAre() throws {
        func drive(gaps: Int) -> Script {
            var s = Script()
            s.activity(.automotive, .high)
            s.drive(seconds: 1200, speed: 32)
            for _ in 0..<gaps {
                s.advance(metres: 32 * 100)
                s.t += 100
                s.drive(seconds: 600, speed: 32)
            }
            s.accelerate(from: 32, to: 0, seconds: 10)
            s.stand(seconds: 300)
            return s
        }
        var one = Harness()
        one.run(drive(gaps: 1).records)
        #expect(try #require(one.tripEnds.first).transportMode == .car)
        var two = Harness()
        two.run(drive(gaps: 2).records)
        #expect(try #require(two.tripEnds.first).transportReason == .gpsLostWhileMoving)
    }
}
