import Foundation
import RoadSaveModel
import Testing

@testable import DetectionEngine

/// Rides on public transport against car trips: what `tripDidEnd` says the trip was taken in (docs/detection.md "Passengers").
@Suite struct PassengerScenarioTests {
    /// A scripted ride through the whole engine; the one trip it gives.
    static func ride(pedometer: Bool = true, _ narrate: (inout Script) -> Void) throws -> TripInfo {
        var s = Script()
        s.capabilities(activity: true, pedometer: pedometer)
        s.activity(.automotive, .high)
        narrate(&s)
        s.stand(seconds: 30)
        s.activity(.walking, .high)
        s.walk(seconds: 60, pedometer: pedometer)
        var harness = Harness()
        harness.run(s.records)
        #expect(harness.tripStarts.count == 1 && harness.tripEnds.count == 1, "every start has its end")
        return try #require(harness.tripEnds.first)
    }

    @Test func theCommuteWithRedLightsIsACar() throws {
        let (script, _, _) = TripScenarioTests.commute(redLights: [90, 60, 45, 75])
        var harness = Harness()
        harness.run(script.records)
        let trip = try #require(harness.tripEnds.first)
        #expect(trip.transportMode == .car && trip.transportReason == .noTransitEvidence)
        #expect(trip.isDriving)
    }

    /// Dwell stops are reported, but do not decide: town driving between lights shows them too (docs/detection.md "Passengers").
    @Test func aBusStoppingEveryFewHundredMetresShowsTheDwellSignWithoutBeingDecidedByIt() throws {
        let trip = try Self.ride { s in
            s.accelerate(from: 2.5, to: 11, seconds: 8)
            for _ in 0..<8 {
                s.drive(seconds: 35, speed: 11) // about 400 m between stops
                s.accelerate(from: 11, to: 0, seconds: 5)
                s.stand(seconds: 20) // doors open, people board
                s.accelerate(from: 2.5, to: 11, seconds: 6)
            }
            s.drive(seconds: 30, speed: 11)
        }
        #expect(trip.transportSigns == [.regularDwellStops])
        #expect(trip.transportMode == .car && trip.transportReason == .noTransitEvidence)
        #expect(trip.isDriving)
    }

    @Test func aFastRoadWithTheSameStopsIsNoBus() throws {
        // Stops of a bus's length on a ride that holds 25 m/s between them: a car on an arterial road.
        let trip = try Self.ride { s in
            s.accelerate(from: 2.5, to: 25, seconds: 10)
            for _ in 0..<6 {
                s.drive(seconds: 20, speed: 25)
                s.accelerate(from: 25, to: 0, seconds: 8)
                s.stand(seconds: 20)
                s.accelerate(from: 2.5, to: 25, seconds: 10)
            }
            s.drive(seconds: 30, speed: 25)
        }
        #expect(trip.transportMode == .car)
    }

    @Test func stepsWhileMovingMakeAPassenger() throws {
        let trip = try Self.ride { s in
            s.accelerate(from: 2.5, to: 30, seconds: 15)
            s.drive(seconds: 120, speed: 30)
            // Walking to the buffet car: the pedometer counts while the train runs at 30 m/s.
            for _ in 0..<10 {
                s.drive(seconds: 4, speed: 30)
                s.stepCount += 5
                s.add(.steps(s.stepCount))
            }
            s.drive(seconds: 120, speed: 30)
            s.accelerate(from: 30, to: 0, seconds: 20)
        }
        #expect(trip.transportMode == .rail && trip.transportReason == .stepsWhileMoving)
    }

    @Test func gpsLostForMinutesAtSpeedIsUnderground() throws {
        let trip = try Self.ride { s in
            s.accelerate(from: 2.5, to: 15, seconds: 8)
            s.drive(seconds: 90, speed: 15)
            // Into the tunnel: 2 minutes without a fix, 1.8 km further on.
            s.silence(seconds: 120)
            s.latitude += 1_800 / 111_320
            s.drive(seconds: 90, speed: 15)
            s.accelerate(from: 15, to: 0, seconds: 8)
        }
        #expect(trip.transportMode == .rail && trip.transportReason == .gpsLostWhileMoving)
    }

