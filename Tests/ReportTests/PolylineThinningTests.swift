import GatewayKit
import Testing

@testable import Report

struct PolylineThinningTests {
    @Test func aStraightLineKeepsItsEnds() {
        let line = (0...1000).map { (x: Double($0), y: Double($0) * 0.5) }
        #expect(PolylineThinning.kept(line, tolerance: 0.5) == [0, 1000])
    }

    @Test func cornersAreKept() {
        let corner = (0...100).map { (x: Double($0), y: 0.0) } + (1...100).map { (x: 100.0, y: Double($0)) }
        #expect(PolylineThinning.kept(corner, tolerance: 0.5) == [0, 100, 200])
    }

    @Test func smallInputsAreKeptWhole() {
        #expect(PolylineThinning.kept([], tolerance: 0.5) == [])
        #expect(PolylineThinning.kept([(1, 1)], tolerance: 0.5) == [0])
        #expect(PolylineThinning.kept([(1, 1), (1, 1)], tolerance: 0.5) == [0, 1])
    }

    /// A long, noisy drive: far fewer points, the ends exact, and every point dropped within the tolerance of the line
    /// that is drawn.
    @Test func noPointDroppedIsFurtherThanTheTolerance() {
        var generator = SplitMix64(seed: 7)
        var points: [(x: Double, y: Double)] = []
        var x = 0.0
        var y = 0.0
        var heading = 0.0
        for _ in 0..<200_000 {
            heading += (generator.unit() - 0.5) * 0.05
            x += cos(heading) * 0.01
            y += sin(heading) * 0.01
            points.append((x + (generator.unit() - 0.5) * 0.3, y + (generator.unit() - 0.5) * 0.3))
        }
        let kept = PolylineThinning.kept(points, tolerance: 0.5)
        #expect(kept.first == 0 && kept.last == points.count - 1)
        #expect(kept.count < points.count / 20)
        for (a, b) in zip(kept, kept.dropFirst()) {
            for index in a...b {
                let distance = PolylineThinning.squaredDistance(points[index], toSegment: points[a], points[b])
                    .squareRoot()
                #expect(distance <= 0.5 + 1e-9)
                if distance > 0.5 + 1e-9 { return }
            }
        }
    }
}

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
