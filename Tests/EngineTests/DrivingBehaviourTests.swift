import Foundation
import RoadSaveModel
import Testing

@testable import DetectionEngine

/// The behaviour engine on scripted GPS (issue 31): every noise case the issue names, and the manoeuvres it must see.
@Suite struct DrivingBehaviourTests {
    /// A drive narrated as speeds (m/s) and courses, one fix every `interval` seconds, positions following them.
    struct Drive {
        var t = 1_772_433_000.0
        var latitude = 52.0
        var longitude = 5.0
        var course = 90.0
        var accuracy = 5.0
        var fixes: [AcceptedFix] = []

        mutating func fix(speed: Double, course: Double? = nil, after interval: Double = 1) {
            t += interval
            if let course { self.course = course }
            let radians = self.course * .pi / 180
            latitude += speed * interval * cos(radians) / 111_320
            longitude += speed * interval * sin(radians) / (111_320 * cos(latitude * .pi / 180))
            fixes.append(
                AcceptedFix(
                    t: t, latitude: latitude, longitude: longitude, speed: speed, accuracy: accuracy,
                    isMovement: speed >= 2, course: self.course))
        }

        mutating func cruise(_ seconds: Int, at speed: Double, every interval: Double = 1) {
            for _ in 0..<Int(Double(seconds) / interval) { fix(speed: speed, after: interval) }
        }

        /// Changes speed at `rate` m/s² from `from` to `to`, a fix a second, then holds `to` a few seconds.
        mutating func change(from: Double, to: Double, rate: Double) {
            var speed = from
            while abs(to - speed) > 1e-9 {
                speed = rate < 0 ? max(to, speed + rate) : min(to, speed + rate)
                fix(speed: speed)
            }
            cruise(5, at: to)
        }

        func behaviour(settings: BehaviourSettings = BehaviourSettings()) -> DrivingBehaviour {
            var engine = DrivingBehaviour()
            for fix in fixes { engine.add(fix, settings: settings) }
            return engine
        }

        func judged(
            mode: TransportMode = .car, crashed: Bool = false, settings: BehaviourSettings = BehaviourSettings()
        )
            -> TripBehaviour
        {
            let duration = (fixes.last?.t ?? t) - (fixes.first?.t ?? t)
            let distance = zip(fixes, fixes.dropFirst()).reduce(0.0) { $0 + $1.0.distance(to: $1.1) }
            return behaviour(settings: settings).judge(
                tripID: "trip-1", endDate: fixes.last?.t ?? t, distance: distance,
                duration: duration, mode: mode, crashed: crashed,
                settings: settings)
        }
    }

    /// Ten minutes at 15 m/s around `middle`.
    static func drive(_ middle: (inout Drive) -> Void) -> Drive {
        var drive = Drive()
        drive.cruise(300, at: 15)
        middle(&drive)
        drive.cruise(300, at: 15)
        return drive
    }

    @Test func aSmoothDriveHasNoEventsAndAFullEventsScore() throws {
        let judged = Self.drive { _ in }.judged()
        #expect(judged.unscored == nil && judged.events.isEmpty)
        #expect(judged.eventsScore == 100)
        #expect(try #require(judged.score) > 90)
    }

    @Test func aBriefBrakeAtThreeAndAHalfSampledAtOneHertzIsExactlyOneEvent() {
        // 2.3 s at −3.5 m/s² from 15 m/s: fixes at 1 s see −3.5, −3.5 and the last 0.3 s (8.05 m/s lost).
        let judged = Self.drive { d in
            d.fix(speed: 11.5)
            d.fix(speed: 8.0)
            d.fix(speed: 6.95)
            d.change(from: 6.95, to: 15, rate: 1.5)
        }.judged()
        #expect(judged.events.map(\.kind) == [.hardBraking])
        #expect(judged.events.first?.severity == .harsh)
        #expect(judged.events.first.map { abs($0.peak - -3.5) < 1e-9 } == true)
    }

    @Test func aGentleStopIsNothing() {
        let judged = Self.drive { d in
            d.change(from: 15, to: 0, rate: -2)
            d.cruise(20, at: 0)
            d.change(from: 0, to: 15, rate: 1.5)
        }.judged()
        #expect(judged.events.isEmpty)
    }

