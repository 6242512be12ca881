import GatewayKit
import RoadSaveModel
import Testing

@testable import DetectionEngine

/// One scenario per trip rule of the brief (roadsavekit-docs.md, "Trip Detection" and "Activity Recognition").
@Suite struct TripScenarioTests {
    /// Walk to the car, drive with red lights (automotive reported together with stationary while stopped),
    /// park and walk away.
    static func commute(redLights: [Int] = [90, 60], pedometer: Bool = true) -> (
        Script, driveStart: Double, lastMovement: Double
    ) {
        var s = Script()
        s.capabilities(activity: true, pedometer: pedometer)
        s.activity(.walking, .high)
        s.walk(seconds: 60, pedometer: pedometer)
        s.activity(.automotive, .medium)
        let driveStart = s.t + 1
        s.accelerate(from: 2.5, to: 13, seconds: 8)
        s.drive(seconds: 20, speed: 13)
        s.activity(.automotive, .high)
        s.drive(seconds: 150, speed: 13, turnEvery: 60)
        for stop in redLights {
            s.accelerate(from: 13, to: 0, seconds: 5)
            s.activity(.automotive, .medium)
            s.activity(.stationary, .high)
            s.stand(seconds: stop)
            s.activity(.automotive, .high)
            s.accelerate(from: 2.5, to: 13, seconds: 6)
            s.drive(seconds: 120, speed: 13)
        }
        s.accelerate(from: 13, to: 2.0, seconds: 6)
        let lastMovement = s.lastMovement!
        s.stand(seconds: 15)
        s.activity(.stationary, .high)
        s.activity(.walking, .high)
        s.walk(seconds: 90, pedometer: pedometer)
        return (s, driveStart, lastMovement)
    }

    @Test func driveWithRedLightStopsIsOneTrip() throws {
        let (script, driveStart, lastMovement) = Self.commute()
        var harness = Harness()
        harness.run(script.records)
        #expect(harness.tripStarts.count == 1)
        #expect(harness.tripEnds.count == 1)
        let trip = try #require(harness.tripEnds.first)
        #expect(abs(trip.startDate - driveStart) <= 2, "startDate is when the driving began, not when it was decided")
        #expect(trip.endDate == lastMovement)
        #expect(trip.endReason == .steps)
        // Ramps and cruising: 8 s from 2.5 to 13 m/s (62 m), 170 s at 13 (2210 m), per red light 5 s down (33 m),
        // 6 s up (45 m) and 120 s at 13 (1560 m), and 6 s down to 2 (45 m): 5633 m.
        #expect(abs(trip.distanceMetres - 5633) < 60, "distance \(trip.distanceMetres)")
        #expect(abs(trip.averageSpeed - trip.distanceMetres / trip.duration) < 1e-9)
        #expect(trip.tripID == harness.tripStarts.first?.tripID)
    }

    @Test func cyclingAt20KilometresAnHourStartsNoTrip() {
        var s = Script()
        s.activity(.cycling, .high)
        s.drive(seconds: 20 * 60, speed: 5.6, turnEvery: 120)
        s.stand(seconds: 30)
        var harness = Harness()
        harness.run(s.records)
        #expect(harness.events.isEmpty)
    }

    /// A bicycle ride at up to 8 m/s with the classifier saying cycling every 12 s, but `stray` (an automotive
    /// report) once in a while: the lone report is noise (MobilityNet's Android phones, docs/detection.md "Trips").
    /// `walkingBlip`: the report before the stray one says walking at medium confidence, as a cyclist's phone does.
    static func cyclingWithAStrayAutomotiveReport(confirmedBy next: ActivityType, walkingBlip: Bool = false) -> Harness
    {
        var s = Script()
        s.activity(.cycling, .high)
        for minute in 0..<15 {
            for report in 0..<5 {
                if minute == 6, report == 2 {
                    if walkingBlip {
                        s.activity(.walking, .medium)
                        s.drive(seconds: 12, speed: 8, turnEvery: 0)
                    }
                    s.activity(.automotive, .high)
                    s.drive(seconds: 12, speed: 8, turnEvery: 0)
                    s.activity(next, .high)
                } else {
                    s.drive(seconds: 12, speed: 8, turnEvery: 0)
                    s.activity(minute > 6 && next == .automotive ? .automotive : .cycling, .high)
                }
            }
        }
        s.stand(seconds: 30)
        var harness = Harness()
        harness.run(s.records)
        return harness
    }

    @Test(arguments: [false, true]) func aLoneAutomotiveReportOnABicycleStartsNoTrip(walkingBlip: Bool) {
        #expect(Self.cyclingWithAStrayAutomotiveReport(confirmedBy: .cycling, walkingBlip: walkingBlip).events.isEmpty)
    }

