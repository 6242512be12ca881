import DetectionEngine
import Foundation
import Replay
import RoadSaveModel
import Simulator
import Testing

/// Simulated drivers of known styles through the whole replay path: the same drivers on the same roads (one seed),
/// calm, normal and aggressive, scored in that order, their harsh manoeuvres found where the simulator's truth has
/// them (issue 31).
@Suite struct DrivingStyleTests {
    struct Drive {
        var behaviour: TripBehaviour
        var truth: [ManoeuvreTruth]
    }

    /// Each commuter's driving trip (`tripBehaviour`) in `style`, by user, with the car's true manoeuvres.
    static func drives(_ style: String) async -> [String: Drive] {
        let options = SimulationOptions(
            devices: 8, seed: 7, durationMinutes: 45, scenario: "commute",
            drivingStyleName: style)
        let (lines, truth) = simulate(options)
        let replayed = await SimulatedFleetTests().replay(lines)
        var drives: [String: Drive] = [:]
        for event in replayed.events {
            guard case .tripBehaviour(let behaviour) = event.body else { continue }
            let manoeuvres = truth.first { $0.user == event.device.user }?.manoeuvres ?? []
            #expect(drives[event.device.user] == nil, "one drive per commuter")
            drives[event.device.user] = Drive(behaviour: behaviour, truth: manoeuvres)
        }
        return drives
    }

    @Test func theSameDriversOnTheSameRoadsScoreInTheOrderOfTheirStyles() async throws {
        let calm = await Self.drives("calm")
        let normal = await Self.drives("normal")
        let aggressive = await Self.drives("aggressive")
        var compared = 0
        for (user, drive) in calm {
            guard let calmScore = drive.behaviour.score, let normalScore = normal[user]?.behaviour.score,
                let aggressiveScore = aggressive[user]?.behaviour.score
            else { continue }
            compared += 1
            #expect(
                calmScore > normalScore && normalScore > aggressiveScore,
                "\(user): calm \(calmScore), normal \(normalScore), aggressive \(aggressiveScore)")
            // The style is in the driving, not the road: the truth has more harsh manoeuvres the harder the style.
            #expect(drive.truth.count < aggressive[user]!.truth.count, "\(user)")
        }
        #expect(compared >= 6, "drives scored in all three styles: \(compared)")
        // Every unscored trip says why.
        for drives in [calm, normal, aggressive] {
            for drive in drives.values where drive.behaviour.score == nil { #expect(drive.behaviour.unscored != nil) }
        }
    }

    @Test func harshManoeuvresAreFoundWhereTheTruthHasThem() async throws {
        let aggressive = await Self.drives("aggressive")
        var found = 0
        var truths = 0
        var detected = 0
        for drive in aggressive.values where drive.behaviour.unscored == nil {
            let events = drive.behaviour.events.filter { $0.kind != .excessiveSpeed }
            detected += events.count
            truths += drive.truth.count
            var matched = Set<Int>()
            for event in events {
                // The same kind, overlapping the true manoeuvre (2 s either side: the fixes come once a second).
                if let index = drive.truth.indices.first(where: { index in
                    !matched.contains(index) && drive.truth[index].kind == event.kind.rawValue
                        && event.start <= drive.truth[index].end + 2 && event.end >= drive.truth[index].start - 2
                }) {
                    matched.insert(index)
                    found += 1
                }
            }
        }
        #expect(truths > 50, "the aggressive drivers brake and accelerate harshly: \(truths) true manoeuvres")
        // Precision: nearly every event found is a true manoeuvre; recall: most true manoeuvres are found (two of
        // the same kind within 10 s are one event, and GPS at 1 Hz smooths the shortest).
        #expect(Double(found) >= 0.9 * Double(detected), "\(found) of \(detected) events are true manoeuvres")
        #expect(Double(found) >= 0.6 * Double(truths), "\(found) of \(truths) true manoeuvres found")
        print(
            "driving styles: aggressive drivers, \(found) of \(detected) events true, \(found) of \(truths) true manoeuvres found"
        )
        // The bends taken too fast (motorway ramps at 4.2 m/s² lateral): each found, and no other turn.
        let corners = aggressive.values.filter { $0.behaviour.unscored == nil }
        let trueCorners = corners.flatMap { $0.truth.filter { $0.kind == "sharpCornering" } }
        let foundCorners = corners.flatMap { $0.behaviour.events.filter { $0.kind == .sharpCornering } }
        #expect(
            !trueCorners.isEmpty && foundCorners.count == trueCorners.count,
            "\(foundCorners.count) sharp corners found, \(trueCorners.count) true")
    }

    @Test func calmDriversHaveNoHarshManoeuvres() async throws {
        for drive in await Self.drives("calm").values where drive.behaviour.unscored == nil {
            #expect(drive.behaviour.events.count <= 1, "\(drive.behaviour.events)")
            #expect(drive.truth.count <= 2)
        }
    }
}
