import Foundation
import RoadSaveModel
import Testing

@testable import DetectionEngine

/// `boardedAwayFromCar`: a driver's next drive leaves from where the last one ended; a ride boarded far from there,
/// the same day, with the phone seen there before it, is public transport (docs/detection.md "Passengers").
@Suite struct ParkedCarScenarioTests {
    /// Drives 3 km east at city speed and parks: a trip judged car, ending where the car now stands.
    static func driveAndPark(_ s: inout Script) {
        s.activity(.automotive, .high)
        s.heading = 90
        s.accelerate(from: 2.5, to: 12, seconds: 8)
        s.drive(seconds: 250, speed: 12)
        s.accelerate(from: 12, to: 0, seconds: 6)
        s.stand(seconds: 30)
        s.activity(.walking, .high)
    }

    /// Rides 3 km north at city speed, without stops, and gets off.
    static func ride(_ s: inout Script) {
        s.activity(.automotive, .high)
        s.heading = 0
        s.accelerate(from: 2.5, to: 12, seconds: 8)
        s.drive(seconds: 250, speed: 12)
        s.accelerate(from: 12, to: 0, seconds: 6)
        s.stand(seconds: 30)
        s.activity(.walking, .high)
        s.walk(seconds: 60)
    }

    static func trips(_ s: Script) -> [TripInfo] {
        var harness = Harness()
        harness.run(s.records)
        #expect(harness.tripStarts.count == harness.tripEnds.count, "every start has its end")
        return harness.tripEnds
    }

    /// Parks, walks `away` seconds west (1.4 m/s), spends `stay` seconds there, walks `back` seconds east, stands
    /// `wait` seconds and rides.
    static func parkWalkAndRide(
        away: Int, stay: Int = 600, back: Int = 0, wait: Int = 60,
        beforeRide: (inout Script) -> Void = { _ in }
    ) -> Script {
        var s = Script()
        s.capabilities(activity: true, pedometer: true)
        driveAndPark(&s)
        s.heading = 270
        s.walk(seconds: away)
        s.activity(.stationary, .high)
        s.stand(seconds: stay, every: 10)
        if back > 0 {
            s.activity(.walking, .high)
            s.heading = 90
            s.walk(seconds: back)
        }
        s.stand(seconds: wait)
        beforeRide(&s)
        ride(&s)
        return s
    }

    /// The second trip of `parkWalkAndRide`, the first being the drive.
    static func secondRide(
        away: Int, stay: Int = 600, back: Int = 0, wait: Int = 60,
        beforeRide: (inout Script) -> Void = { _ in }
    ) throws -> TripInfo {
        let trips = trips(parkWalkAndRide(away: away, stay: stay, back: back, wait: wait, beforeRide: beforeRide))
        #expect(trips.count == 2)
        #expect(trips.first?.transportMode == .car)
        return try #require(trips.last)
    }

    @Test func aRideBoardedAKilometreFromTheCarIsPublicTransport() throws {
        // 900 s of walking is 1.26 km; a minute at the stop is too short for `boardedAfterWaiting`.
        let trip = try Self.secondRide(away: 900)
        #expect(trip.transportMode == .bus && trip.transportReason == .boardedAwayFromCar)
        #expect(trip.transportSigns == [.boardedAwayFromCar])
        #expect(!trip.isDriving)
    }

    @Test func aDriverWhoWalksBackToTheCarDrives() throws {
        // Away to the office and back to the car: the next drive leaves from where the last one ended.
        let trip = try Self.secondRide(away: 900, back: 900, wait: 20)
        #expect(trip.transportMode == .car && trip.transportReason == .noTransitEvidence)
    }

    @Test func aRideBoardedWithinTheDistanceIsNotJudgedByIt() throws {
        // 400 s of walking is 560 m, under the 600 m that an early wake-up of the GPS under way can account for.
        let trip = try Self.secondRide(away: 400)
        #expect(trip.transportMode == .car && !trip.transportSigns.contains(.boardedAwayFromCar))
    }

