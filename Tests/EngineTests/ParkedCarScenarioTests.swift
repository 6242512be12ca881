import Foundation
import RoadSaveModel
import Testing

@testable import DetectionEngine

/// `boardedAwayFromCar`: a ride boarded far from where the device's own last drive ended, the same day, with the phone
/// seen there before it. It decides only when the phone walked to where the ride began in the minutes before it (a
/// passenger to a stop); a car that meets the phone where it has been (a second car at home, a lift, a taxi at the
/// door) is a car ride, the sign reported for a consumer to weigh (docs/detection.md "Passengers"). Where the car
/// stands is known only from the device's own driving trip, never from where a ride on public transport ended.
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

    @Test func aRideBoardedAfterWalkingAKilometreFromTheCarIsPublicTransport() throws {
        // Straight from the car 1.26 km on foot to the stop; a minute there is too short for `boardedAfterWaiting`.
        let trip = try Self.secondRide(away: 900, stay: 0)
        #expect(trip.transportMode == .bus && trip.transportReason == .boardedAwayFromCar)
        #expect(trip.transportSigns == [.boardedAwayFromCar])
        #expect(!trip.isDriving)
    }

    @Test func aDriverWhoWalksBackToTheCarDrives() throws {
        // Away to the office and back to the car: the next drive leaves from where the last one ended.
        let trip = try Self.secondRide(away: 900, back: 900, wait: 20)
        #expect(trip.transportMode == .car && trip.transportSigns.isEmpty)
    }

    @Test func aRideBoardedWithinTheDistanceShowsNoSign() throws {
        // 400 s of walking is 560 m, under the 600 m that an early wake-up of the GPS under way can account for.
        let trip = try Self.secondRide(away: 400)
        #expect(trip.transportMode == .car && !trip.transportSigns.contains(.boardedAwayFromCar))
    }

    @Test func aCarFromAnotherDaySaysNothing() throws {
        // Thirteen hours later (a night), the car may have been moved, or the "drive" that parked it a missed bus.
        let trip = try Self.secondRide(away: 900, stay: 13 * 3_600)
        #expect(trip.transportMode == .car && trip.transportSigns.isEmpty)
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

    // MARK: The cases that broke on whole days (issue 44)

    @Test func publicTransportInTheMorningThenADriveFromElsewhere() throws {
        // To the stop, four minutes' wait, the bus (judged by the wait); off, 1.26 km on foot to where the car
        // stands, and a drive: no car of the device was seen that day, so where the bus stopped says nothing of it.
        var s = Script()
        s.capabilities(activity: true, pedometer: true)
        s.activity(.walking, .high)
        s.walk(seconds: 300)
        s.activity(.stationary, .high)
        s.stand(seconds: 240)
        Self.ride(&s)
        s.heading = 270
        s.walk(seconds: 900)
        s.stand(seconds: 20)
        Self.driveAndPark(&s)
        s.walk(seconds: 60)
        let trips = Self.trips(s)
        #expect(trips.map(\.transportReason) == [.boardedAfterWaiting, .noTransitEvidence])
        #expect(trips.last?.transportMode == .car && trips.last?.transportSigns.isEmpty == true)
    }

    @Test func aTaxiOrALiftFromElsewhereAfterDrivingIsACarRide() throws {
        // Drives to work and parks; 1.26 km on foot to a meeting, ten minutes there, and a taxi (or a colleague's
        // car) from its door: a car ride, whatever where the device's own car stands says.
        let trip = try Self.secondRide(away: 900, stay: 600)
        #expect(trip.transportMode == .car && trip.isDriving && trip.transportReason == .noTransitEvidence)
        #expect(trip.transportSigns == [.boardedAwayFromCar], "reported, for a consumer to weigh")
    }

    @Test func twoCarsOfOneDeviceAreBothDriven() throws {
        // Car A from home to the shops and back on foot (1.26 km), a quarter of an hour at home, then car B.
        var s = Script()
        s.capabilities(activity: true, pedometer: true)
        Self.driveAndPark(&s)
        s.heading = 270
        s.walk(seconds: 900)
        s.activity(.stationary, .high)
        s.stand(seconds: 900, every: 10)
        s.stand(seconds: 20)
        Self.driveAndPark(&s)
        s.walk(seconds: 60)
        let trips = Self.trips(s)
        #expect(trips.map(\.transportMode) == [.car, .car])
        #expect(trips.last?.transportSigns == [.boardedAwayFromCar], "reported, for a consumer to weigh")
    }

    @Test func aDriveTheNextDayFromWhereABusRideEndedIsADrive() throws {
        // A bus (judged by the wait) in the evening; the next morning a drive from near where it stopped.
        var s = Script()
        s.capabilities(activity: true, pedometer: true)
        s.activity(.walking, .high)
        s.walk(seconds: 300)
        s.activity(.stationary, .high)
        s.stand(seconds: 240)
        Self.ride(&s)
        s.activity(.stationary, .high)
        s.stand(seconds: 14 * 3_600, every: 600)
        s.activity(.walking, .high)
        s.walk(seconds: 120)
        Self.driveAndPark(&s)
        s.walk(seconds: 60)
        let trips = Self.trips(s)
        #expect(trips.map(\.transportMode) == [.bus, .car])
        #expect(trips.last?.transportSigns.isEmpty == true)
    }

    @Test func theCarsPlaceSurvivesACheckpoint() throws {
        // Stored while the device stands at the stop, restored by another detection: the ride is judged the same.
        let s = Self.parkWalkAndRide(away: 900, stay: 0)
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