    @Test func automotiveReportsInARowAfterCyclingStartATrip() {
        // The bicycle went into a car (or the classifier was late): the second automotive report confirms it.
        let harness = Self.cyclingWithAStrayAutomotiveReport(confirmedBy: .automotive)
        #expect(harness.tripStarts.count == 1)
    }

    @Test func oneAutomotiveReportAfterCyclingStandingThirtySecondsStartsATrip() throws {
        // iOS reports changes only: one automotive report, then nothing, while the vehicle drives on.
        var s = Script()
        s.activity(.cycling, .high)
        s.drive(seconds: 300, speed: 5)
        s.activity(.automotive, .high)
        let reported = s.t
        s.drive(seconds: 120, speed: 14)
        s.stand(seconds: 30)
        var harness = Harness()
        harness.run(s.records)
        let decided = try #require(harness.tripStartDecisionTimes.first)
        #expect(decided >= reported + ActivityContext.afterCyclingConfirmation && decided <= reported + 32)
    }

    @Test func cyclingNeitherStartsNorStopsATrip() throws {
        var s = Script()
        s.activity(.automotive, .high)
        s.drive(seconds: 120, speed: 14)
        // A misclassification in the middle of a drive does not end it.
        s.activity(.cycling, .high)
        s.drive(seconds: 120, speed: 14)
        s.activity(.automotive, .high)
        s.drive(seconds: 60, speed: 14)
        s.stand(seconds: 10)
        var harness = Harness()
        harness.run(s.records)
        #expect(harness.tripStarts.count == 1)
        #expect(harness.tripEnds.count == 1)
        #expect(try #require(harness.tripEnds.first).distanceMetres > 4000)
    }

    @Test func mediumOnlyAutomotiveStartsNoTrip() {
        var s = Script()
        s.activity(.automotive, .medium)
        s.drive(seconds: 15 * 60, speed: 14, turnEvery: 200)
        s.stand(seconds: 30)
        var harness = Harness()
        harness.run(s.records)
        #expect(harness.events.isEmpty)
    }

    @Test func lowConfidenceAutomotiveIsIgnoredForStarting() {
        var s = Script()
        s.activity(.automotive, .low)
        s.drive(seconds: 10 * 60, speed: 14)
        var harness = Harness()
        harness.run(s.records)
        #expect(harness.events.isEmpty)
    }

    @Test func unknownActivityIsIgnored() {
        var withUnknown = Script()
        withUnknown.activity(.automotive, .high)
        withUnknown.drive(seconds: 120, speed: 14)
        withUnknown.activity(.unknown, .high)
        withUnknown.drive(seconds: 120, speed: 14)
        var without = Script()
        without.activity(.automotive, .high)
        without.drive(seconds: 240, speed: 14)
        var a = Harness()
        a.run(withUnknown.records)
        var b = Harness()
        b.run(without.records)
        #expect(a.tripEnds.map(\.endDate) == b.tripEnds.map(\.endDate))
        #expect(a.tripEnds.count == 1)
    }

    @Test func highAutomotiveWithoutMovementStartsNoTrip() {
        // A phone in a car with the engine idling: the classifier says automotive, GPS says parked.
        var s = Script()
        s.activity(.automotive, .high)
        s.stand(seconds: 600)
        var harness = Harness()
        harness.run(s.records)
        #expect(harness.events.isEmpty)
    }

    @Test func creepingInTrafficDoesNotStartATrip() {
        // 1.5 m/s (walking pace) for ten minutes with automotive high: no movement evidence.
        var s = Script()
        s.activity(.automotive, .high)
        s.drive(seconds: 600, speed: 1.5)
        var harness = Harness()
        harness.run(s.records)
        #expect(harness.events.isEmpty)
    }

    @Test func shortHopBelowTheHysteresisStartsNoTrip() {
        // Moving a car 20 s at 6 m/s (120 m) across a car park is not a trip.
        var s = Script()
        s.activity(.automotive, .high)
        s.drive(seconds: 20, speed: 6)
        s.stand(seconds: 300)
        var harness = Harness()
        harness.run(s.records)
        #expect(harness.events.isEmpty)
    }

    @Test func driveThenWalkAwayEndsAtOnceThroughSteps() throws {
        let (script, _, lastMovement) = Self.commute(redLights: [])
        var harness = Harness()
        harness.run(script.records)
        let trip = try #require(harness.tripEnds.first)
        #expect(trip.endReason == .steps)
        #expect(trip.endDate == lastMovement, "endDate is the last movement, not the decision time")
        let decided = try #require(harness.tripEndDecisionTimes.first)
        // 15 s standing, then 25 steps at 2 a second: decided well inside the stop delay.
        #expect(decided - lastMovement < 45)
    }

