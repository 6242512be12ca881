// A phone slipping from the hand (the phone-drops recordings in shared/data: ~2 m drops give 0.6–1 s of free fall and
// a 16–24 g spike): the hand's support fades, the phone falls at ~0 g, hits the ground in one or two samples, maybe
// bounces, then lies still until it is picked up. The owner stops to pick it up; nothing about it looks like a vehicle.

import Foundation

extension DeviceSim {
    /// Drops the phone now (the spike is now; the free fall began up to a second before).
    /// `walkingCadence` is the gait's step rate when dropped while walking, nil when standing.
    mutating func dropPhone(walkingCadence: Double?) {
        let freeFall = rng.uniform(0.6, 1.0)
        let spikeG = rng.uniform(16, 28)
        let spikeWidth = rng.uniform(0.005, 0.02)
        let bounce: (delay: Double, peakG: Double)? =
            rng.chance(0.5)
            ? ((rng.uniform(0.1, 0.35) * 100).rounded() / 100, rng.uniform(3, 8)) : nil
        let ground = Rotation.lyingFlat(rng: &rng)
        let cadence = walkingCadence.flatMap { $0 > 0 ? $0 : nil }
        let trace = ImpactSynthesis.drop(
            freeFall: freeFall, spikeG: spikeG, spikeWidth: spikeWidth, bounce: bounce,
            cadence: cadence, hand: hand, ground: ground, rng: &rng)
        let impacts = emitImpacts(ImpactSynthesis.trigger(trace)) { _ in "drop" }
        if let first = impacts.first {
            truth.drops.append(
                DropTruth(
                    t: first.t, freeFallStart: ((first.t - freeFall) * 1000).rounded() / 1000,
                    freeFallSeconds: (freeFall * 1000).rounded() / 1000, peakG: first.peakG,
                    whileWalking: cadence != nil))
        }
    }
}
