import GatewayKit
import RoadSaveModel
import Testing

@testable import DetectionEngine

/// Fixes that must not count: invalid or poor accuracy, impossible jumps, duplicates.
@Suite struct GPSFilterTests {
    func accept(
        _ track: inout GPSTrack, t: Double, lat: Double, lon: Double, speed: Double? = 10,
        accuracy: Double? = 5
    ) -> Result<AcceptedFix, FixRejection> {
        track.accept(
            LocationFix(latitude: lat, longitude: lon, speed: speed, horizontalAccuracy: accuracy),
            at: t, settings: DetectionSettings())
    }

    @Test func invalidAndInaccurateFixesAreRejected() {
        var track = GPSTrack()
        #expect(accept(&track, t: 0, lat: 0, lon: 0, accuracy: -1) == .failure(.invalidFix))
        #expect(accept(&track, t: 1, lat: 0, lon: 0, accuracy: 65) == .failure(.poorAccuracy))
        #expect((try? accept(&track, t: 2, lat: 0, lon: 0, accuracy: nil).get())?.accuracy == GPSTrack.assumedAccuracy)
    }

    @Test func aRepeatedTimeIsADuplicate() {
        var track = GPSTrack()
        _ = accept(&track, t: 10, lat: -33.9, lon: 18.4)
        #expect(accept(&track, t: 10, lat: -33.9, lon: 18.4) == .failure(.duplicate))
    }

    @Test func aJumpAtAnImpossibleSpeedIsRejectedUntilTheNewPlaceIsConfirmed() {
        var track = GPSTrack()
        _ = accept(&track, t: 0, lat: -33.9, lon: 18.4)
        // 0.01° of latitude (1.1 km) in one second.
        #expect(accept(&track, t: 1, lat: -33.89, lon: 18.4) == .failure(.implausibleJump))
        #expect(accept(&track, t: 2, lat: -33.89, lon: 18.4) == .failure(.implausibleJump))
        // The third fix in a row at the new place is believed (the old one was the bad fix).
        #expect((try? accept(&track, t: 3, lat: -33.89, lon: 18.4).get()) != nil)
        #expect(track.recent.count == 1)
    }

    @Test func speedIsEstimatedFromDisplacementWhenNotReportedAndJitterReadsAsZero() throws {
        var track = GPSTrack()
        for second in 0...10 {
            _ = accept(&track, t: Double(second), lat: -33.9, lon: 18.4 + Double(second) * 0.00015, speed: nil)
        }
        // 0.00015° of longitude at 33.9° S is 13.8 m: 138 m in 10 s, less twice the combined accuracy (14 m).
        let moving = try #require(track.last)
        #expect(abs(moving.speed! - (138.4 - 14.1) / 10) < 0.2)
        #expect(moving.isMovement)

        var parked = GPSTrack()
        var random = SplitMix64(seed: 5)
        for second in 0...60 {
            let (lat, lon) = Script.moved(-33.9, 18.4, north: random.gaussian() * 4, east: random.gaussian() * 4)
            _ = accept(&parked, t: Double(second), lat: lat, lon: lon, speed: nil)
        }
        #expect(parked.recent.allSatisfy { !$0.isMovement })
    }

    @Test func theHistoryKeepsWhatCanStillBeReadAndTheLastPositionBeforeIt() {
        var track = GPSTrack()
        func add(_ t: Double) {
            _ = track.accept(
                LocationFix(latitude: -33.9, longitude: 18.4 + t * 1e-6, speed: 0, horizontalAccuracy: 5),
                at: t, settings: DetectionSettings(), keepingFrom: t - 30)
        }
        // A fix a minute (a phone saving battery): with the new one, only the newest two before the cutoff stay
        // (a crash now would be reported with the new one's position and those two).
        for t in stride(from: 0.0, through: 1200, by: 60) { add(t) }
        #expect(Array(track.recent.map(\.t).suffix(GPSTrack.crashPositionsKept)) == [1080, 1140, 1200])
        #expect(!track.recent.contains { $0.t < 900 }, "old fixes were dropped")
        #expect(track.recent.count <= GPSTrack.crashPositionsKept + GPSTrack.trimBatch)
        // Then one a second: everything from the cutoff on and the newest fix before it, no more (the crash positions
        // are all after the cutoff); stale fixes go in small batches.
        for t in 1201...1300 { add(Double(t)) }
        let times = track.recent.map(\.t)
        #expect(Array(times.suffix(31)) == (1270...1300).map(Double.init), "everything from the cutoff on")
        #expect(times.prefix(while: { $0 < 1270 }).count >= 1)
        #expect(times.count <= 31 + 1 + GPSTrack.trimBatch)
    }

