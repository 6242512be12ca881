import Foundation
import RoadSaveModel
import Testing

@testable import DetectionEngine

/// `coarsePositionsAboard` (docs/detection.md "Passengers"): most of a ride's positions coarse (network positions,
/// tens of metres out) from a phone whose positions were sharp in the minutes before it is a ride under ground or in
/// a train's carriage; a car's windows let GPS through. A phone coarse everywhere says nothing by it.
@Suite struct CoarsePositionsAboardTests {
    /// Walk 5 minutes at `walkAccuracy`, stand a minute on the platform, then ride 4 km at 15 m/s with fixes of
    /// `rideAccuracy` (and, when `lostSeconds` > 0, that many seconds of positions too coarse for the GPS filter).
    static func walkAndRide(walkAccuracy: Double, rideAccuracy: Double, lostSeconds: Int = 0) throws -> TripInfo {
        try PassengerScenarioTests.ride { s in
            s.accuracy = walkAccuracy
            s.activity(.walking, .high)
            s.walk(seconds: 300)
            s.stand(seconds: 60)
            s.activity(.automotive, .high)
            s.accuracy = rideAccuracy
            s.accelerate(from: 2.5, to: 15, seconds: 8)
            s.drive(seconds: 120, speed: 15)
            if lostSeconds > 0 {
                s.accuracy = 120
                s.drive(seconds: lostSeconds, speed: 15)
                s.accuracy = rideAccuracy
            }
            s.drive(seconds: 120, speed: 15)
            s.accelerate(from: 15, to: 0, seconds: 8)
            // Out in the open again at the end of the line.
            s.accuracy = walkAccuracy
        }
    }

    /// Walk 5 minutes at 5 m, move off to 15 m/s, then `ride` (at 15 m/s), and stop.
    static func sharpWalkThenRide(_ ride: (inout Script) -> Void) throws -> TripInfo {
        try PassengerScenarioTests.ride { s in
            s.accuracy = 5
            s.activity(.walking, .high)
            s.walk(seconds: 300)
            s.activity(.automotive, .high)
            s.accelerate(from: 2.5, to: 15, seconds: 8)
            ride(&s)
            s.accelerate(from: 15, to: 0, seconds: 8)
        }
    }

    @Test func aRideOnNetworkPositionsAfterASharpWalkIsRail() throws {
        let trip = try Self.walkAndRide(walkAccuracy: 5, rideAccuracy: 40)
        #expect(trip.transportMode == .rail && trip.transportReason == .coarsePositionsAboard)
        #expect(!trip.isDriving)
    }

    @Test func positionsTooCoarseForTheFilterCountAsCoarse() throws {
        // A minute of 40 m positions, then stretches beyond the filter's 50 m (each shorter than an underground gap)
        // between sharp ones: a third of the fixes the filter keeps are coarse, over half of all the ride's are.
        let trip = try Self.sharpWalkThenRide { s in
            s.accuracy = 40
            s.drive(seconds: 60, speed: 15)
            for _ in 0..<2 {
                s.accuracy = 150
                s.drive(seconds: 45, speed: 15)
                s.accuracy = 5
                s.drive(seconds: 60, speed: 15)
            }
        }
        #expect(trip.transportMode == .rail && trip.transportReason == .coarsePositionsAboard)
        #expect(trip.transportSigns == [.coarsePositionsAboard], "no gap long enough for underground")
    }

    @Test func aCarWithSharpPositionsIsACar() throws {
        let trip = try Self.walkAndRide(walkAccuracy: 5, rideAccuracy: 5)
        #expect(trip.transportMode == .car && trip.transportSigns.isEmpty)
    }

    @Test func aPhoneCoarseEverywhereSaysNothingByIt() throws {
        // A phone at a low accuracy setting, or one that reads network positions indoors and out: the walk was as
        // coarse as the ride, so the ride's positions say nothing of where it went.
        let trip = try Self.walkAndRide(walkAccuracy: 40, rideAccuracy: 40)
        #expect(trip.transportMode == .car && trip.transportSigns.isEmpty)
    }

    @Test func aFewCoarseStretchesOfADriveAreNoSign() throws {
        // An urban canyon or a short tunnel: a minute of 30 m fixes in a drive of over four minutes.
        let trip = try Self.sharpWalkThenRide { s in
            s.drive(seconds: 100, speed: 15)
            s.accuracy = 30
            s.drive(seconds: 60, speed: 15)
            s.accuracy = 5
            s.drive(seconds: 100, speed: 15)
        }
        #expect(trip.transportMode == .car && trip.transportSigns.isEmpty)
    }

    @Test func aTripThatBeganWithAnEarlierRunKeepsHowSharpThePhoneWasBeforeIt() throws {
        // GPS only: a first stretch too short to start a trip, a stop at a station longer than a run's break, then
        // the rest of the line. The minutes before the second stretch are mostly the ride's own coarse positions;
        // how sharp the phone was is what it showed before the first one.
        var s = Script()
        s.capabilities(activity: false, pedometer: false)
        s.accuracy = 5
        s.walk(seconds: 90, pedometer: false)
        s.accuracy = 40
        // Under the held and peak speeds of a GPS-only start, and short of its distance.
        s.accelerate(from: 2.5, to: 7, seconds: 5)
        s.drive(seconds: 50, speed: 7)
        s.accelerate(from: 7, to: 0, seconds: 5)
        s.stand(seconds: 150)
        s.accelerate(from: 2.5, to: 15, seconds: 8)
        s.drive(seconds: 300, speed: 15)
        s.accelerate(from: 15, to: 0, seconds: 8)
        s.accuracy = 5
        s.stand(seconds: 30)
        s.walk(seconds: 400, pedometer: false)
        var harness = Harness()
        harness.run(s.records)
        let trip = try #require(harness.tripEnds.first)
        #expect(harness.tripEnds.count == 1)
        // The trip begins with the first stretch (its lead-in).
        #expect(trip.startDate < Script.start + 100)
        #expect(trip.transportMode == .rail && trip.transportReason == .coarsePositionsAboard)
    }

    @Test func theSharpnessBeforeIsTheMedianOfTheSamplesBeforeTheDeparture() {
        var whereabouts = Whereabouts()
        func fix(_ t: Double, _ accuracy: Double) -> AcceptedFix {
            AcceptedFix(t: t, latitude: 60, longitude: 25, speed: 0, accuracy: accuracy, isMovement: false)
        }
        whereabouts.add(fix(0, 5))
        whereabouts.add(fix(30, 40))
        #expect(whereabouts.medianAccuracy(before: 100) == nil, "two samples are too few")
        whereabouts.add(fix(60, 8))
        whereabouts.add(fix(90, 50))
        // Before 100 (the samples until 80, departure lag included): 5, 40, 8 → 8.
        #expect(whereabouts.medianAccuracy(before: 100) == 8)
        #expect(whereabouts.medianAccuracy(before: 200) == 24.0, "5, 8, 40, 50")
    }
}
