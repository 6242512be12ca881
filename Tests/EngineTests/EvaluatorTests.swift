import RoadSaveModel
import Testing

@testable import DetectionEngine

@Suite struct EvaluatorTests {
    func candidate(
        peakG: Double, durationMs: Double? = 90, before: Double? = 15, after: Double? = 0,
        activity: String = "inVehicle", trip: Bool = true, impacts: Int = 1
    ) -> CrashCandidate {
        CrashCandidate(
            crashID: "c", app: "a", user: "u", time: 0, latitude: 0, longitude: 0, positionAccuracy: 5,
            speedBefore: before, speedAfter: after, peakG: peakG, durationMs: durationMs,
            impactCount: impacts, activity: activity, tripInProgress: trip, isTest: false, samples: [])
    }

    @Test func everyVerdictIsReachable() {
        let evaluator = CrashEvaluator()
        // 3 (≥30 g) + 1 (≥40 ms) + 2 (≥50 km/h) + 2 (stopped) + 1 (in a vehicle) = 9
        #expect(evaluator.verdict(for: candidate(peakG: 45)) == .high)
        // 2 + 1 + 1 (≥25 km/h) + 2 + 1 = 7
        #expect(evaluator.verdict(for: candidate(peakG: 20, before: 8)) == .medium)
        // 1 + 0 + 1 + 2 + 1 = 5
        #expect(evaluator.verdict(for: candidate(peakG: 9, durationMs: 20, before: 8)) == .low)
        // 0 + 0 + 0 + 0 + 0 = 0
        #expect(
            evaluator.verdict(
                for: candidate(peakG: 5, durationMs: 10, before: 3, after: 3, activity: "none", trip: false)) == .none)
    }

    @Test func eachFeatureAddsToTheScore() {
        let evaluator = CrashEvaluator()
        let base = evaluator.score(
            candidate(peakG: 9, durationMs: 20, before: 8, after: 5, activity: "none", trip: false))
        #expect(
            evaluator.score(candidate(peakG: 31, durationMs: 20, before: 8, after: 5, activity: "none", trip: false))
                == base + 2)
        #expect(
            evaluator.score(candidate(peakG: 9, durationMs: 50, before: 8, after: 5, activity: "none", trip: false))
                == base + 1)
        #expect(
            evaluator.score(candidate(peakG: 9, durationMs: 20, before: 20, after: 5, activity: "none", trip: false))
                == base + 1)
        #expect(
            evaluator.score(candidate(peakG: 9, durationMs: 20, before: 8, after: 0, activity: "none", trip: false))
                == base + 2)
        #expect(
            evaluator.score(candidate(peakG: 9, durationMs: 20, before: 8, after: nil, activity: "none", trip: false))
                == base + 1)
        #expect(
            evaluator.score(
                candidate(peakG: 9, durationMs: 20, before: 8, after: 5, activity: "inVehicle", trip: false)) == base
                + 1)
        #expect(
            evaluator.score(
                candidate(peakG: 9, durationMs: 20, before: 8, after: 5, activity: "none", trip: false, impacts: 2))
                == base + 1)
    }

    @Test func freeFallDetectionNeedsASustainedStretch() {
        let settings = DetectionSettings()
        #expect(
            CrashEngine.hasFreeFall(
                before: Script.impactSamples(peakG: 20, durationMs: 10, freeFall: 0.6), settings: settings))
        #expect(
            !CrashEngine.hasFreeFall(
                before: Script.impactSamples(peakG: 20, durationMs: 10, freeFall: 0.1), settings: settings))
        #expect(
            !CrashEngine.hasFreeFall(
                before: Script.impactSamples(peakG: 45, durationMs: 90, freeFall: 0), settings: settings))
        #expect(!CrashEngine.hasFreeFall(before: [], settings: settings))
    }
}
