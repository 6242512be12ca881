/// Identifiers derived from what they identify, formatted as UUIDs. A trip, crash or event gets the same ID every
/// time the same records are replayed or redelivered, so receivers can drop duplicates by `eventID`.
public enum StableID {
    public static func make(_ parts: String...) -> String {
        // Two independent 64-bit FNV-1a hashes over the parts (with a separator that cannot occur in a part's
        // UTF-8 bytes), each finished with a SplitMix64 mix for good bit spread.
        var high: UInt64 = 0xCBF2_9CE4_8422_2325
        var low: UInt64 = 0x8422_2325_CBF2_9CE4
        for part in parts {
            for byte in part.utf8 {
                high = (high ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
                low = (low ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 ^ 0x5BD1_E995
            }
            high = (high ^ 0xFF) &* 0x0000_0100_0000_01B3
            low = (low ^ 0xFF) &* 0x0000_0100_0000_01B3
        }
        let a = mix(high)
        let b = mix(low ^ a)
        // Version 8 ("custom") and the RFC 9562 variant bits.
        let timeHigh = (a & 0xFFFF) & 0x0FFF | 0x8000
        let clock = (b >> 48) & 0x3FFF | 0x8000
        return hex(a >> 32, 8) + "-" + hex((a >> 16) & 0xFFFF, 4) + "-" + hex(timeHigh, 4) + "-"
            + hex(clock, 4) + "-" + hex(b & 0xFFFF_FFFF_FFFF, 12)
    }

    private static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    private static func hex(_ value: UInt64, _ width: Int) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}