    @Test func aCarFromAnotherDaySaysNothing() throws {
        // Thirteen hours later (a night), the car may have been moved, or the "drive" that parked it a missed bus.
        let trip = try Self.secondRide(away: 900, stay: 13 * 3_600)
        #expect(trip.transportMode == .car && trip.transportReason == .noTransitEvidence)
    }

    @Test func aPhoneWhoseGPSSleptOnTheWalkSaysNothingOfWhereItBoarded() throws {
        // No fix from the stand to the ride: the first fix finds it at the stop, moving. The place it lay is no
        // evidence (a driver may walk there to a car parked far away with the GPS asleep).
        let trip = try Self.secondRide(away: 900, wait: 1) { s in
            s.silence(seconds: 900)
            s.heading = 270
            s.advance(metres: 300)
        }
        #expect(trip.transportMode == .car && !trip.transportSigns.contains(.boardedAwayFromCar))
    }

    @Test func aRideJudgedPublicTransportLeavesTheCarWhereItWas() throws {
        // Park, walk 1.26 km west, bus 3.2 km north (judged by the car), walk back to the car, drive: a car again.
        var s = Self.parkWalkAndRide(away: 900)
        s.activity(.walking, .high)
        s.heading = 180
        s.walk(seconds: 2_270)
        s.heading = 90
        s.walk(seconds: 900)
        s.stand(seconds: 20)
        Self.driveAndPark(&s)
        s.walk(seconds: 60)
        let trips = Self.trips(s)
        #expect(trips.map(\.transportMode) == [.car, .bus, .car])
        #expect(trips.last?.transportReason == .noTransitEvidence)
    }

    @Test func withNoCarThatDayARideFromElsewhereAfterPublicTransportIsAnotherLeg() throws {
        // To the stop, four minutes' wait, the bus (judged by the wait); off, 1.26 km on foot, a second ride: no car
        // of the device's stands where the bus stopped, so that ride was boarded away from any car too.
        var s = Script()
        s.capabilities(activity: true, pedometer: true)
        s.activity(.walking, .high)
        s.walk(seconds: 300)
        s.activity(.stationary, .high)
        s.stand(seconds: 240)
        Self.ride(&s)
        s.heading = 270
        s.walk(seconds: 900)
        s.stand(seconds: 60)
        Self.ride(&s)
        let trips = Self.trips(s)
        #expect(trips.map(\.transportReason) == [.boardedAfterWaiting, .boardedAwayFromCar])
    }

    @Test func aCarParkedThatDayStaysTheReferenceAfterPublicTransport() throws {
        // Drive, walk to the bus, bus (judged by the car), walk back towards the car and ride from 300 m of it: the
        // bus's end does not replace the car.
        var s = Self.parkWalkAndRide(away: 900)
        s.activity(.walking, .high)
        s.heading = 180
        s.walk(seconds: 2_270)
        s.heading = 90
        s.walk(seconds: 690) // 300 m short of the car
        s.stand(seconds: 20)
        Self.driveAndPark(&s)
        s.walk(seconds: 60)
        let trips = Self.trips(s)
        #expect(trips.map(\.transportMode) == [.car, .bus, .car])
    }

    @Test func theCarsPlaceSurvivesACheckpoint() throws {
        // Stored while the device stands at the stop, restored by another detection: the ride is judged the same.
        let s = Self.parkWalkAndRide(away: 900)
        let whole = Self.trips(s)
        let cut = try #require(whole.first?.endDate) + 900
        var first = Harness()
        first.feed(s.records.filter { $0.t <= cut })
        let stored = try JSONEncoder().encode(first.session)
        var second = Harness()
        second.session = try JSONDecoder().decode(DeviceSession.self, from: stored)
        second.run(s.records.filter { $0.t > cut })
        #expect(second.tripEnds == [try #require(whole.last)])
        #expect(second.tripEnds.first?.transportReason == .boardedAwayFromCar)
    }
}