    @Test func aCrashWaitingForItsDecisionKeepsTheFixesItIsReportedWith() {
        // A fix a second until 100, none until an impact at 300, then one a second again: while the crash waits
        // for its decision, the three newest fixes at or before the impact stay (its position may be the first fix
        // after it, reported with the two before); without a crash waiting, they go with the rest.
        func fixesUntil300(pendingImpact: Double?) -> [Double] {
            var track = GPSTrack()
            func add(_ t: Double, pendingImpact: Double?) {
                _ = track.accept(
                    LocationFix(latitude: -33.9, longitude: 18.4 + t * 1e-6, speed: 0, horizontalAccuracy: 5),
                    at: t, settings: DetectionSettings(), keepingFrom: t - 30, pendingImpact: pendingImpact)
            }
            for t in 0...100 { add(Double(t), pendingImpact: nil) }
            for t in 301...400 { add(Double(t), pendingImpact: pendingImpact) }
            return track.recent.map(\.t).filter { $0 <= 300 }
        }
        #expect(fixesUntil300(pendingImpact: 300) == [98, 99, 100])
        #expect(fixesUntil300(pendingImpact: nil) == [])
    }

    @Test func aCrashLongAfterTheLastFixStillGetsThatPosition() throws {
        // Driving, then a tunnel: no fix for 100 s before the impact. The position sent is the last one known.
        var script = Script()
        script.activity(.automotive, .high)
        script.drive(seconds: 120, speed: 15)
        let lastFix = try #require(script.records.last { if case .location = $0.payload { true } else { false } })
        script.silence(seconds: 100)
        script.impact(peakG: 45)
        script.silence(seconds: 30)
        script.activity(.stationary, .high)
        var harness = Harness()
        harness.run(script.records)
        let candidate = try #require(harness.candidates.first)
        guard case .location(let fix) = lastFix.payload else { return }
        #expect(candidate.latitude == fix.latitude && candidate.longitude == fix.longitude)
    }

    @Test func badFixesDoNotStartTripsOrAddDistance() throws {
        // A drive whose every fifth fix jumps 500 m sideways, with invalid and inaccurate fixes mixed in.
        var clean = Script()
        clean.activity(.automotive, .high)
        clean.drive(seconds: 600, speed: 14)
        clean.stand(seconds: 5)
        var noisy = clean
        noisy.records = []
        for (index, record) in clean.records.enumerated() {
            noisy.records.append(record)
            guard case .location(let fix) = record.payload, index % 5 == 0 else { continue }
            let (lat, lon) = Script.moved(fix.latitude, fix.longitude, north: 500, east: 0)
            var jump = record
            jump.t += 0.5
            jump.seq = nil
            jump.payload = .location(LocationFix(latitude: lat, longitude: lon, speed: 14, horizontalAccuracy: 5))
            var invalid = jump
            invalid.t += 0.1
            invalid.payload = .location(LocationFix(latitude: lat, longitude: lon, speed: 40, horizontalAccuracy: -1))
            var vague = jump
            vague.t += 0.2
            vague.payload = .location(LocationFix(latitude: lat, longitude: lon, speed: 40, horizontalAccuracy: 300))
            noisy.records += [jump, invalid, vague]
        }
        var a = Harness()
        a.run(clean.records)
        var b = Harness()
        b.run(noisy.records)
        let cleanTrip = try #require(a.tripEnds.first)
        let noisyTrip = try #require(b.tripEnds.first)
        #expect(abs(cleanTrip.distanceMetres - 8400) < 20)
        #expect(abs(noisyTrip.distanceMetres - cleanTrip.distanceMetres) < 1, "\(noisyTrip.distanceMetres)")

        // Only invalid or inaccurate fixes: no movement evidence at all.
        var bad = Script()
        bad.activity(.automotive, .high)
        bad.accuracy = 120
        bad.drive(seconds: 600, speed: 14)
        var c = Harness()
        c.run(bad.records)
        #expect(c.events.isEmpty)
    }
}
