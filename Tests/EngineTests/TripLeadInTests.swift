import Foundation
import RoadSaveModel
import Testing

@testable import DetectionEngine

/// A red light longer than `startRunBreak` before the evidence is complete breaks the movement run, not the drive:
/// the trip started later begins where the broken run did, with its distance (`TripEngine.LeadIn`), as long as the
/// stop was shorter than the stop delay and the run moved like a vehicle.
@Suite struct TripLeadInTests {
    /// Moving off at `Script.start + 20`: `firstLeg` seconds at 8 m/s (too slow and short for a GPS-only start),
    /// `light` seconds at rest, then away at 13 m/s for a minute.
    static func drive(firstLegSpeed: Double = 8, firstLeg: Int = 20, light: Int) -> Script {
        var s = Script()
        s.capabilities(activity: false, pedometer: false)
        s.stand(seconds: 20)
        s.accelerate(from: 2, to: firstLegSpeed, seconds: 4)
        s.drive(seconds: firstLeg, speed: firstLegSpeed)
        s.accelerate(from: firstLegSpeed, to: 0, seconds: 4)
        s.stand(seconds: light)
        s.accelerate(from: 2, to: 13, seconds: 6)
        s.drive(seconds: 60, speed: 13)
        s.accelerate(from: 13, to: 0, seconds: 6)
        s.stand(seconds: 30)
        return s
    }

    static func trip(_ s: Script) throws -> (TripStartInfo, TripInfo) {
        var harness = Harness()
        harness.run(s.records)
        #expect(harness.tripStarts.count == 1 && harness.tripEnds.count == 1)
        return (try #require(harness.tripStarts.first), try #require(harness.tripEnds.first))
    }

    @Test func aTripStartedAfterALongRedLightBeginsWhereTheDriveDid() throws {
        let movedOff = Script.start + 21
        let (start, end) = try Self.trip(Self.drive(light: 90))
        #expect(abs(start.startDate - movedOff) <= 1, "started \(start.startDate - movedOff) s after moving off")
        #expect(end.startDate == start.startDate)
        // About 200 m before the light (4 + 20 + 4 s at up to 8 m/s), about 860 m after it.
        #expect(end.distanceMetres > 1_000, "the first leg's distance is counted: \(end.distanceMetres) m")
    }

    @Test func aStopLongerThanTheStopDelayStartsAfresh() throws {
        let s = Self.drive(light: 300)
        let restartedAt = Script.start + 20 + 4 + 20 + 4 + 300 + 1
        let (start, end) = try Self.trip(s)
        #expect(abs(start.startDate - restartedAt) <= 1, "started \(start.startDate - restartedAt) s after the restart")
        #expect(end.distanceMetres < 950, "only the drive after the stop: \(end.distanceMetres) m")
    }

    @Test func aJogBeforeTheDriveIsNoLeadIn() throws {
        // 3 m/s is movement but never the start speed of 4 m/s: a run across a car park, not a drive.
        let s = Self.drive(firstLegSpeed: 3, firstLeg: 60, light: 90)
        let drivenOff = Script.start + 20 + 4 + 60 + 4 + 90 + 1
        let (start, _) = try Self.trip(s)
        #expect(abs(start.startDate - drivenOff) <= 1, "started \(start.startDate - drivenOff) s after driving off")
    }

    @Test func theLeadInSurvivesACheckpoint() throws {
        // Stopped at the light when the state is stored and restored: the trip still begins at moving off.
        let s = Self.drive(light: 90)
        let lightAt = Script.start + 20 + 4 + 20 + 4 + 70
        var first = Harness()
        first.feed(s.records.filter { $0.t <= lightAt })
        let stored = try JSONEncoder().encode(first.session)
        var second = Harness()
        second.session = try JSONDecoder().decode(DeviceSession.self, from: stored)
        second.run(s.records.filter { $0.t > lightAt })
        let start = try #require(second.tripStarts.first)
        #expect(abs(start.startDate - (Script.start + 21)) <= 1)
    }
}
