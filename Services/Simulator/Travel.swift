// Moving along a route. A speed controller looks ahead along the route and brakes in time for corners, lower limits
// and stops (v ≤ √(v_next² + 2·b·d)), accelerates within the traveller's limits (cars ≤ 3 m/s²), and integrates
// position along the heading, turning through corners. Events planned by the scenario (bumps, hard brakes, a
// crash, phone drops) fire once they are due and the situation allows them (for example a crash needs 50–70 km/h).

import Foundation

enum TravelMode {
    case walking, running, cycling, car, bus

    var name: String {
        switch self {
        case .walking: return "walking"
        case .running: return "running"
        case .cycling: return "cycling"
        case .car: return "car"
        case .bus: return "bus"
        }
    }

    var movingContext: MotionContext {
        switch self {
        case .walking: return .walking
        case .running: return .running
        case .cycling: return .cycling
        case .car, .bus: return .vehicleMoving
        }
    }

    var stoppedContext: MotionContext {
        switch self {
        case .car, .bus: return .vehicleStopped
        case .walking, .running, .cycling: return .still
        }
    }
}

/// How a traveller accelerates and brakes.
struct MotionProfile {
    var maxAccel: Double
    /// Loss of available acceleration per m/s of speed (engines run out of push at speed).
    var accelFalloff: Double
    /// Deceleration planned for when approaching corners and stops.
    var planDecel: Double
    /// Hardest ordinary braking.
    var maxDecel: Double
    /// Preferred fraction of the limit, and a slow wander around it (Gauss–Markov).
    var speedFactor: Double
    var fluctuationSigma: Double
    var fluctuationTau: Double
    /// Speed through bends over their comfortable speed (1: as the road allows).
    var cornerSpeedFactor = 1.0

    func acceleration(at speed: Double) -> Double { max(0.5, maxAccel - accelFalloff * speed) }

    /// A car driver of `style`: three draws whatever the style, so that the rest of the device's story is the same.
    static func driver(rng: inout RandomSource, style: DrivingStyle = .normal) -> MotionProfile {
        let maxAccel = rng.uniform(style.maxAccel.lowerBound, style.maxAccel.upperBound)
        let planDecel = rng.uniform(style.planDecel.lowerBound, style.planDecel.upperBound)
        let speedFactor = rng.uniform(style.speedFactor.lowerBound, style.speedFactor.upperBound)
        return MotionProfile(
            maxAccel: maxAccel, accelFalloff: 0.045, planDecel: planDecel, maxDecel: style.maxDecel,
            speedFactor: speedFactor, fluctuationSigma: 0.7, fluctuationTau: 12,
            cornerSpeedFactor: style.cornerSpeedFactor)
    }

    static func busDriver(rng: inout RandomSource) -> MotionProfile {
        MotionProfile(
            maxAccel: 1.2, accelFalloff: 0.02, planDecel: 1.3, maxDecel: 3, speedFactor: rng.uniform(0.9, 1.0),
            fluctuationSigma: 0.4, fluctuationTau: 15)
    }

    static let walker = MotionProfile(
        maxAccel: 0.8, accelFalloff: 0, planDecel: 0.8, maxDecel: 1.5, speedFactor: 1,
        fluctuationSigma: 0.05, fluctuationTau: 10)
    static let runner = MotionProfile(
        maxAccel: 1.5, accelFalloff: 0, planDecel: 1.5, maxDecel: 2.5, speedFactor: 1,
        fluctuationSigma: 0.1, fluctuationTau: 10)
    static let cyclist = MotionProfile(
        maxAccel: 1.0, accelFalloff: 0.05, planDecel: 1.5, maxDecel: 3, speedFactor: 1,
        fluctuationSigma: 0.3, fluctuationTau: 10)
}

struct PlannedEvent {
    enum Kind {
        /// A pothole or speed bump; `cause` names it in the truth.
        case bump(peakG: ClosedRange<Double>, cause: String)
        case hardBrake
        case crash
        case drop(standing: Bool)
    }

    var at: Double
    var kind: Kind
}

enum TravelOutcome {
    case arrived, crashed, timeUp
}

/// A forced slow-down to a standstill that overrides the speed controller: an emergency stop, or a walker stopping
/// to pick up a dropped phone.
struct SpeedOverride {
    var deceleration: Double
    /// Emergency braking builds up over 0.25 s from this time; nil for an immediate deceleration.
    var rampFrom: Double?
    var holdSeconds: Double
    var stoppedAt: Double?
    /// A drop while standing happens this long after coming to rest.
    var dropAfterStop: Double?
    /// Index into truth.hardBrakes to complete when stopped.
    var hardBrakeIndex: Int?
}

