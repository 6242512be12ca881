import RoadSaveModel
import Testing

@testable import DetectionEngine

/// `crashDetected`'s details (issue 22, point 1): each computed from the crash's own records.
@Suite struct CrashDetailsTests {
    static func details(_ harness: Harness) throws -> CrashDetails {
        let crash = try #require(harness.crashes.count == 1 ? harness.crashes.first : nil)
        return try #require(crash.details)
    }

    @Test func aCrashWhileDrivingCarriesSpeedsStrengthDirectionAndTrip() throws {
        let (script, impactTime) = CrashScenarioTests.impactWhileDriving(extraImpacts: [(after: 1.5, peakG: 12)])
        var harness = Harness()
        harness.run(script.records)
        let details = try Self.details(harness)
        #expect(abs(try #require(details.speedBeforeImpact) - 15) < 0.01)
        #expect(try #require(details.speedAfterImpact) < 0.5)
        #expect(details.peakG == 45)
        #expect(details.impactDurationMs == 90)
        #expect(details.impacts == 2)
        // Heading east, as the script drives, from the fixes' course.
        #expect(details.heading == 90)
        #expect(details.positionAccuracy == 5)
        let age = try #require(details.positionAge)
        #expect(age >= 0 && age <= 1)
        #expect(details.positionTrusted)
        #expect(details.inTrip)
        #expect(details.tripID == harness.tripStarts.first?.tripID && details.tripID != nil)
        // The two fixes before the crash position's, newest first, a second apart as the script records them.
        let crash = try #require(harness.crashes.first)
        #expect(details.recentPositions.count == 2)
        let times = details.recentPositions.map(\.time)
        #expect(times[0] > times[1] && times[0] < impactTime - age + 0.001)
        #expect(details.recentPositions.allSatisfy { $0.latitude != crash.latitude || $0.longitude != crash.longitude })
        // The half-sine pulse of 45 g over 90 ms on top of gravity: Δv ≈ 45 · 2/π · 0.09 · g, a little less for the
        // part of the pulse below 2 g.
        let expected = 45 * 2 / Double.pi * 0.09 * ImpactReadings.gravity
        let deltaV = try #require(details.deltaV)
        #expect(deltaV > expected * 0.9 && deltaV <= expected * 1.01)
    }

    @Test func deltaVIsTheImpactsAccelerationLessGravityOverItsDuration() throws {
        // 10 g along x for 100 ms at 1 kHz, gravity on z throughout: Δv = 10 g · 0.1 s.
        let rest = (-500..<0).map { ImpactSample(dt: Double($0) / 1000, x: 0, y: 0, z: 1) }
        let pulse = (0..<100).map { ImpactSample(dt: Double($0) / 1000, x: 10, y: 0, z: 1) }
        let after = (100..<600).map { ImpactSample(dt: Double($0) / 1000, x: 0, y: 0, z: 1) }
        let deltaV = try #require(ImpactReadings.deltaV(samples: rest + pulse + after))
        #expect(abs(deltaV - 1.0 * ImpactReadings.gravity) < 0.01)
        // Without samples, the drop in GPS speed; without either speed, unknown.
        #expect(ImpactReadings.deltaV(samples: [], speedBefore: 15, speedAfter: 2) == 13)
        #expect(ImpactReadings.deltaV(samples: [], speedBefore: 15, speedAfter: nil) == nil)
        #expect(ImpactReadings.deltaV(samples: [], speedBefore: 3, speedAfter: 5) == 0)
    }

    @Test func withoutACourseTheHeadingIsTheBearingOfTheLastMovement() throws {
        var (script, _) = CrashScenarioTests.impactWhileDriving()
        script.records = script.records.map { record in
            guard case .location(var fix) = record.payload else { return record }
            fix.course = nil
            return SensorRecord(device: record.device, seq: record.seq, t: record.t, payload: .location(fix))
        }
        var harness = Harness()
        harness.run(script.records)
        let heading = try #require(try Self.details(harness).heading)
        #expect(abs(heading - 90) < 0.5, "driving east: \(heading)")
        // North-west, from two positions.
        let a = AcceptedFix(t: 0, latitude: 0, longitude: 0, speed: nil, accuracy: 5, isMovement: false)
        let b = AcceptedFix(t: 1, latitude: 0.001, longitude: -0.001, speed: nil, accuracy: 5, isMovement: false)
        #expect(abs(ImpactReadings.bearing(from: a, to: b) - 315) < 0.1)
    }