    @Test func withoutPedometerOnlyTheStopDelayEndsTrips() throws {
        let (script, _, lastMovement) = Self.commute(redLights: [], pedometer: false)
        var withSteps = script
        // The device says it has no pedometer; step records that still arrive must not end the trip. It stands
        // on past the stop delay, which its own records then show.
        withSteps.stand(seconds: 200)
        for index in 0..<6 { withSteps.add(.steps(2000 + 100 * index), at: lastMovement + 30 + Double(index)) }
        withSteps.records.sort { $0.t < $1.t }
        var harness = Harness()
        harness.run(withSteps.records)
        let trip = try #require(harness.tripEnds.first)
        #expect(trip.endReason == .stopDelay)
        #expect(trip.endDate == lastMovement)
        let decided = try #require(harness.tripEndDecisionTimes.first)
        // At the first record at or after the stop delay (one a second).
        let stopDelay = DetectionSettings().stopDelay
        #expect(decided >= lastMovement + stopDelay && decided < lastMovement + stopDelay + 1)
    }

    @Test func withoutActivityClassifierTripsStartOnSustainedGPSMovement() throws {
        var s = Script()
        s.capabilities(activity: false, pedometer: true)
        s.accelerate(from: 2, to: 14, seconds: 10)
        s.drive(seconds: 600, speed: 14, turnEvery: 150)
        s.accelerate(from: 14, to: 2, seconds: 5)
        s.stand(seconds: 10)
        s.walk(seconds: 60)
        var harness = Harness()
        harness.run(s.records)
        #expect(harness.tripStarts.count == 1)
        let trip = try #require(harness.tripEnds.first)
        #expect(trip.distanceMetres > 8000)
        #expect(trip.endReason == .steps)
    }

    @Test func withoutActivityClassifierCyclingAndRunningStartNoTrip() {
        var s = Script()
        s.capabilities(activity: false, pedometer: true)
        s.drive(seconds: 900, speed: 5.6, turnEvery: 200)
        s.drive(seconds: 600, speed: 3.2)
        var harness = Harness()
        harness.run(s.records)
        #expect(harness.events.isEmpty)
    }

    @Test func parkedGPSJitterForAnHourMakesNoTripAndNoDistance() {
        var random = SplitMix64(seed: 7)
        var s = Script()
        s.activity(.automotive, .high) // the phone was last classified in the car
        s.accuracy = 15
        s.stand(seconds: 3600, jitter: 8, speedKnown: false, random: &random)
        var harness = Harness()
        harness.run(s.records)
        #expect(harness.events.isEmpty)
    }

    @Test func jitterWhileStoppedAddsNoDistanceToATrip() throws {
        var random = SplitMix64(seed: 11)
        var s = Script()
        s.activity(.automotive, .high)
        s.drive(seconds: 100, speed: 10)
        s.accuracy = 12
        s.stand(seconds: 200, jitter: 8, speedKnown: false, random: &random)
        s.accuracy = 5
        s.drive(seconds: 100, speed: 10)
        s.stand(seconds: 5)
        var harness = Harness()
        harness.run(s.records)
        let trip = try #require(harness.tripEnds.first)
        #expect(harness.tripEnds.count == 1)
        #expect(abs(trip.distanceMetres - 2000) < 60, "distance \(trip.distanceMetres)")
    }

    @Test func aDataGapEndsTheTripInsteadOfMergingIt() throws {
        var s = Script()
        s.activity(.automotive, .high)
        s.drive(seconds: 300, speed: 14)
        let lastBeforeGap = s.t
        s.silence(seconds: 200) // longer than the data-gap limit, shorter than the stop delay
        s.drive(seconds: 300, speed: 14)
        s.stand(seconds: 10)
        var harness = Harness()
        harness.run(s.records)
        #expect(harness.tripStarts.count == 2)
        #expect(harness.tripEnds.count == 2)
        let first = try #require(harness.tripEnds.first)
        #expect(first.endReason == .dataGap)
        #expect(first.endDate == lastBeforeGap)
        #expect(harness.tripStarts[1].startDate > lastBeforeGap)
    }