    @Test func minutesAboveWhatCarsHoldAreRail() throws {
        let trip = try Self.ride { s in
            s.accelerate(from: 2.5, to: 45, seconds: 40)
            s.drive(seconds: 180, speed: 45)
            s.accelerate(from: 45, to: 0, seconds: 40)
        }
        #expect(trip.transportMode == .rail && trip.transportReason == .railSpeed)
    }

    /// Walk 5 minutes (about 420 m), stand `wait` seconds, then ride 3 km at city speed without stops.
    static func walkWaitAndRide(wait: Int) throws -> TripInfo {
        try ride { s in
            s.activity(.walking, .high)
            s.walk(seconds: 300)
            s.stand(seconds: wait)
            s.activity(.automotive, .high)
            s.accelerate(from: 2.5, to: 12, seconds: 8)
            s.drive(seconds: 250, speed: 12)
            s.accelerate(from: 12, to: 0, seconds: 6)
        }
    }

    @Test func aCrashOnABusIsStillDetectedAndEvaluated() throws {
        // The bus of `walkingToAStopAndWaitingThereIsBoarding`, hit hard halfway and stopped: judging the ride a bus
        // must not touch crash detection (a passenger's crash is as real as a driver's).
        var s = Script()
        s.capabilities(activity: true, pedometer: true)
        s.activity(.walking, .high)
        s.walk(seconds: 300)
        s.stand(seconds: 240)
        s.activity(.automotive, .high)
        s.accelerate(from: 2.5, to: 12, seconds: 8)
        s.drive(seconds: 250, speed: 12)
        s.t += 0.4
        let impactTime = s.t
        s.impact(peakG: 45)
        s.t += 0.6
        s.accelerate(from: 4, to: 0, seconds: 2)
        s.activity(.stationary, .high)
        s.stand(seconds: 400)
        s.activity(.walking, .high)
        s.walk(seconds: 60)
        s.records.sort { $0.t < $1.t }
        var harness = Harness()
        harness.run(s.records)
        let crash = try #require(harness.crashes.count == 1 ? harness.crashes.first : nil)
        #expect(crash.detectedAt == impactTime && crash.confidence == .high)
        #expect(harness.candidates.count == 1, "the platform evaluated it")
        let trip = try #require(harness.tripEnds.count == 1 ? harness.tripEnds.first : nil)
        #expect(trip.transportMode == .bus && trip.transportReason == .boardedAfterWaiting)
    }

    @Test func walkingToAStopAndWaitingThereIsBoarding() throws {
        let trip = try Self.walkWaitAndRide(wait: 240)
        #expect(trip.transportMode == .bus && trip.transportReason == .boardedAfterWaiting)
    }

    @Test func changingAtAStationIsBoardingToo() throws {
        // Off one train, across the station on foot and four minutes on the platform: the second ride, ten minutes
        // after the first, is boarded as much as the first (a parked car leaves from where its trip ended).
        var s = Script()
        s.capabilities(activity: true, pedometer: true)
        s.activity(.automotive, .high)
        s.accelerate(from: 2.5, to: 15, seconds: 8)
        s.drive(seconds: 300, speed: 15)
        s.accelerate(from: 15, to: 0, seconds: 8)
        s.activity(.walking, .high)
        s.walk(seconds: 200)
        s.stand(seconds: 240)
        s.activity(.automotive, .high)
        s.accelerate(from: 2.5, to: 12, seconds: 8)
        s.drive(seconds: 250, speed: 12)
        s.accelerate(from: 12, to: 0, seconds: 6)
        s.stand(seconds: 30)
        s.activity(.walking, .high)
        s.walk(seconds: 60)
        var harness = Harness()
        harness.run(s.records)
        #expect(harness.tripEnds.count == 2)
        let second = try #require(harness.tripEnds.last)
        #expect(second.startDate - (harness.tripEnds.first?.endDate ?? 0) < 15 * 60, "a change, not a new journey")
        #expect(second.transportMode == .bus && second.transportReason == .boardedAfterWaiting)
    }

