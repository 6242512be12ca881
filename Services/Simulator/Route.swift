// Routes are generated block by block just ahead of the traveller: straights with a speed limit, corners as arcs
// whose radius bounds the speed (v ≤ √(a_lat·r)), and stops (red lights, crossings, bus stops, the destination).
// Generating lazily lets a route wrap up at the planned time, whatever happened on the way.

import Foundation

enum StopKind {
    case redLight, crossing, busStop, destination
}

struct PathElement {
    enum Shape {
        case straight
        /// A corner of `turn` radians (positive = right, clockwise) along an arc of `length` metres.
        case arc(turn: Double)
        case stop(StopKind, wait: Double)
    }

    var shape: Shape
    var length: Double
    /// Cruise speed on this element, m/s: the speed limit on straights, the cornering speed on arcs.
    var limit: Double

    static func straight(_ length: Double, limit: Double) -> PathElement {
        PathElement(shape: .straight, length: length, limit: limit)
    }

    static func arc(radius: Double, turn: Double, lateralAccel: Double, limit: Double) -> PathElement {
        PathElement(
            shape: .arc(turn: turn), length: radius * abs(turn),
            limit: min(limit, (lateralAccel * radius).squareRoot()))
    }

    static func stop(_ kind: StopKind, wait: Double) -> PathElement {
        PathElement(shape: .stop(kind, wait: wait), length: 0, limit: 0)
    }

    var isStraight: Bool {
        if case .straight = shape { return true }
        return false
    }

    var isStop: Bool {
        if case .stop = shape { return true }
        return false
    }
}

struct RouteGenerator {
    enum Style {
        case walking, running, cycling
        /// Residential, urban and arterial roads (40–60 km/h), with an optional highway stretch.
        case city
        /// An arterial road at 60–65 km/h with few corners: where the crash scenario's crash happens.
        case arterial
        case bus
    }

    let style: Style
    /// Cruise speed for walkers, runners and cyclists, m/s.
    var pace: Double
    /// After this time the next block ends at the destination.
    var finishAfter: Double
    /// Times after which the next intersection shows red (cars).
    var redLights: [Double] = []
    /// When to take the highway, and for how many metres (cars).
    var highway: (at: Double, length: Double)?
    private(set) var finished = false

    init(style: Style, pace: Double = 0, finishAfter: Double) {
        self.style = style
        self.pace = pace
        self.finishAfter = finishAfter
    }

