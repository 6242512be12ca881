/// Where an idle device has been over the last minutes, sampled coarsely, to see how a ride began: a passenger
/// walks to a stop and waits there for the bus; a driver walks to the car and leaves within a minute, or leaves from
/// where the phone spent the night. Positions, not speeds: phones without a speed field read walking as rest.
struct Whereabouts: Sendable, Equatable, Codable {
    struct Sample: Sendable, Equatable, Codable {
        var t: Double
        var latitude: Double
        var longitude: Double
        /// The fix's horizontal accuracy in metres as a Float, NaN when not known (samples checkpointed before it
        /// was kept): every idle device holds up to `maximumSamples`, and a `Double?` made each 40 bytes instead of
        /// 32 (a quiet device 4,618 bytes instead of 4,093 with the array's doubling). A phone's accuracy has far
        /// fewer digits than a Float keeps, and is written back as it was read ("3.9").
        private var storedAccuracy: Float

        /// The fix's horizontal accuracy, metres (nil in samples checkpointed before it was kept).
        var accuracy: Double? { storedAccuracy.isNaN ? nil : Double(storedAccuracy) }

        init(t: Double, latitude: Double, longitude: Double, accuracy: Double? = nil) {
            self.t = t
            self.latitude = latitude
            self.longitude = longitude
            storedAccuracy = accuracy.map { Float($0) } ?? .nan
        }

        /// NaN is no accuracy known, equal to itself here.
        static func == (lhs: Sample, rhs: Sample) -> Bool {
            lhs.t == rhs.t && lhs.latitude == rhs.latitude && lhs.longitude == rhs.longitude
                && lhs.accuracy == rhs.accuracy
        }

        func distance(to other: Sample) -> Double {
            Geo.distance(latitude, longitude, other.latitude, other.longitude)
        }

        private enum CodingKeys: String, CodingKey { case t, latitude, longitude, accuracy }

        /// Written as `[t, latitude, longitude]`, then `accuracy` when known: a device holds up to 24 and a
        /// checkpoint writes them all, and an object costs its encoder an allocation where an array costs none.
        /// Checkpoints written before hold objects, read too.
        func encode(to encoder: any Encoder) throws {
            var container = encoder.unkeyedContainer()
            try container.encode(t)
            try container.encode(latitude)
            try container.encode(longitude)
            if !storedAccuracy.isNaN { try container.encode(storedAccuracy) }
        }

        init(from decoder: any Decoder) throws {
            guard var container = try? decoder.unkeyedContainer() else {
                let keyed = try decoder.container(keyedBy: CodingKeys.self)
                self.init(
                    t: try keyed.decode(Double.self, forKey: .t),
                    latitude: try keyed.decode(Double.self, forKey: .latitude),
                    longitude: try keyed.decode(Double.self, forKey: .longitude),
                    accuracy: try keyed.decodeIfPresent(Double.self, forKey: .accuracy))
                return
            }
            let t = try container.decode(Double.self)
            let latitude = try container.decode(Double.self)
            let longitude = try container.decode(Double.self)
            let accuracy = container.isAtEnd ? nil : try container.decode(Double.self)
            self.init(t: t, latitude: latitude, longitude: longitude, accuracy: accuracy)
        }
    }

    static let sampleInterval = 30.0
    static let window = 12 * 60.0
    /// The most samples held at once: a window's worth at `sampleInterval` apart, and the new one before the
    /// oldest goes.
    static let maximumSamples = Int(window / sampleInterval) + 2
    /// Within this of the boarding place is waiting there (GPS jitter included).
    static let stayRadius = 40.0
    /// The device arrived from at least this far away, at a walker's pace (not by vehicle).
    static let arrivalDistance = 150.0
    static let walkingPace = 2.5

    private(set) var samples: [Sample] = []
    /// `samples.last?.t` when known (NaN: read the array), kept inline: most fixes fall between two samples, and
    /// deciding that then reads no memory of the device's outside its state. Not in checkpoints, nor compared.
    /// NaN rather than an optional: 8 bytes of every device's state instead of 16.
    private var lastSampleTime = Double.nan

    private enum CodingKeys: String, CodingKey { case samples }

    static func == (lhs: Whereabouts, rhs: Whereabouts) -> Bool { lhs.samples == rhs.samples }

    mutating func add(_ fix: AcceptedFix) {
        if let last = lastSampleTime.isNaN ? samples.last?.t : lastSampleTime, fix.t - last < Self.sampleInterval {
            return
        }
        // Every idle device holds one: grown four at a time up to the most it can hold, not doubled past it (room
        // for 32 where 21 were held), and a device seen once holds room for one.
        if samples.count == samples.capacity {
            samples.reserveCapacity(min(samples.isEmpty ? 1 : samples.count + 4, Self.maximumSamples))
        }
        samples.append(Sample(t: fix.t, latitude: fix.latitude, longitude: fix.longitude, accuracy: fix.accuracy))
        lastSampleTime = fix.t
        // Everything older than the window goes, also after a silence: a place hours ago says nothing of a walk.
        if let keep = samples.firstIndex(where: { fix.t - $0.t <= Self.window }), keep > 0 {
            // A new array of the right size (with room for a few more): every idle device holds one.
            var kept: [Sample] = []
            kept.reserveCapacity(min(samples.count - keep + 4, Self.maximumSamples))
            kept.append(contentsOf: samples[keep...])
            samples = kept
        }
    }