    /// Issue 29: records that stop mid-drive are a silent phone, not a stop: the trip ends `tripOfflineGrace` after
    /// its last record (at the end of input, time runs on to it), at its last movement, `deviceSilent`.
    @Test func silenceEndsTheTripAfterTheOfflineGraceNotTheStopDelay() throws {
        var s = Script()
        s.activity(.automotive, .high)
        s.drive(seconds: 300, speed: 14)
        let last = s.t
        var harness = Harness()
        harness.run(s.records)
        let trip = try #require(harness.tripEnds.first)
        #expect(trip.endReason == .deviceSilent)
        #expect(trip.endDate == last)
        #expect(harness.tripEndDecisionTimes == [last + DetectionSettings().tripOfflineGrace])
    }

    /// A silence shorter than the offline grace and a record after it: the stop delay passed in the device's own
    /// time, so the record ends the trip first (`stopDelay`); longer than the grace, the phone went silent.
    @Test(arguments: [(600.0, TripEndReason.stopDelay), (2000.0, TripEndReason.deviceSilent)])
    func aRecordAfterASilenceEndsTheTripByItsLength(silence: Double, reason: TripEndReason) throws {
        var s = Script()
        s.activity(.automotive, .high)
        s.drive(seconds: 300, speed: 14)
        let last = s.t
        s.silence(seconds: silence)
        s.drive(seconds: 60, speed: 14)
        var harness = Harness()
        harness.feed(s.records)
        let trip = try #require(harness.tripEnds.first)
        #expect(trip.endReason == reason && trip.endDate == last)
        #expect(harness.tripEndDecisionTimes.first == last + silence + 1, "decided at the record after the silence")
    }

    @Test func stationaryDoesNotEndATripWhileAutomotivePersists() {
        // A long queue: 6 minutes stopped, the phone reporting automotive with stationary.
        var s = Script()
        s.activity(.automotive, .high)
        s.drive(seconds: 200, speed: 14)
        for _ in 0..<12 {
            s.activity(.automotive, .medium)
            s.activity(.stationary, .medium)
            s.stand(seconds: 30)
        }
        s.drive(seconds: 200, speed: 14)
        s.stand(seconds: 5)
        var harness = Harness()
        harness.run(s.records)
        #expect(harness.tripStarts.count == 1)
        #expect(harness.tripEnds.count == 1)
    }

    @Test func stationaryAloneCountsTowardTheStopDelay() throws {
        var s = Script()
        s.activity(.automotive, .high)
        s.drive(seconds: 200, speed: 14)
        let last = s.t
        s.activity(.stationary, .high)
        s.stand(seconds: 400, every: 10)
        s.activity(.automotive, .high)
        s.drive(seconds: 200, speed: 14)
        var harness = Harness()
        harness.run(s.records)
        #expect(harness.tripStarts.count == 2)
        let first = try #require(harness.tripEnds.first)
        #expect(first.endReason == .stopDelay)
        #expect(first.endDate == last)
    }

    @Test func automotiveHoldsATripOpenNoLongerThanTheStandstillLimit() throws {
        var s = Script()
        s.activity(.automotive, .high)
        s.drive(seconds: 200, speed: 14)
        let last = s.t
        for _ in 0..<30 {
            s.activity(.automotive, .medium)
            s.stand(seconds: 60, every: 10)
        }
        var harness = Harness()
        harness.run(s.records)
        let trip = try #require(harness.tripEnds.first)
        #expect(trip.endDate == last)
        #expect(harness.tripEndDecisionTimes == [last + DetectionSettings().maximumStandstillInVehicle])
    }

    @Test func stepsWhileStoppedInTheCarDoNotEndTheTripBelowTheThreshold() {
        var s = Script()
        s.activity(.automotive, .high)
        s.drive(seconds: 200, speed: 14)
        s.stand(seconds: 60)
        s.add(.steps(1000))
        s.add(.steps(1010), at: s.t + 1) // a few spurious steps at a red light
        s.stand(seconds: 20)
        s.drive(seconds: 200, speed: 14)
        s.stand(seconds: 5)
        var harness = Harness()
        harness.run(s.records)
        #expect(harness.tripStarts.count == 1)
        #expect(harness.tripEnds.count == 1)
    }

    @Test func aPedometerResetCountsTheStepsSinceTheReset() throws {
        var s = Script()
        s.activity(.automotive, .high)
        s.drive(seconds: 200, speed: 14)
        s.stand(seconds: 5)
        s.add(.steps(5000))
        s.stand(seconds: 5)
        s.add(.steps(12)) // reset: 12 steps since
        s.stand(seconds: 5)
        s.add(.steps(30)) // 30 since the reset: past the threshold of 25
        s.stand(seconds: 5)
        var harness = Harness()
        harness.run(s.records)
        let trip = try #require(harness.tripEnds.first)
        #expect(trip.endReason == .steps)
    }
}
