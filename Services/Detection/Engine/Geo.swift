#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

enum Geo {
    static let earthRadius = 6_371_008.8

    /// Great-circle distance in metres (haversine): accurate to well under a metre at GPS scales.
    static func distance(_ lat1: Double, _ lon1: Double, _ lat2: Double, _ lon2: Double) -> Double {
        let radians = Double.pi / 180
        let dLat = (lat2 - lat1) * radians
        let dLon = (lon2 - lon1) * radians
        // Each sine once (libm calls are not merged by the compiler); the same operations in the same order.
        let sinHalfLat = sin(dLat / 2)
        let sinHalfLon = sin(dLon / 2)
        let a = sinHalfLat * sinHalfLat + cos(lat1 * radians) * cos(lat2 * radians) * sinHalfLon * sinHalfLon
        return 2 * earthRadius * asin(min(1, a.squareRoot()))
    }
}
