import Foundation
import RoadSaveModel
import Testing

@testable import DetectionEngine

/// `stillWhileMoving` (docs/detection.md "Passengers"): the phone's activity classifier calling it stationary for
/// much of a ride while the vehicle moves is a carriage on rails, which runs smoothly; a car on a road shakes the
/// phone into automotive. Reports while the vehicle stands (a red light, a station) do not count.
@Suite struct StillWhileMovingTests {
    /// Walk 5 minutes, then ride at 15 m/s in `rounds` stretches of 30 s, each after a report of `report(round)`,
    /// and stop (with a red light after every `standEvery` stretches, when it is above 0).
    static func ride(rounds: Int, report: (Int) -> ActivityType, standEvery: Int = 0) throws -> TripInfo {
        try CoarsePositionsAboardTests.sharpWalkThenRide { s in
            for round in 0..<rounds {
                s.activity(report(round), .medium)
                s.drive(seconds: 30, speed: 15)
                if standEvery > 0, round % standEvery == standEvery - 1 {
                    // A stop at a red light, the classifier saying still while the vehicle stands.
                    s.accelerate(from: 15, to: 0, seconds: 6)
                    s.stand(seconds: 10)
                    s.activity(.stationary, .high)
                    s.stand(seconds: 30)
                    s.activity(.automotive, .high)
                    s.accelerate(from: 2.5, to: 15, seconds: 6)
                }
            }
        }
    }

    @Test func aRideTheClassifierCallsStillWhileItMovesIsRail() throws {
        // Half of the reports on the move say stationary: a metro on the surface.
        let trip = try Self.ride(rounds: 16) { $0.isMultiple(of: 2) ? .stationary : .automotive }
        #expect(trip.transportMode == .rail && trip.transportReason == .stillWhileMoving)
        #expect(trip.transportSigns == [.stillWhileMoving])
        #expect(!trip.isDriving)
    }

    @Test func aCarTheClassifierCallsStillAtEveryRedLightIsACar() throws {
        // Twenty stops, each reported stationary while the car stands (a third of all reports): none on the move.
        let trip = try Self.ride(rounds: 20, report: { _ in .automotive }, standEvery: 1)
        #expect(trip.transportMode == .car && !trip.transportSigns.contains(.stillWhileMoving))
    }

    @Test func aFewStillReportsOnTheMoveAreNoSign() throws {
        // Under the share: 5 of 20 reports on the move (a smooth motorway).
        let underShare = try Self.ride(rounds: 20) { $0 % 4 == 0 ? .stationary : .automotive }
        #expect(underShare.transportMode == .car && underShare.transportSigns.isEmpty)
        // Over the share but under the count: 4 of 8 (too few reports to judge by).
        let underCount = try Self.ride(rounds: 8) { $0.isMultiple(of: 2) ? .stationary : .automotive }
        #expect(underCount.transportMode == .car && underCount.transportSigns.isEmpty)
    }

    @Test func aRideCheckpointedBeforeReportsWereCountedShowsNoSign() throws {
        // A ride stored by a version that did not count reports on the move decodes with none counted: no sign.
        var ride = RideProfile()
        ride.add(AcceptedFix(t: 0, latitude: 60.17, longitude: 24.94, speed: 15, accuracy: 5, isMovement: true))
        for second in 1...6 { ride.activityReported(.stationary, at: Double(second)) }
        var stored = try #require(
            try JSONSerialization.jsonObject(with: JSONEncoder().encode(ride)) as? [String: Any])
        #expect(stored["reportsWhileMoving"] as? Int == 6 && stored["stillReportsWhileMoving"] as? Int == 6)
        stored["reportsWhileMoving"] = nil
        stored["stillReportsWhileMoving"] = nil
        let old = try JSONDecoder().decode(RideProfile.self, from: JSONSerialization.data(withJSONObject: stored))
        #expect(!old.signs(distance: 5_000, duration: 600).contains(.stillWhileMoving))
        #expect(ride.signs(distance: 5_000, duration: 600).contains(.stillWhileMoving))
    }
}
