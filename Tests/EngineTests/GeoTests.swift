import Testing

@testable import DetectionEngine

/// The shortcuts the GPS filter and the odometer take around the haversine must not change a single result:
/// the bound must never be below the distance (else a jump could be let through), and a distance computed from
/// cached cosines or reused from the filter must have the same bits as one computed afresh.
@Suite struct GeoTests {
    /// A small deterministic generator (the same points every run).
    struct Points {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        mutating func next() -> Double {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Double(state >> 11) / Double(1 << 53)
        }
    }

    @Test func boundIsNeverBelowTheDistance() {
        var random = Points()
        // Nearby points at every scale from millimetres to hundreds of kilometres, everywhere on the globe,
        // and far-apart ones.
        for _ in 0..<200_000 {
            let lat1 = random.next() * 180 - 90
            let lon1 = random.next() * 360 - 180
            let scale = [1e-8, 1e-6, 1e-4, 1e-2, 1, 100][Int(random.next() * 6)]
            let lat2 = min(90, max(-90, lat1 + (random.next() * 2 - 1) * scale))
            let lon2 = lon1 + (random.next() * 2 - 1) * scale
            let distance = Geo.distance(lat1, lon1, lat2, lon2)
            let bound = Geo.distanceBound(lat1, lon1, lat2, lon2)
            #expect(
                bound >= distance,
                "bound \(bound) below distance \(distance) for (\(lat1), \(lon1)) – (\(lat2), \(lon2))")
        }
        #expect(Geo.distanceBound(10, 20, 10, 20) == 0)
        #expect(Geo.distanceBound(.nan, 20, 10, 20).isNaN)
    }

    @Test func cachedCosinesGiveTheSameBits() {
        var random = Points()
        for _ in 0..<50_000 {
            let lat1 = random.next() * 180 - 90
            let lon1 = random.next() * 360 - 180
            let lat2 = lat1 + (random.next() * 2 - 1) * 0.01
            let lon2 = lon1 + (random.next() * 2 - 1) * 0.01
            let fresh = Geo.distance(lat1, lon1, lat2, lon2)
            let cached = Geo.distance(lat1, lon1, Geo.cosLatitude(lat1), lat2, lon2, Geo.cosLatitude(lat2))
            #expect(fresh.bitPattern == cached.bitPattern)
        }
    }

    /// The measurement the filter hands on: reused for the fix before, computed for any other, the same bits as
    /// `AcceptedFix.distance(to:)` either way, with or without the filter having computed the distance.
    @Test func measurementDistancesMatchFreshOnes() {
        func fix(_ t: Double, _ latitude: Double, _ longitude: Double) -> AcceptedFix {
            AcceptedFix(t: t, latitude: latitude, longitude: longitude, speed: 10, accuracy: 5, isMovement: true)
        }
        let previous = fix(0, -33.9125745, 18.4091634)
        let current = fix(1, -33.9126871, 18.4093012)
        let other = fix(-5, -33.9101, 18.4051)
        var measurement = FixMeasurement()
        measurement.cosLatitude = Geo.cosLatitude(current.latitude)
        measurement.previousLatitude = previous.latitude
        measurement.previousLongitude = previous.longitude
        measurement.previousCosLatitude = Geo.cosLatitude(previous.latitude)
        // Not computed by the filter (the bound cleared the fix).
        #expect(
            measurement.distance(from: current, to: previous).bitPattern == current.distance(to: previous).bitPattern)
        #expect(measurement.distance(from: current, to: other).bitPattern == current.distance(to: other).bitPattern)
        #expect(measurement.distance(to: current, from: other).bitPattern == other.distance(to: current).bitPattern)
        // Computed by the filter.
        measurement.distanceFromPrevious = Geo.distance(
            current.latitude, current.longitude, measurement.cosLatitude,
            previous.latitude, previous.longitude,
            measurement.previousCosLatitude)
        #expect(
            measurement.distance(from: current, to: previous).bitPattern == current.distance(to: previous).bitPattern)
    }
}