/// Accumulates the truth of one leg from the simulated motion.
struct LegTracker {
    let mode: TravelMode
    var start: Int64?
    var lastMove: Int64 = 0
    var distance = 0.0
    var maxSpeed = 0.0
    var startCoordinate = Coordinate(latitude: 0, longitude: 0)
    var endCoordinate = Coordinate(latitude: 0, longitude: 0)
    /// Set by `travel` just before it returns: `arrived`, `crash` or `simulationEnd`.
    var endReason = "arrived"

    init(mode: TravelMode) {
        self.mode = mode
    }
}

extension DeviceSim {
    mutating func travel(
        _ mode: TravelMode, profile: MotionProfile, route: inout RouteGenerator,
        events: [PlannedEvent] = [], pace: Double = 1, cadence: Double = 0
    ) -> TravelOutcome {
        var queue: [PathElement] = []
        var head = 0
        var offset = 0.0
        var queuedLength = 0.0
        var travelled = 0.0
        var pending = events.sorted { $0.at < $1.at }
        var fluctuation = 0.0
        var speedOverride: SpeedOverride?
        var leg = LegTracker(mode: mode)
        // The car's manoeuvres beyond the harsh thresholds, for the truth (only a car's: its driver is the user).
        var manoeuvres = ManoeuvreTracker()
        var corners = ManoeuvreTracker()
        let phi = exp(-1 / profile.fluctuationTau)
        let innovation = (1 - phi * phi).squareRoot() * profile.fluctuationSigma
        let dt = DeviceSim.tickSeconds
        let movingThreshold = mode == .car || mode == .bus ? 0.1 : 0.3
        // How far ahead the controller plans: enough to stop from the fastest speed of the mode.
        let lookahead: Double
        switch mode {
        case .car: lookahead = 450
        case .bus: lookahead = 250
        case .cycling: lookahead = 100
        case .walking, .running: lookahead = 60
        }
        var wrappedUp = false
        defer {
            finishLeg(leg)
            if mode == .car {
                manoeuvres.close()
                corners.close()
                truth.manoeuvres += (manoeuvres.found + corners.found).sorted { $0.start < $1.start }
            }
        }

        while true {
            if timeUp {
                leg.endReason = "simulationEnd"
                return .timeUp
            }
            // Time to wrap up: forget the route planned beyond the current element (cutting a straight short, but
            // not closer than the braking distance) so the destination follows soon rather than blocks later.
            if !wrappedUp, !route.finished, now >= route.finishAfter, head < queue.count {
                wrappedUp = true
                var current = queue[head]
                if current.isStraight {
                    let needed = speed * speed / (2 * profile.planDecel) + (mode == .car ? 30 : 5)
                    current.length = min(current.length, offset + needed)
                    queue[head] = current
                }
                queue.removeSubrange((head + 1)...)
                queuedLength = travelled - offset + current.length
            }
            while !route.finished, queuedLength - travelled < lookahead {
                let before = queue.count
                route.appendBlock(to: &queue, now: now, rng: &rng)
                for element in queue[before...] { queuedLength += element.length }
            }
            guard head < queue.count else {
                leg.endReason = "arrived"
                return .arrived
            }
            let element = queue[head]
            if case .stop(let kind, let wait) = element.shape {
                speed = 0
                if kind == .destination {
                    leg.endReason = "arrived"
                    return .arrived
                }
                hold(wait, mode.stoppedContext)
                head += 1
                offset = 0
                continue
            }
            if mode == .car || mode == .bus, element.limit > 25 {
                gps.environment = .openSky
            } else if gps.environment == .openSky {
                gps.environment = .urban
            }

            // Planned events, once due and possible.
            if speedOverride == nil, let event = pending.first, now >= event.at {
                let left = element.length - offset
                switch event.kind {
                case .bump(let peakG, let cause):
                    if speed >= 30 / 3.6 {
                        pending.removeFirst()
                        hitBump(peakG: peakG, cause: cause)
                    }
                case .hardBrake:
                    if element.isStraight, speed >= 12, left >= speed * speed / 14 + 10 {
                        pending.removeFirst()
                        speedOverride = startHardBrake()
                    }
                case .crash:
                    if element.isStraight, speed >= 50 / 3.6, speed <= 70 / 3.6, left >= 20 {
                        pending.removeFirst()
                        crash(leg: &leg)
                        leg.endReason = "crash"
                        return .crashed
                    }
                case .drop(let standing):
                    if speed >= 1.0 {
                        pending.removeFirst()
                        if standing {
                            speedOverride = SpeedOverride(
                                deceleration: 1.2, rampFrom: nil,
                                holdSeconds: rng.uniform(6, 12), stoppedAt: nil,
                                dropAfterStop: rng.uniform(2, 5), hardBrakeIndex: nil)
                        } else {
                            dropPhone(walkingCadence: cadence)
                            speedOverride = SpeedOverride(
                                deceleration: 1.5, rampFrom: nil,
                                holdSeconds: rng.uniform(3, 8), stoppedAt: nil,
                                dropAfterStop: nil, hardBrakeIndex: nil)
                        }
                    }
                }
            }

            if tick % DeviceSim.ticksPerSecond == 0 {
                fluctuation = phi * fluctuation + innovation * rng.gaussian()
            }

            var newSpeed: Double
            var stopDistance: Double?
            if var forced = speedOverride {
                if let stoppedAt = forced.stoppedAt {
                    newSpeed = 0
                    if let after = forced.dropAfterStop, now - stoppedAt >= after {
                        dropPhone(walkingCadence: nil)
                        forced.dropAfterStop = nil
                    }
                    speedOverride = now - stoppedAt >= forced.holdSeconds ? nil : forced
                } else {
                    let ramp = forced.rampFrom.map { min(1, (now - $0 + dt) / 0.25) } ?? 1
                    newSpeed = max(0, speed - forced.deceleration * ramp * dt)
                    if newSpeed == 0 {
                        forced.stoppedAt = now + dt
                        if let index = forced.hardBrakeIndex { truth.hardBrakes[index].end = seconds(nowMs + 100) }
                    }
                    speedOverride = forced
                }
            } else {
                // The controller: the element's cruise speed, lowered by whatever lies ahead within braking range.
                var target = element.isStraight ? element.limit : element.limit * profile.cornerSpeedFactor
                if element.isStraight {
                    target = max(0.5, min(element.limit, element.limit * profile.speedFactor + fluctuation))
                }
                var distance = element.length - offset
                var j = head + 1
                while j < queue.count, distance < lookahead {
                    let next = queue[j]
                    let constraint =
                        next.isStop
                        ? 0
                        : (next.isStraight ? next.limit * profile.speedFactor : next.limit * profile.cornerSpeedFactor)
                    let margin = next.isStop ? 0.3 : 0
                    target = min(
                        target,
                        (constraint * constraint
                            + 2 * profile.planDecel * max(0, distance - margin)).squareRoot())
                    if next.isStop {
                        stopDistance = distance
                        break
                    }
                    distance += next.length
                    j += 1
                }
                if target > speed {
                    newSpeed = min(target, speed + profile.acceleration(at: speed) * dt)
                } else {
                    newSpeed = max(target, speed - profile.maxDecel * dt)
                }
            }

            // Move, rolling the last few centimetres into a stop.
            var step = (speed + newSpeed) / 2 * dt
            if let stopDistance, stopDistance < 0.5, speed < 1.0 {
                step = stopDistance
                newSpeed = 0
            }
            let before = position
            let headingBefore = heading
            var left = step
            while left > 1e-9, head < queue.count {
                let current = queue[head]
                if current.isStop {
                    newSpeed = 0
                    break
                }
                let piece = min(left, current.length - offset)
                if case .arc(let turn) = current.shape {
                    let change = turn * piece / current.length
                    position.move(piece, heading: heading + change / 2)
                    heading += change
                } else {
                    position.move(piece, heading: heading)
                }
                offset += piece
                left -= piece
                travelled += piece
                if offset >= current.length - 1e-9 {
                    head += 1
                    offset = 0
                }
            }
            let moved = step - left
            if mode == .car {
                manoeuvres.note(
                    acceleration: (newSpeed - speed) / dt, from: speed, to: newSpeed, at: now,
                    until: seconds(nowMs + 100))
                corners.note(
                    lateral: (speed + newSpeed) / 2 * abs(heading - headingBefore) / dt, from: speed,
                    to: newSpeed, at: now, until: seconds(nowMs + 100))
            }
            speed = newSpeed
            setContext(
                speed > movingThreshold || moved > movingThreshold * dt
                    ? mode.movingContext
                    : mode.stoppedContext)
            // Cadence holds at walking/running speed and drops only when slowing right down (stopping, turning).
            stepRate = (mode == .walking || mode == .running) ? cadence * min(1, speed / (0.7 * pace)) : 0
            if moved > 0 {
                if leg.start == nil {
                    leg.start = nowMs
                    leg.startCoordinate = frame.coordinate(of: before)
                }
                leg.lastMove = nowMs + 100
                leg.distance += moved
                leg.maxSpeed = max(leg.maxSpeed, speed)
                leg.endCoordinate = coordinate
            }
            endTick()
        }
    }

    private mutating func finishLeg(_ leg: LegTracker) {
        guard let start = leg.start else { return }
        let entry = TravelTruth(
            mode: leg.mode.name, start: seconds(start), end: seconds(leg.lastMove),
            distanceMetres: (leg.distance * 10).rounded() / 10,
            maxSpeed: (leg.maxSpeed * 100).rounded() / 100, endReason: leg.endReason,
            startLatitude: leg.startCoordinate.latitude,
            startLongitude: leg.startCoordinate.longitude,
            endLatitude: leg.endCoordinate.latitude, endLongitude: leg.endCoordinate.longitude)
        if leg.mode == .car {
            truth.drives.append(entry)
        } else {
            truth.otherLegs.append(entry)
        }
    }
}
