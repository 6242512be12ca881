import RoadSaveModel

/// Which shard a device's records belong to: ingest stores each record in its journal under this shard (of its
/// `--shards`), so that a detection process can read the records of its shards alone, every device whole.
///
/// The hash is part of the wire protocol (PROTOCOL §1), not an implementation detail: gateways and tools in other
/// languages compute it too (Tests/IntegrationTests/Support/journal_check.py does, in Python), so it must never change.
public enum DeviceShard {
    /// The shard (0..<shards) of a device: 64-bit FNV-1a over the app's UTF-8, a 0xFF byte (which UTF-8 never
    /// holds, so ("ab", "c") and ("a", "bc") differ), and the user's UTF-8, modulo `shards`. Stable across processes,
    /// builds and machines — unlike Swift's `Hasher`, which is seeded per process.
    public static func of(_ device: DeviceID, shards: Int) -> Int {
        precondition(shards > 0, "DeviceShard.of(_:shards:) needs at least one shard")
        return Int(fnv1a(device) % UInt64(shards))
    }

    /// The 64-bit FNV-1a hash behind `of(_:shards:)`: offset basis 0xCBF29CE484222325, prime 0x100000001B3, each
    /// byte XORed in before the multiplication.
    public static func fnv1a(_ device: DeviceID) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in device.app.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        hash = (hash ^ 0xFF) &* 0x0000_0100_0000_01B3
        for byte in device.user.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        return hash
    }
}