    mutating func forget() {
        samples = []
        lastSampleTime = .nan
    }

    /// How far from `car` (where the device's last driving trip ended) a ride leaving at `departure` began, if the
    /// device was seen shortly before it: the nearer of the place it was last sampled at before the departure and
    /// the ride's first moving fix. Nil when the car is from another day (`RideProfile.parkedCarValidity`) or no
    /// sample of the last minutes precedes the departure: a phone whose GPS slept on the walk and woke under way
    /// says nothing of where it boarded (the place it lay before its silence may be far from a car it walked to).
    func distanceFromCar(_ car: Sample, departure: Double, firstMoving: AcceptedFix) -> Double? {
        guard departure >= car.t, departure - car.t <= RideProfile.parkedCarValidity,
            let before = placeIndex(before: departure).map({ samples[$0] })
        else { return nil }
        let first = Sample(t: firstMoving.t, latitude: firstMoving.latitude, longitude: firstMoving.longitude)
        return min(car.distance(to: before), car.distance(to: first))
    }

    /// Speeds estimated from positions lag by ten seconds or more: where the device was before a departure is its
    /// last sample at least this long before it.
    static let departureLag = 20.0

    /// The index of the last sample from before the vehicle got going at `departure`.
    private func placeIndex(before departure: Double) -> Int? {
        samples.lastIndex(where: { $0.t <= departure - Self.departureLag })
    }

    /// Samples needed to say how sharp the phone's positions were before a departure.
    static let accuracySamplesNeeded = 3

    /// The median accuracy of the samples from before the vehicle got going at `departure` (metres): how sharp the
    /// phone's positions were where it walked and waited. Nil with fewer than `accuracySamplesNeeded` samples.
    func medianAccuracy(before departure: Double) -> Double? {
        guard let last = placeIndex(before: departure) else { return nil }
        // On the stack: a run starts often, and its minutes before are a few dozen samples at most.
        return withUnsafeTemporaryAllocation(of: Double.self, capacity: last + 1) { buffer in
            var count = 0
            for sample in samples[...last] {
                guard let accuracy = sample.accuracy else { continue }
                buffer[count] = accuracy
                count += 1
            }
            guard count >= Self.accuracySamplesNeeded else { return nil }
            var accuracies = UnsafeMutableBufferPointer(rebasing: buffer[..<count])
            return median(sorting: &accuracies)
        }
    }

    /// A vehicle that left while the phone's GPS slept averaged no less than this, stops included: the departure
    /// estimated with it is early, and the wait short (a bus's phone still shows minutes; a car's none).
    static let silentDepartureSpeed = 5.0

    /// How long the device had waited where it was before moving off at `departure`, if it came there on foot from
    /// further away; nil when it did not (it was there all along, or came too fast to have walked). The place is the
    /// last sample from before the vehicle got going (speeds estimated from positions lag by ten seconds or more).
    /// `silentlyFrom`: the fixes either side of a silence of `TripEngine.WakeUp.silence` or more before the ride: a
    /// phone stops its GPS (or its fixes) while it lies still, so it stayed where it went silent until it could have
    /// left, at the latest.
    func waitAfterWalking(departure: Double, silentlyFrom silence: (before: AcceptedFix, after: AcceptedFix)? = nil)
        -> Double?
    {
        guard let placeIndex = placeIndex(before: departure) else { return nil }
        let place = samples[placeIndex]
        var arrivedIndex = placeIndex
        while arrivedIndex > 0, samples[arrivedIndex - 1].distance(to: place) <= Self.stayRadius { arrivedIndex -= 1 }
        let arrived = samples[arrivedIndex].t
        // The approach: some sample before the stay far enough away, and nothing covered faster than walking.
        guard let farthest = samples[..<arrivedIndex].max(by: { $0.distance(to: place) < $1.distance(to: place) }),
            farthest.distance(to: place) >= Self.arrivalDistance,
            farthest.distance(to: place) / max(arrived - farthest.t, 1) <= Self.walkingPace
        else { return nil }
        var stayedUntil = place.t
        if let silence,
            Sample(
                t: silence.before.t, latitude: silence.before.latitude,
                longitude: silence.before.longitude
            ).distance(to: place) <= Self.stayRadius
        {
            let travelled = silence.before.distance(to: silence.after) / Self.silentDepartureSpeed
            stayedUntil = max(stayedUntil, silence.after.t - travelled)
        }
        return stayedUntil - arrived
    }
}