    @Test func everySignSeenIsReportedAndTheFirstDecidingOneDecides() throws {
        // Boarded after waiting, then a bus's stops: both signs are kept, the boarding decides.
        let trip = try Self.ride { s in
            s.activity(.walking, .high)
            s.walk(seconds: 300)
            s.stand(seconds: 240)
            s.activity(.automotive, .high)
            s.accelerate(from: 2.5, to: 11, seconds: 8)
            for _ in 0..<8 {
                s.drive(seconds: 35, speed: 11)
                s.accelerate(from: 11, to: 0, seconds: 5)
                s.stand(seconds: 20)
                s.accelerate(from: 2.5, to: 11, seconds: 6)
            }
            s.drive(seconds: 30, speed: 11)
        }
        #expect(trip.transportSigns == [.boardedAfterWaiting, .regularDwellStops])
        #expect(trip.transportMode == .bus && trip.transportReason == .boardedAfterWaiting)
    }

    @Test func walkingToTheCarAndLeavingWithinAMinuteIsDriving() throws {
        let trip = try Self.walkWaitAndRide(wait: 45)
        #expect(trip.transportMode == .car)
    }

    @Test func leavingFromWhereThePhoneStayedIsNoBoarding() {
        // The phone spent the morning at home, where the car is parked: no walk to the place, however long the stay.
        var whereabouts = Whereabouts()
        for second in stride(from: 0.0, to: 1_200, by: 10) {
            whereabouts.add(
                AcceptedFix(t: second, latitude: 0, longitude: 0, speed: 0, accuracy: 10, isMovement: false))
        }
        #expect(whereabouts.waitAfterWalking(departure: 1_200) == nil)
    }

    @Test func arrivingByVehicleIsNoBoarding() {
        // 3 km in the 4 minutes before a 5-minute stop (a shop on the way): faster than walking.
        var whereabouts = Whereabouts()
        for second in stride(from: 0.0, to: 240, by: 10) {
            whereabouts.add(
                AcceptedFix(
                    t: second, latitude: (240 - second) * 12.5 / 111_320, longitude: 0, speed: 12.5,
                    accuracy: 10, isMovement: true))
        }
        for second in stride(from: 240.0, to: 540, by: 10) {
            whereabouts.add(
                AcceptedFix(t: second, latitude: 0, longitude: 0, speed: 0, accuracy: 10, isMovement: false))
        }
        #expect(whereabouts.waitAfterWalking(departure: 540) == nil)
    }

    @Test func aPlaceFromBeforeASilenceIsNoWalk() {
        // At work 10 km away, then no fix for 90 minutes, then 5 minutes at home before driving off: no walk.
        var whereabouts = Whereabouts()
        whereabouts.add(
            AcceptedFix(t: 0, latitude: 10_000 / 111_320, longitude: 0, speed: 0, accuracy: 10, isMovement: false))
        for second in stride(from: 5_400.0, to: 5_700, by: 10) {
            whereabouts.add(
                AcceptedFix(t: second, latitude: 0, longitude: 0, speed: 0, accuracy: 10, isMovement: false))
        }
        #expect(whereabouts.samples.allSatisfy { $0.t >= 5_400 })
        #expect(whereabouts.waitAfterWalking(departure: 5_700) == nil)
    }

    @Test func stopsAtStationsBetweenFastRunsAreRail() throws {
        let trip = try Self.ride { s in
            s.accelerate(from: 2.5, to: 30, seconds: 60)
            for _ in 0..<2 {
                s.drive(seconds: 240, speed: 30)
                s.accelerate(from: 30, to: 0, seconds: 60)
                s.stand(seconds: 90)
                s.accelerate(from: 2.5, to: 30, seconds: 60)
            }
            s.drive(seconds: 120, speed: 30)
            s.accelerate(from: 30, to: 0, seconds: 60)
        }
        #expect(trip.transportMode == .rail && trip.transportReason == .stationStops)
    }

