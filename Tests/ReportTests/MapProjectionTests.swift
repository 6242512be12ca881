import Testing

@testable import Report

struct MapProjectionTests {
    /// Cape Town, where the simulator drives.
    let bounds: GeoBounds = {
        var bounds = GeoBounds()
        bounds.include(latitude: -33.95, longitude: 18.40)
        bounds.include(latitude: -33.90, longitude: 18.48)
        return bounds
    }()

    @Test func northIsUpAndEastIsRight() {
        let projection = MapProjection(bounds: bounds, width: 960, height: 520, padding: 36)
        let south = projection.point(latitude: -33.95, longitude: 18.44)
        let north = projection.point(latitude: -33.90, longitude: 18.44)
        let west = projection.point(latitude: -33.92, longitude: 18.40)
        let east = projection.point(latitude: -33.92, longitude: 18.48)
        #expect(north.y < south.y)
        #expect(east.x > west.x)
    }

    @Test func aKilometreIsAsLongEastWestAsNorthSouth() {
        let projection = MapProjection(bounds: bounds, width: 960, height: 520, padding: 36)
        let latitude = -33.925
        let degreesNorth = 1000 / MapProjection.metresPerDegree
        let degreesEast = degreesNorth / cos(latitude * .pi / 180)
        let origin = projection.point(latitude: latitude, longitude: 18.44)
        let north = projection.point(latitude: latitude + degreesNorth, longitude: 18.44)
        let east = projection.point(latitude: latitude, longitude: 18.44 + degreesEast)
        let northPixels = origin.y - north.y
        let eastPixels = east.x - origin.x
        #expect(abs(northPixels - eastPixels) / northPixels < 0.001)
        #expect(abs(projection.metresPerPixel * northPixels - 1000) < 0.5)
    }

    @Test func theBoundsFitInsideThePaddingCentred() {
        let projection = MapProjection(bounds: bounds, width: 960, height: 520, padding: 36)
        let corners = [(-33.95, 18.40), (-33.90, 18.40), (-33.95, 18.48), (-33.90, 18.48)]
            .map { projection.point(latitude: $0.0, longitude: $0.1) }
        for corner in corners {
            #expect(corner.x >= 36 - 1e-9 && corner.x <= 960 - 36 + 1e-9)
            #expect(corner.y >= 36 - 1e-9 && corner.y <= 520 - 36 + 1e-9)
        }
        // The box touches the padding on one axis at least, and is centred on both.
        let xs = corners.map(\.x)
        let ys = corners.map(\.y)
        #expect(abs((xs.min()! + xs.max()!) / 2 - 480) < 1e-6)
        #expect(abs((ys.min()! + ys.max()!) / 2 - 260) < 1e-6)
        #expect(abs(xs.min()! - 36) < 1e-6 || abs(ys.min()! - 36) < 1e-6)
    }

    @Test func aParkedPhoneIsNotBlownUpToFillTheMap() {
        var bounds = GeoBounds()
        bounds.include(latitude: -33.92, longitude: 18.42)
        bounds.include(latitude: -33.92001, longitude: 18.42001)
        let projection = MapProjection(bounds: bounds, width: 960, height: 520, padding: 36, minimumSpanMetres: 200)
        // 200 m fill the 448 px between the paddings at most.
        #expect(abs(projection.metresPerPixel - 200.0 / 448) < 1e-9)
        let single = MapProjection(bounds: GeoBounds(), width: 960, height: 520, padding: 36)
        #expect(single.pixelsPerDegree.isFinite && single.pixelsPerDegree > 0)
    }
}

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
