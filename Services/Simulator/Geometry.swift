// Positions. Each device moves in a local tangent plane (metres east/north of where it started) and is converted to
// WGS84 only when a fix is reported. Over the few tens of kilometres a device covers, the equirectangular
// approximation is accurate to well under a metre, far below GPS noise.

import Foundation

/// A WGS84 position in degrees.
public struct Coordinate: Sendable, Codable, Equatable {
    public var latitude: Double
    public var longitude: Double

    public init(latitude: Double, longitude: Double) {
        self.latitude = latitude
        self.longitude = longitude
    }

    /// Cape Town city centre, the default origin.
    public static let capeTown = Coordinate(latitude: -33.9249, longitude: 18.4241)
}

/// Metres east and north of a frame's origin.
struct Point: Equatable {
    var east: Double
    var north: Double

    /// Moves `distance` metres along `heading` (radians clockwise from north).
    mutating func move(_ distance: Double, heading: Double) {
        east += distance * sin(heading)
        north += distance * cos(heading)
    }

    func distance(to other: Point) -> Double {
        let dx = other.east - east
        let dy = other.north - north
        return (dx * dx + dy * dy).squareRoot()
    }
}

/// A local tangent plane around `origin`.
struct LocalFrame {
    static let earthRadius = 6_371_008.8

    let origin: Coordinate
    let metresPerDegreeLatitude: Double
    let metresPerDegreeLongitude: Double

    init(origin: Coordinate) {
        self.origin = origin
        metresPerDegreeLatitude = Self.earthRadius * Double.pi / 180
        metresPerDegreeLongitude = metresPerDegreeLatitude * cos(origin.latitude * Double.pi / 180)
    }

    func coordinate(of point: Point) -> Coordinate {
        Coordinate(
            latitude: origin.latitude + point.north / metresPerDegreeLatitude,
            longitude: origin.longitude + point.east / metresPerDegreeLongitude)
    }
}

/// A heading in radians as compass degrees in [0, 360).
func compassDegrees(_ radians: Double) -> Double {
    var degrees = (radians * 180 / Double.pi).truncatingRemainder(dividingBy: 360)
    if degrees < 0 { degrees += 360 }
    return degrees >= 360 ? 0 : degrees
}

let degreesToRadians = Double.pi / 180
/// Standard gravity, m/s² per g.
let standardGravity = 9.80665
