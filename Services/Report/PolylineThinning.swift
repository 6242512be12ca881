/// Fewer points for a line that looks the same: Ramer–Douglas–Peucker on screen coordinates. A point is dropped
/// when it lies within `tolerance` pixels of the straight line between the points kept around it, so at half a
/// pixel the drawing cannot change visibly, however many points the recording had. The first and last points are
/// always kept, exactly: a trip's start and end are never moved.
public enum PolylineThinning {
    /// The indices of the points kept, in order.
    public static func kept(_ points: [(x: Double, y: Double)], tolerance: Double) -> [Int] {
        guard points.count > 2 else { return Array(points.indices) }
        var keep = [Bool](repeating: false, count: points.count)
        keep[0] = true
        keep[points.count - 1] = true
        // An explicit stack, not recursion: a long straight drive would otherwise recurse once per point.
        var stack = [(0, points.count - 1)]
        let squaredTolerance = tolerance * tolerance
        while let (first, last) = stack.popLast() {
            guard last - first > 1 else { continue }
            var farthest = first
            var farthestDistance = -1.0
            for index in first + 1..<last {
                let distance = squaredDistance(points[index], toSegment: points[first], points[last])
                if distance > farthestDistance {
                    farthestDistance = distance
                    farthest = index
                }
            }
            if farthestDistance > squaredTolerance {
                keep[farthest] = true
                stack.append((first, farthest))
                stack.append((farthest, last))
            }
        }
        return keep.indices.filter { keep[$0] }
    }

    /// The points kept.
    public static func thinned(_ points: [(x: Double, y: Double)], tolerance: Double) -> [(x: Double, y: Double)] {
        kept(points, tolerance: tolerance).map { points[$0] }
    }

    static func squaredDistance(
        _ p: (x: Double, y: Double), toSegment a: (x: Double, y: Double),
        _ b: (x: Double, y: Double)
    ) -> Double {
        let dx = b.x - a.x
        let dy = b.y - a.y
        let length = dx * dx + dy * dy
        var u = 0.0
        if length > 0 { u = min(1, max(0, ((p.x - a.x) * dx + (p.y - a.y) * dy) / length)) }
        let ex = p.x - (a.x + u * dx)
        let ey = p.y - (a.y + u * dy)
        return ex * ex + ey * ey
    }
}
