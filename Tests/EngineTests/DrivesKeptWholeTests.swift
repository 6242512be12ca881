import RoadSaveModel
import Testing

@testable import DetectionEngine

/// A drive whose records fall silent while the vehicle goes on (a tunnel, a phone that pauses its GPS on a long
/// drive) stays one trip; a car that parks before its phone falls silent ends its trip as before (issue 44,
/// `TripEngine.droveThroughSilence`).
@Suite struct DrivesKeptWholeTests {
    /// Drives `before` seconds at 14 m/s, falls silent `silence` seconds, then the phone finds itself
    /// `14 × silence × share` metres on, moving, and drives 5 more minutes; GPS only (no classifier, no pedometer).
    static func drive(before: Int = 300, silence: Double, share: Double = 1, parkFirst: Bool = false) -> Script {
        var s = Script()
        s.capabilities(activity: false, pedometer: false)
        s.heading = 90
        s.accelerate(from: 2.5, to: 14, seconds: 8)
        s.drive(seconds: before, speed: 14)
        if parkFirst {
            s.accelerate(from: 14, to: 0, seconds: 6)
            s.stand(seconds: 60)
        }
        s.silence(seconds: silence)
        s.advance(metres: 14 * silence * share)
        s.drive(seconds: 300, speed: 14)
        s.accelerate(from: 14, to: 0, seconds: 6)
        s.stand(seconds: 400)
        return s
    }

    @Test func aDriveThroughFiveMinutesWithoutAFixIsOneTrip() {
        let trips = Self.drive(silence: 300).tripEnds
        #expect(trips.count == 1)
        #expect(trips.first?.endReason == .stopDelay)
        #expect((trips.first?.distanceMetres ?? 0) > 14 * 900 * 0.9, "the silence's distance counted")
    }

    @Test func aDriveThroughAStretchOfSlowTrafficWithoutAFixIsOneTrip() {
        // 12 minutes without a fix at a third of the speed (4.7 m/s on average, jams and lights included).
        let trips = Self.drive(silence: 720, share: 1.0 / 3).tripEnds
        #expect(trips.count == 1)
    }

    @Test func aCarThatParkedBeforeItsPhoneFellSilentEndsItsTrip() {
        // The phone stood still a minute before its GPS slept: the drive ended there, and the next is another.
        let trips = Self.drive(silence: 300, parkFirst: true).tripEnds
        #expect(trips.count == 2)
        #expect(trips.first?.endReason == .stopDelay || trips.first?.endReason == .dataGap)
    }

    @Test func aSilenceNoVehicleCrossesEndsTheTrip() {
        // Found only a tenth of the way a car would have gone: the vehicle did not drive on through it.
        let trips = Self.drive(silence: 600, share: 0.1).tripEnds
        #expect(trips.count == 2)
    }

    @Test func aSilenceOfMoreThanAQuarterOfAnHourIsNeverBridged() {
        let trips = Self.drive(silence: 1_200).tripEnds
        #expect(trips.count == 2)
    }
}