    @Test func aHardStopIsBrakingAndAFastGetawayIsAcceleration() {
        let judged = Self.drive { d in
            d.change(from: 15, to: 0, rate: -5)
            d.cruise(20, at: 0)
            d.change(from: 0, to: 15, rate: 3)
        }.judged()
        #expect(judged.events.map(\.kind) == [.hardBraking, .hardAcceleration])
        #expect(judged.events.map(\.severity) == [.severe, .harsh])
        #expect(judged.count(of: .hardBraking, severity: .severe) == 1)
    }

    @Test func aOneFixSpeedSpikeIsNoEvent() {
        let judged = Self.drive { d in d.fix(speed: 30) }.judged()
        #expect(judged.events.isEmpty)
    }

    @Test func duplicateTimestampsAreNoEvent() {
        var drive = Self.drive { _ in }
        // A fix repeated at the same time with a very different speed.
        var repeated = drive.fixes[400]
        repeated.speed = 3
        drive.fixes.insert(repeated, at: 401)
        #expect(drive.judged().events.isEmpty)
    }

    @Test func aPairImplyingMoreThanACarCanDoIsAGlitchNeverAnEvent() {
        // Two fixes a second apart 9 m/s apart, twice (the median keeps them): 9 m/s² is a glitch.
        let judged = Self.drive { d in
            d.fix(speed: 6)
            d.fix(speed: 6)
            d.fix(speed: 15)
        }.judged()
        #expect(judged.events.isEmpty)
    }

    @Test func aGPSGapInTheMiddleOfABrakeBreaksTheRun() {
        // −4 m/s² for one pair, four seconds without a fix, −4 m/s² for one pair: no run of two pairs either side.
        let judged = Self.drive { d in
            d.fix(speed: 15)
            d.fix(speed: 11)
            d.fix(speed: 11, after: 0.0001) // the median's neighbour
            d.fix(speed: 7, after: 4)
            d.fix(speed: 3)
            d.cruise(10, at: 3)
            d.change(from: 3, to: 15, rate: 1)
        }.judged()
        #expect(judged.count(of: .hardBraking) == 0)
    }

    @Test func tenSecondFixesAreUnscoredAsSparse() {
        var drive = Drive()
        drive.cruise(900, at: 15, every: 10)
        let judged = drive.judged()
        #expect(judged.unscored == .sparseGPS && judged.score == nil)
    }

    @Test func aCourseWrappingRoundNorthIsNoCornering() {
        var drive = Drive()
        for index in 0..<600 { drive.fix(speed: 20, course: index % 2 == 0 ? 359 : 1) }
        let judged = drive.judged()
        #expect(judged.count(of: .sharpCornering) == 0)
        #expect(DrivingBehaviour.turn(from: 359, to: 1) == 2 && DrivingBehaviour.turn(from: 1, to: 359) == -2)
    }

    @Test func aCourseSwingingNearRestBreaksNoBrake() {
        // From 8 m/s at −4 to 1.5 m/s, the course turning round on the last pair (2.75 m/s on average: 8.6 m/s²
        // "lateral" if it counted): one hard brake, not a glitch that cuts it to one pair.
        let judged = Self.drive { d in
            d.change(from: 15, to: 8, rate: -1)
            d.fix(speed: 4, course: 90)
            d.fix(speed: 1.5, course: 270)
            d.fix(speed: 0, course: 270)
            d.cruise(10, at: 0)
            d.change(from: 0, to: 15, rate: 1)
        }.judged()
        #expect(judged.events.map(\.kind) == [.hardBraking])
    }

    @Test func aRightAngleTakenFastIsSharpCornering() {
        // 90° in 3 s at 11 m/s: 11 × (π/6) ≈ 5.8 m/s² lateral, severe.
        let judged = Self.drive { d in
            d.change(from: 15, to: 11, rate: -1)
            d.fix(speed: 11, course: 120)
            d.fix(speed: 11, course: 150)
            d.fix(speed: 11, course: 180)
            d.cruise(10, at: 11)
            d.change(from: 11, to: 15, rate: 1)
        }.judged()
        #expect(judged.events.map(\.kind) == [.sharpCornering])
        #expect(judged.events.first?.severity == .severe)
    }

    @Test func excessiveSpeedHeld29SecondsIsNoneAnd31IsOne() {
        var settings = BehaviourSettings()
        settings.speedLimit = 26.5
        for (held, expected) in [(29, 0), (31, 1)] {
            let judged = Self.drive { d in
                // 27 m/s from the last fix of the speed-up, 5 s more in `change`, and on: `held` seconds in all.
                d.change(from: 15, to: 27, rate: 1)
                d.cruise(held - 5, at: 27)
                d.change(from: 27, to: 15, rate: -1)
            }.judged(settings: settings)
            #expect(judged.count(of: .excessiveSpeed) == expected, "held \(held) s")
        }
    }

