#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The smallest box of latitudes and longitudes holding every point added.
public struct GeoBounds: Sendable, Equatable {
    public private(set) var minLatitude = Double.infinity
    public private(set) var maxLatitude = -Double.infinity
    public private(set) var minLongitude = Double.infinity
    public private(set) var maxLongitude = -Double.infinity

    public init() {}

    public var isEmpty: Bool { minLatitude > maxLatitude }

    public mutating func include(latitude: Double, longitude: Double) {
        guard latitude.isFinite, longitude.isFinite else { return }
        minLatitude = min(minLatitude, latitude)
        maxLatitude = max(maxLatitude, latitude)
        minLongitude = min(minLongitude, longitude)
        maxLongitude = max(maxLongitude, longitude)
    }
}

/// Latitude and longitude to the pixels of a map `width` × `height`: equirectangular, longitudes scaled by the cosine
/// of the middle latitude so that a metre is as long east-west as north-south (true enough over a city or a region;
/// a track across the antimeridian or a pole is not handled). The bounds are fitted inside `padding` and centred;
/// north is up. Bounds smaller than `minimumSpanMetres` (a parked phone) are widened to it around their centre, so a
/// few metres of jitter do not fill the map.
public struct MapProjection: Sendable, Equatable {
    public static let metresPerDegree = 111_320.0

    public let width: Double
    public let height: Double
    private let centreLatitude: Double
    private let centreLongitude: Double
    private let cosine: Double
    /// Pixels per degree of latitude (and per degree of longitude times `cosine`).
    public let pixelsPerDegree: Double

    public init(bounds: GeoBounds, width: Double, height: Double, padding: Double, minimumSpanMetres: Double = 200) {
        self.width = width
        self.height = height
        if bounds.isEmpty {
            centreLatitude = 0
            centreLongitude = 0
        } else {
            centreLatitude = (bounds.minLatitude + bounds.maxLatitude) / 2
            centreLongitude = (bounds.minLongitude + bounds.maxLongitude) / 2
        }
        cosine = max(cos(centreLatitude * .pi / 180), 0.01)
        let minimumSpan = minimumSpanMetres / Self.metresPerDegree
        let spanX =
            bounds.isEmpty ? minimumSpan : max((bounds.maxLongitude - bounds.minLongitude) * cosine, minimumSpan)
        let spanY = bounds.isEmpty ? minimumSpan : max(bounds.maxLatitude - bounds.minLatitude, minimumSpan)
        pixelsPerDegree = min(max(width - 2 * padding, 1) / spanX, max(height - 2 * padding, 1) / spanY)
    }

    public func x(longitude: Double) -> Double { width / 2 + (longitude - centreLongitude) * cosine * pixelsPerDegree }
    public func y(latitude: Double) -> Double { height / 2 - (latitude - centreLatitude) * pixelsPerDegree }

    public func point(latitude: Double, longitude: Double) -> (x: Double, y: Double) {
        (x(longitude: longitude), y(latitude: latitude))
    }

    /// Ground metres one pixel covers.
    public var metresPerPixel: Double { Self.metresPerDegree / pixelsPerDegree }
}
