import RoadSaveModel
import Testing

@testable import DetectionEngine

/// The session's `tripBehaviour`: after every `tripDidEnd`, of the same trip, judged on the whole drive; a crash sent
/// for evaluation in the trip leaves it unscored (issue 31).
@Suite struct TripBehaviourScenarioTests {
    static func behaviours(_ harness: Harness) -> [TripBehaviour] {
        harness.events.compactMap { if case .tripBehaviour(let behaviour) = $0.body { behaviour } else { nil } }
    }

    /// Six minutes at 15 m/s from rest, with one hard brake (15 → 3 m/s in 3 s) in the middle, then a stop.
    static func drive(crashAtEnd: Bool = false) -> Script {
        var s = Script()
        s.activity(.automotive, .high)
        s.accelerate(from: 0, to: 15, seconds: 10)
        s.drive(seconds: 150, speed: 15)
        s.accelerate(from: 15, to: 3, seconds: 3)
        s.accelerate(from: 3, to: 15, seconds: 8)
        s.drive(seconds: 200, speed: 15)
        if crashAtEnd {
            s.t += 0.4
            s.impact(peakG: 45)
            s.t += 0.6
            s.accelerate(from: 5, to: 0, seconds: 2)
        } else {
            s.accelerate(from: 15, to: 0, seconds: 8)
        }
        s.activity(.stationary, .high)
        s.stand(seconds: 300)
        s.records.sort { $0.t < $1.t }
        return s
    }

    @Test func everyTripEndIsFollowedByHowItWasDriven() throws {
        var harness = Harness()
        harness.run(Self.drive().records)
        #expect(harness.events.map(\.name) == ["tripDidStart", "tripDidEnd", "tripBehaviour"])
        let end = try #require(harness.tripEnds.first)
        let behaviour = try #require(Self.behaviours(harness).first)
        #expect(behaviour.tripID == end.tripID && behaviour.endDate == end.endDate)
        #expect(behaviour.distanceMetres == end.distanceMetres)
        #expect(behaviour.unscored == nil && behaviour.score != nil)
        // The brake in the middle, once; the gentle start and stop are nothing.
        #expect(behaviour.events.map(\.kind) == [.hardBraking], "\(behaviour.events)")
    }

    @Test(arguments: [CrashVerdict.high, .low])
    func aCrashInTheTripLeavesItUnscored(verdict: CrashVerdict) throws {
        var harness = Harness()
        harness.verdict = { _ in .verdict(verdict) }
        harness.run(Self.drive(crashAtEnd: true).records)
        #expect(harness.crashes.count == 1)
        let behaviour = try #require(Self.behaviours(harness).first)
        #expect(behaviour.unscored == .crash && behaviour.score == nil)
    }

    /// The verdict does not change it: the services ask the platform asynchronously, so whether its answer came before
    /// the trip's end would depend on the platform's speed and outages, and `tripBehaviour` must be what replay gives.
    @Test func aCrashSentForEvaluationLeavesItUnscoredWhateverThePlatformSays() throws {
        var harness = Harness()
        harness.verdict = { _ in .verdict(.none) }
        harness.run(Self.drive(crashAtEnd: true).records)
        #expect(harness.candidates.count == 1 && harness.crashes.isEmpty)
        #expect(Self.behaviours(harness).first?.unscored == .crash)
    }

    @Test func aTestCrashDoesNotUnscoreTheTrip() throws {
        var harness = Harness()
        let script = Self.drive()
        let middle = script.records.count / 2
        harness.feed(Array(script.records[..<middle]))
        harness.record(
            try harness.session.raiseTestCrash(at: script.records[middle - 1].t), at: script.records[middle - 1].t)
        harness.feed(Array(script.records[middle...]))
        harness.finish()
        #expect(harness.crashes.map(\.isTest) == [true])
        #expect(Self.behaviours(harness).first?.unscored == nil)
    }
}
