#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

enum Geo {
    static let earthRadius = 6_371_008.8

    /// The cosine of a latitude in degrees, as `distance` uses it: a fix's is computed once and reused for every
    /// distance it is part of (the same libm call on the same value, so the same bits).
    static func cosLatitude(_ latitude: Double) -> Double {
        cos(latitude * (Double.pi / 180))
    }

    /// Great-circle distance in metres (haversine): accurate to well under a metre at GPS scales.
    static func distance(_ lat1: Double, _ lon1: Double, _ lat2: Double, _ lon2: Double) -> Double {
        distance(lat1, lon1, cosLatitude(lat1), lat2, lon2, cosLatitude(lat2))
    }

    /// An upper bound of `distance` between the same points, without trigonometry: in `distance`,
    /// sin²(x/2) ≤ (x/2)² and cos·cos ≤ 1 make a ≤ (dLat² + dLon²)/4, and asin(y) ≤ (π/2)·y on [0, 1] (asin is
    /// convex there), so the distance is at most (π/2)·R·√(dLat² + dLon²); 1.6 instead of π/2 leaves ~2 % for
    /// rounding, a million times what the operations can lose. NaN or infinite when the coordinates are.
    static func distanceBound(_ lat1: Double, _ lon1: Double, _ lat2: Double, _ lon2: Double) -> Double {
        let radians = Double.pi / 180
        let dLat = (lat2 - lat1) * radians
        let dLon = (lon2 - lon1) * radians
        return 1.6 * earthRadius * (dLat * dLat + dLon * dLon).squareRoot()
    }

    /// The same, with both latitudes' cosines given (`cosLatitude`): the same operations in the same order.
    static func distance(
        _ lat1: Double, _ lon1: Double, _ cos1: Double,
        _ lat2: Double, _ lon2: Double, _ cos2: Double
    ) -> Double {
        let radians = Double.pi / 180
        let dLat = (lat2 - lat1) * radians
        let dLon = (lon2 - lon1) * radians
        // Each sine once (libm calls are not merged by the compiler).
        let sinHalfLat = sin(dLat / 2)
        let sinHalfLon = sin(dLon / 2)
        let a = sinHalfLat * sinHalfLat + cos1 * cos2 * sinHalfLon * sinHalfLon
        return 2 * earthRadius * asin(min(1, a.squareRoot()))
    }
}