    @Test func theSameManoeuvreTwiceWithinTenSecondsCountsOnce() {
        let judged = Self.drive { d in
            d.change(from: 15, to: 9, rate: -3.5)
            d.change(from: 9, to: 3, rate: -3.5)
            d.change(from: 3, to: 15, rate: 1)
        }.judged()
        #expect(judged.count(of: .hardBraking) == 1)
    }

    @Test(arguments: [(TransportMode.bus, UnscoredReason.notCar), (.rail, .notCar), (.unknown, .tooShort)])
    func aTripNotDrivenByCarIsUnscoredWithItsReason(mode: TransportMode, reason: UnscoredReason) {
        let judged = Self.drive { _ in }.judged(mode: mode)
        #expect(judged.unscored == reason && judged.score == nil)
    }

    @Test func aTripWithACrashIsUnscored() {
        #expect(Self.drive { _ in }.judged(crashed: true).unscored == .crash)
    }

    @Test func harderDrivingScoresLower() throws {
        let calm = Self.drive { d in
            for _ in 0..<5 {
                d.change(from: 15, to: 8, rate: -1.5)
                d.change(from: 8, to: 15, rate: 1)
            }
        }.judged()
        let harsh = Self.drive { d in
            for _ in 0..<5 {
                d.change(from: 15, to: 8, rate: -3.5)
                d.change(from: 8, to: 15, rate: 2.8)
            }
        }.judged()
        #expect(calm.events.isEmpty && harsh.count(of: .hardBraking) == 5 && harsh.count(of: .hardAcceleration) == 5)
        #expect(try #require(harsh.score) < #require(calm.score))
        #expect(try #require(harsh.longitudinalRMS) > #require(calm.longitudinalRMS))
    }

    @Test func eachSubscoreHalvesAtItsSettingAndTheScoreIsTheirProduct() throws {
        let drive = Self.drive { d in
            for _ in 0..<3 {
                d.change(from: 15, to: 8, rate: -3.5)
                d.change(from: 8, to: 15, rate: 1)
            }
        }
        let judged = drive.judged()
        let rate = try #require(judged.eventsPer100Kilometres)
        let spread = try #require(judged.longitudinalRMS)
        #expect(judged.count(of: .hardBraking) == 3 && rate > 0 && spread > 0)
        var settings = BehaviourSettings()
        settings.eventsHalvingRate = rate
        settings.smoothnessHalvingRMS = spread
        let halved = drive.judged(settings: settings)
        let eventsScore = try #require(halved.eventsScore)
        let smoothnessScore = try #require(halved.smoothnessScore)
        #expect(abs(eventsScore - 50) < 1e-9 && abs(smoothnessScore - 50) < 1e-9)
        #expect(abs(try #require(halved.score) - 25) < 1e-9)
    }

    @Test func lateralSpreadCountsOnlyWhereItsWeightSaysSo() throws {
        let weaving = Self.drive { d in
            for turn in 0..<20 { d.fix(speed: 15, course: turn.isMultiple(of: 2) ? 80 : 100) }
        }
        let straight = Self.drive { d in d.cruise(20, at: 15) }
        var settings = BehaviourSettings()
        settings.lateralWeight = 1
        let ignored = weaving.judged()
        let counted = weaving.judged(settings: settings)
        #expect(try #require(ignored.lateralRMS) > 0.5)
        // By default the weaving drive is as smooth as the straight one; weighed in, its lateral spread costs.
        #expect(ignored.smoothnessScore == straight.judged().smoothnessScore)
        #expect(try #require(counted.smoothnessScore) < #require(ignored.smoothnessScore))
    }

    @Test func aCheckpointInTheMiddleOfATripChangesNothing() throws {
        let drive = Self.drive { d in
            d.change(from: 15, to: 0, rate: -5)
            d.change(from: 0, to: 15, rate: 3)
        }
        let settings = BehaviourSettings()
        for cut in [300, 303, 305, 320] {
            var first = DrivingBehaviour()
            for fix in drive.fixes[..<cut] { first.add(fix, settings: settings) }
            var second = try JSONDecoder().decode(DrivingBehaviour.self, from: JSONEncoder().encode(first))
            for fix in drive.fixes[cut...] { second.add(fix, settings: settings) }
            #expect(second == drive.behaviour(settings: settings), "cut at \(cut)")
        }
    }
}