    @Test func stationStopsAPhoneSaysNothingThroughAreRailToo() throws {
        // iOS reports by distance: at each station the fixes stop at 4 m/s and resume 30 m on, a minute later.
        let trip = try Self.ride { s in
            s.accelerate(from: 2.5, to: 30, seconds: 50)
            for _ in 0..<2 {
                s.drive(seconds: 70, speed: 30)
                s.accelerate(from: 30, to: 4, seconds: 50)
                s.silence(seconds: 60)
                s.advance(metres: 30)
                s.accelerate(from: 4, to: 30, seconds: 50)
            }
            s.drive(seconds: 70, speed: 30)
            s.accelerate(from: 30, to: 0, seconds: 60)
        }
        #expect(trip.transportMode == .rail && trip.transportReason == .stationStops)
    }

    @Test func redLightsAPhoneSaysNothingThroughAreNoStations() throws {
        // The same silences at the lights of a town drive that never reaches 90 km/h: stops, not stations.
        let trip = try Self.ride { s in
            s.accelerate(from: 2.5, to: 14, seconds: 10)
            for _ in 0..<5 {
                s.drive(seconds: 70, speed: 14)
                s.accelerate(from: 14, to: 4, seconds: 5)
                s.silence(seconds: 60)
                s.advance(metres: 30)
                s.accelerate(from: 4, to: 14, seconds: 6)
            }
            s.drive(seconds: 70, speed: 14)
        }
        #expect(trip.transportMode == .car)
    }

    @Test func aTrafficJamOnTheMotorwayIsNoStation() throws {
        // From 30 m/s into a jam: stop, creep, stop again, then clear: the stops are not followed by 90 km/h at once.
        let trip = try Self.ride { s in
            s.accelerate(from: 2.5, to: 30, seconds: 40)
            s.drive(seconds: 240, speed: 30)
            s.accelerate(from: 30, to: 0, seconds: 30)
            for _ in 0..<4 {
                s.stand(seconds: 40)
                s.accelerate(from: 2.5, to: 8, seconds: 5)
                s.drive(seconds: 20, speed: 8)
                s.accelerate(from: 8, to: 0, seconds: 5)
            }
            s.stand(seconds: 40)
            s.accelerate(from: 2.5, to: 30, seconds: 40)
            s.drive(seconds: 240, speed: 30)
            s.accelerate(from: 30, to: 0, seconds: 30)
        }
        #expect(trip.transportMode == .car)
    }

    @Test func aShortHopIsNotJudged() throws {
        let trip = try Self.ride { s in
            s.accelerate(from: 2.5, to: 12, seconds: 8)
            s.drive(seconds: 70, speed: 12)
            s.accelerate(from: 12, to: 0, seconds: 6)
        }
        #expect(trip.transportMode == .unknown && trip.transportReason == .tooShort)
        #expect(trip.isDriving, "unknown counts as driving")
    }

    @Test func aPhoneThatReportsRarelyIsNotTakenUnderground() {
        // One fix a minute all along (a power-saving phone in a car): its gaps are its usual interval.
        var profile = RideProfile()
        for minute in 0..<10 {
            profile.add(
                AcceptedFix(
                    t: Double(minute) * 60, latitude: Double(minute) * 900 / 111_320, longitude: 0,
                    speed: 15, accuracy: 10, isMovement: true))
        }
        #expect(profile.undergroundGaps == 0)
        let verdict = profile.judge(distance: 8_100, duration: 540)
        #expect(verdict.mode == .car && verdict.reason == .noTransitEvidence && verdict.signs.isEmpty)
    }

    @Test func aCheckpointFromBeforeRidesWereJudgedStillLoads() throws {
        let old =
            #"{"tripID":"t","startDate":1,"lastMovement":2,"odometer":{"distance":0,"anchor":[1,0,0,null,5,true]}}"#
        let trip = try JSONDecoder().decode(TripEngine.ActiveTrip.self, from: Data(old.utf8))
        #expect(trip.ride == RideProfile())
    }
}