    /// Appends the next block to `queue`.
    mutating func appendBlock(to queue: inout [PathElement], now: Double, rng: inout RandomSource) {
        guard !finished else { return }
        let turn = { (rng: inout RandomSource) -> Double in rng.sign() * rng.uniform(75, 105) * degreesToRadians }
        switch style {
        case .walking, .running:
            let running = style == .running
            if now >= finishAfter {
                queue.append(.straight(rng.uniform(10, 40), limit: pace))
                queue.append(.stop(.destination, wait: 0))
                finished = true
                return
            }
            queue.append(.straight(running ? rng.uniform(80, 400) : rng.uniform(40, 200), limit: pace))
            if rng.chance(running ? 0.15 : 0.25) {
                queue.append(.stop(.crossing, wait: running ? rng.uniform(5, 20) : rng.uniform(5, 40)))
            }
            if rng.chance(0.5) {
                queue.append(
                    .arc(
                        radius: running ? rng.uniform(3, 6) : rng.uniform(2, 4), turn: turn(&rng),
                        lateralAccel: running ? 2 : 1, limit: pace))
            }
        case .cycling:
            if now >= finishAfter {
                queue.append(.straight(rng.uniform(20, 60), limit: pace))
                queue.append(.stop(.destination, wait: 0))
                finished = true
                return
            }
            queue.append(.straight(rng.uniform(100, 500), limit: pace))
            if rng.chance(0.2) { queue.append(.stop(.redLight, wait: rng.uniform(10, 45))) }
            if rng.chance(0.4) {
                queue.append(.arc(radius: rng.uniform(5, 9), turn: turn(&rng), lateralAccel: 2, limit: pace))
            }
        case .city, .arterial:
            if now >= finishAfter {
                // Into a car park: slow down, turn in, roll into the bay.
                queue.append(.straight(rng.uniform(40, 120), limit: 8.3))
                queue.append(.arc(radius: 6, turn: turn(&rng), lateralAccel: 2.5, limit: 8.3))
                queue.append(.straight(rng.uniform(10, 25), limit: 3))
                queue.append(.stop(.destination, wait: 0))
                finished = true
                return
            }
            if let planned = highway, now >= planned.at {
                appendHighway(length: planned.length, to: &queue, rng: &rng)
                highway = nil
                return
            }
            let length: Double
            let limit: Double
            let turnChance: Double
            if style == .arterial {
                (length, limit, turnChance) = (rng.uniform(500, 1200), rng.uniform(60, 65) / 3.6, 0.15)
            } else {
                let roadClass = rng.unit()
                if roadClass < 0.3 {
                    (length, limit, turnChance) = (rng.uniform(80, 250), 40 / 3.6, 0.45)
                } else if roadClass < 0.8 {
                    (length, limit, turnChance) = (rng.uniform(150, 500), 50 / 3.6, 0.35)
                } else {
                    (length, limit, turnChance) = (rng.uniform(300, 900), 60 / 3.6, 0.25)
                }
            }
            queue.append(.straight(length, limit: limit))
            if let next = redLights.first, now >= next - 20 {
                redLights.removeFirst()
                queue.append(.stop(.redLight, wait: rng.uniform(30, 90)))
            }
            if rng.chance(turnChance) {
                queue.append(.arc(radius: rng.uniform(8, 15), turn: turn(&rng), lateralAccel: 2.5, limit: limit))
            }
        case .bus:
            // Bus stops every 400–600 m, with a corner or a red light on the way now and then.
            let limit = rng.uniform(40, 50) / 3.6
            let spacing = rng.uniform(400, 600)
            if rng.chance(0.3) {
                let first = spacing * rng.uniform(0.3, 0.7)
                queue.append(.straight(first, limit: limit))
                if rng.chance(0.3) { queue.append(.stop(.redLight, wait: rng.uniform(20, 60))) }
                let corner = PathElement.arc(
                    radius: rng.uniform(12, 18), turn: turn(&rng), lateralAccel: 1.5,
                    limit: limit)
                queue.append(corner)
                queue.append(.straight(max(20, spacing - first - corner.length), limit: limit))
            } else {
                queue.append(.straight(spacing, limit: limit))
            }
            if now >= finishAfter {
                queue.append(.stop(.destination, wait: 0))
                finished = true
            } else {
                queue.append(.stop(.busStop, wait: rng.uniform(20, 40)))
            }
        }
    }

    /// On-ramp, 100–120 km/h stretches with gentle curves, off-ramp.
    private func appendHighway(length: Double, to queue: inout [PathElement], rng: inout RandomSource) {
        queue.append(.arc(radius: 60, turn: rng.sign() * Double.pi / 2, lateralAccel: 2.5, limit: 60 / 3.6))
        queue.append(.straight(400, limit: 90 / 3.6))
        var covered = 400.0
        while covered < length {
            let stretch = rng.uniform(800, 2500)
            queue.append(.straight(stretch, limit: rng.uniform(100, 120) / 3.6))
            let curve = PathElement.arc(
                radius: 1500, turn: rng.sign() * rng.uniform(5, 15) * degreesToRadians,
                lateralAccel: 2.5, limit: 120 / 3.6)
            queue.append(curve)
            covered += stretch + curve.length
        }
        queue.append(.straight(300, limit: 70 / 3.6))
        queue.append(.arc(radius: 50, turn: rng.sign() * Double.pi / 2, lateralAccel: 2.5, limit: 50 / 3.6))
    }
}
