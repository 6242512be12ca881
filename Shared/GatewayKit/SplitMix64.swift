/// SplitMix64 (Steele, Lea and Flood): one 64-bit state turned into well-mixed words. The project's one seeded
/// generator: the simulator seeds its streams and derives per-device seeds with it, the phone-drop converter picks a
/// recording's context with it, and the tests draw their data from it. Simulated fleets and the CLI's replay fixtures
/// depend on its exact output, so its words must never change.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    public var state: UInt64

    public init(state: UInt64) {
        self.state = state
    }

    public init(seed: UInt64) {
        state = seed
    }

    /// Seeded from a name (its FNV-1a hash), so a name gives the same stream on every run and every machine.
    public init(name: String) {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in name.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        state = hash
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in [0, 1), from the top 53 bits of a word.
    public mutating func unit() -> Double { Double(next() >> 11) * 0x1.0p-53 }

    /// Uniform in [low, high).
    public mutating func uniform(_ low: Double, _ high: Double) -> Double { low + (high - low) * unit() }

    /// One well-mixed word from a seed and a stream number.
    public static func mix(_ seed: UInt64, _ stream: UInt64) -> UInt64 {
        var generator = SplitMix64(state: seed ^ (stream &* 0xD1B5_4A32_D192_ED03))
        return generator.next()
    }
}
