// Deterministic randomness. The same options must give byte-identical output, so the simulator never touches the
// system generator: every draw comes from a xoshiro256** stream seeded through SplitMix64.

import Foundation
import GatewayKit

/// xoshiro256** (Blackman & Vigna): fast, small state, good statistical quality.
struct RandomSource {
    private var s0: UInt64
    private var s1: UInt64
    private var s2: UInt64
    private var s3: UInt64

    init(seed: UInt64) {
        var expander = SplitMix64(state: seed)
        s0 = expander.next()
        s1 = expander.next()
        s2 = expander.next()
        s3 = expander.next()
    }

    private static func rotl(_ x: UInt64, _ k: UInt64) -> UInt64 { (x << k) | (x >> (64 - k)) }

    mutating func next() -> UInt64 {
        let result = Self.rotl(s1 &* 5, 7) &* 9
        let shifted = s1 << 17
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= shifted
        s3 = Self.rotl(s3, 45)
        return result
    }

    /// Uniform in [0, 1) with 53 bits.
    mutating func unit() -> Double { Double(next() >> 11) * 0x1.0p-53 }

    mutating func uniform(_ low: Double, _ high: Double) -> Double { low + (high - low) * unit() }

    mutating func int(_ range: ClosedRange<Int>) -> Int {
        let span = UInt64(range.upperBound - range.lowerBound + 1)
        return range.lowerBound + Int(next() % span)
    }

    mutating func chance(_ probability: Double) -> Bool { unit() < probability }

    /// Standard normal (Box–Muller, one value per call: simpler to keep deterministic than a cached pair).
    mutating func gaussian() -> Double {
        let u1 = max(unit(), 1e-300)
        let u2 = unit()
        return (-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2)
    }

    /// +1 or -1.
    mutating func sign() -> Double { next() & 1 == 0 ? 1 : -1 }

    mutating func pick<T>(_ items: [T]) -> T { items[int(0...(items.count - 1))] }
}