    @Test func anOldFixIsNotTrusted() throws {
        // Driving, then no fix for 60 s (a tunnel) with the classifier still saying automotive, then the impact.
        var s = Script()
        s.activity(.automotive, .high)
        s.drive(seconds: 120, speed: 15)
        let lastFix = s.t
        for _ in 0..<6 {
            s.t += 10
            s.activity(.automotive, .high)
        }
        s.t += 0.5
        s.impact(peakG: 40)
        s.t += 1
        s.activity(.stationary, .high)
        s.stand(seconds: 60)
        var harness = Harness()
        harness.run(s.records)
        let details = try Self.details(harness)
        #expect(abs(try #require(details.positionAge) - (s.records.first { $0.kind == .impact }!.t - lastFix)) < 0.001)
        #expect(!details.positionTrusted)
        #expect(details.speedBeforeImpact == nil)
    }

    @Test func aPoorFixIsNotTrusted() throws {
        var settings = DetectionSettings()
        settings.crashPositionTrustedAccuracy = 30
        var s = Script()
        s.accuracy = 40
        s.activity(.automotive, .high)
        s.drive(seconds: 120, speed: 15)
        s.t += 0.4
        s.impact(peakG: 40)
        s.accelerate(from: 5, to: 0, seconds: 2)
        s.stand(seconds: 60)
        var harness = Harness(settings: settings)
        harness.run(s.records)
        let details = try Self.details(harness)
        #expect(details.positionAccuracy == 40)
        #expect(try #require(details.positionAge) <= 1)
        #expect(!details.positionTrusted)
        // The same fixes are trusted where the rule allows 50 m.
        settings.crashPositionTrustedAccuracy = 50
        var lenient = Harness(settings: settings)
        lenient.run(s.records)
        #expect(try Self.details(lenient).positionTrusted)
    }

    @Test func noFixIsNoPositionAndNotTrusted() throws {
        // Only the classifier: a car without location permission.
        var s = Script()
        for _ in 0..<12 {
            s.t += 10
            s.activity(.automotive, .high)
        }
        s.t += 0.5
        s.impact(peakG: 40)
        s.t += 30
        s.activity(.stationary, .high)
        var harness = Harness()
        harness.run(s.records)
        let crash = try #require(harness.crashes.first)
        let details = try #require(crash.details)
        #expect(crash.latitude == nil && crash.longitude == nil)
        #expect(details.positionAccuracy == nil && details.positionAge == nil && details.heading == nil)
        #expect(!details.positionTrusted)
        #expect(details.recentPositions.isEmpty)
        #expect(!details.inTrip && details.tripID == nil)
    }

    /// Driving, then five minutes without a fix (the classifier still reporting), then an impact: the script up to
    /// the impact, and the times of the drive's fixes.
    static func impactAfterAGPSGap() -> (script: Script, fixTimes: [Double]) {
        var s = Script()
        s.activity(.automotive, .high)
        s.drive(seconds: 120, speed: 15)
        let fixTimes = s.records.filter { $0.kind == .location }.map(\.t)
        for _ in 0..<30 {
            s.t += 10
            s.activity(.automotive, .high)
        }
        s.t += 0.5
        s.impact(peakG: 40)
        return (s, fixTimes)
    }

    @Test func recentPositionsReachAcrossAGPSGap() throws {
        // The crash position is the last fix before the gap, and the two before it are still known, however old.
        var (s, driveFixes) = Self.impactAfterAGPSGap()
        let fixTimes = driveFixes.suffix(3)
        // No fix after it either: the position is the last one known.
        for _ in 0..<6 {
            s.t += 10
            s.activity(.stationary, .high)
        }
        var harness = Harness()
        harness.run(s.records)
        let crash = try #require(harness.crashes.first)
        let details = try Self.details(harness)
        let lastFix = try #require(s.records.last { $0.kind == .location })
        guard case .location(let fix) = lastFix.payload else { return }
        #expect(crash.latitude == fix.latitude && crash.longitude == fix.longitude)
        #expect(details.recentPositions.map(\.time) == Array(fixTimes.dropLast().reversed()))
        #expect(!details.positionTrusted)
        #expect(try #require(details.positionAge) > 300)
    }

    @Test func recentPositionsReachAcrossAGPSGapWithFixesAfterTheImpact() throws {
        // The same gap, but the phone finds its fix again a second after the impact and goes on giving one a second:
        // the crash position is that first fix after the impact, and the two before it are the last two before the
        // gap, kept while the crash waits for its decision although the fixes after it are trimmed.
        var (s, driveFixes) = Self.impactAfterAGPSGap()
        let beforeGap = driveFixes.suffix(2)
        let impactTime = s.t
        s.activity(.stationary, .high)
        s.stand(seconds: 40)
        var harness = Harness()
        harness.run(s.records)
        let crash = try #require(harness.crashes.first)
        let details = try Self.details(harness)
        let firstAfter = try #require(s.records.first { $0.kind == .location && $0.t > impactTime })
        guard case .location(let fix) = firstAfter.payload else { return }
        #expect(crash.latitude == fix.latitude && crash.longitude == fix.longitude)
        #expect(details.recentPositions.map(\.time) == Array(beforeGap.reversed()))
        #expect(try #require(details.positionAge) == firstAfter.t - impactTime)
    }
}
