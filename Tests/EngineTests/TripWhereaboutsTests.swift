import Foundation
import RoadSaveModel
import Testing

@testable import DetectionEngine

/// `tripDidEnd` says where the trip began and ended (the positions at `startDate` and `endDate`) and the fastest speed
/// held over two fixes in a row (`maxSpeed`), as a trip report has them.
@Suite struct TripWhereaboutsTests {
    /// The fix a record list holds at `t`.
    static func position(at t: Double, in records: [SensorRecord]) throws -> (latitude: Double, longitude: Double) {
        let record = try #require(
            records.first { $0.t == t && { if case .location = $0.payload { true } else { false } }($0) },
            "no fix at \(t)")
        guard case .location(let fix) = record.payload else { throw TestError.notAFix }
        return (fix.latitude, fix.longitude)
    }

    enum TestError: Error { case notAFix }

    static func drive(glitch: Double? = nil) -> Script {
        var s = Script()
        s.capabilities(activity: false, pedometer: false)
        s.stand(seconds: 20)
        s.accelerate(from: 2, to: 13, seconds: 6)
        s.drive(seconds: 60, speed: 13)
        if let glitch {
            // One fix with a speed no car reaches between two at 13 m/s.
            s.advance(metres: 13)
            s.t += 1
            s.fix(speed: glitch)
        }
        s.drive(seconds: 60, speed: 13)
        s.accelerate(from: 13, to: 0, seconds: 6)
        s.stand(seconds: 300)
        return s
    }

    static func trip(_ s: Script) throws -> TripInfo {
        var harness = Harness()
        harness.run(s.records)
        #expect(harness.tripEnds.count == 1)
        return try #require(harness.tripEnds.first)
    }

    @Test func aTripSaysWhereItBeganAndEnded() throws {
        let s = Self.drive()
        let trip = try Self.trip(s)
        let start = try Self.position(at: trip.startDate, in: s.records)
        let end = try Self.position(at: trip.endDate, in: s.records)
        #expect(trip.startLatitude == start.latitude && trip.startLongitude == start.longitude)
        #expect(trip.endLatitude == end.latitude && trip.endLongitude == end.longitude)
        // About 1.7 km apart: the drive, not two fixes of one place.
        let apart = Geo.distance(start.latitude, start.longitude, end.latitude, end.longitude)
        #expect(apart > 1_500 && apart <= trip.distanceMetres + 1, "\(apart) m apart, \(trip.distanceMetres) m driven")
    }

    @Test func oneWildSpeedDoesNotSetTheMaximum() throws {
        let steady = try Self.trip(Self.drive())
        #expect(steady.maxSpeed == 13)
        let glitched = try Self.trip(Self.drive(glitch: 60))
        let maximum = try #require(glitched.maxSpeed)
        #expect(maximum == 13, "one fix at 60 m/s between fixes at 13 m/s: \(maximum) m/s")
    }

    @Test func aTripWithALeadInBeginsWhereTheLeadInDid() throws {
        let s = TripLeadInTests.drive(light: 90)
        let trip = try Self.trip(s)
        let start = try Self.position(at: trip.startDate, in: s.records)
        #expect(trip.startLatitude == start.latitude && trip.startLongitude == start.longitude)
        // Before the light at 8 m/s, after it at 13 m/s: the held maximum is the second leg's.
        #expect(trip.maxSpeed == 13)
    }

    @Test func aTripThatWokeTheGPSBeginsWhereThePhoneLay() throws {
        let (s, firstFix) = SleepingGPSTests.wakeUp(walk: 0, silence: 210, away: 1_800, speed: 12)
        let trip = try Self.trip(s)
        // It set off from the last fix before the silence, not from the first fix after it.
        let lay = try #require(s.records.last { $0.t < firstFix - 100 })
        let before = try Self.position(at: lay.t, in: s.records)
        #expect(trip.startLatitude == before.latitude && trip.startLongitude == before.longitude)
    }

    @Test func theWhereaboutsSurviveACheckpoint() throws {
        let s = Self.drive()
        let whole = try Self.trip(s)
        let cut = Script.start + 20 + 6 + 30
        var first = Harness()
        first.feed(s.records.filter { $0.t <= cut })
        let stored = try JSONEncoder().encode(first.session)
        var second = Harness()
        second.session = try JSONDecoder().decode(DeviceSession.self, from: stored)
        second.run(s.records.filter { $0.t > cut })
        #expect(second.tripEnds == [whole])
    }

    @Test func aHeldSpeedNeedsTwoFixesInARow() {
        var held = HeldSpeed()
        held.add(20)
        #expect(held.maximum == nil)
        held.add(nil)
        held.add(30)
        #expect(held.maximum == nil, "a fix without a speed breaks the pair")
        held.add(10)
        #expect(held.maximum == 10)
        held.add(50)
        held.add(12)
        #expect(held.maximum == 12)
        var later = HeldSpeed()
        later.add(5)
        later.add(6)
        #expect(later.continuing(held).maximum == 12 && held.continuing(later).maximum == 12)
    }
}
