import RoadSaveModel

/// Finds a device's slot in its owner's array of devices (detection's fleet, ingest's known devices): an
/// open-addressing hash table (linear probing) of 8-byte buckets, each the slot and 32 bits of the device's hash.
/// The keys are not stored again: a candidate slot is confirmed against the device the owner holds there. Against
/// `[DeviceID: Int]` this hashes the two identifiers' bytes in a few multiplications instead of SipHash over each,
/// and costs 16 bytes or less a device instead of ~66: it runs for every record both services take.
///
/// The hash is seeded per table at random, so that crafted identifiers cannot be made to collide in advance; the
/// table is only ever probed, never iterated, so its order never reaches any output.
public struct DeviceIndex: Sendable {
    /// `tag << 32 | (slot + 1)`; 0 is an empty bucket. A power of two of them.
    @usableFromInline var buckets: [UInt64] = []
    public private(set) var count = 0
    @usableFromInline let seed: UInt64

    public init() {
        seed = UInt64.random(in: 1...UInt64.max)
    }

    @inlinable var mask: Int { buckets.count - 1 }

    /// The bucket an entry (or a hash) starts its search from: its tag's low bits, so that an entry's home is known
    /// from the entry alone (for deletion and growth).
    private func home(_ tagged: UInt64) -> Int { Int(truncatingIfNeeded: tagged >> 32) & mask }

    /// The device's slot, if it is in the table: `holds(slot)` says whether the owner holds `device` at a candidate
    /// slot (the hash's 32 bits narrow the candidates to about one).
    @inlinable
    public func slot(of device: DeviceID, confirmedBy holds: (Int) -> Bool) -> Int? {
        guard count > 0 else { return nil }
        let tag = Self.hash(device, seed: seed) >> 32
        let mask = mask
        var bucket = Int(truncatingIfNeeded: tag) & mask
        return buckets.withUnsafeBufferPointer { buckets in
            while true {
                let entry = buckets[bucket]
                if entry == 0 { return nil }
                if entry >> 32 == tag {
                    let slot = Int(entry & 0xFFFF_FFFF) - 1
                    if holds(slot) { return slot }
                }
                bucket = (bucket + 1) & mask
            }
        }
    }

    /// Adds a device that is not in the table yet.
    public mutating func insert(_ device: DeviceID, slot: Int) {
        precondition(slot < Int(UInt32.max), "too many devices for one index")
        if (count + 1) * 4 > buckets.count * 3 { grow() }
        put(Self.hash(device, seed: seed) & 0xFFFF_FFFF_0000_0000 | UInt64(slot + 1))
        count += 1
    }

    /// Takes out the device held at `slot`.
    public mutating func remove(_ device: DeviceID, slot: Int) {
        guard var hole = find(device, slot: slot) else { return }
        buckets[hole] = 0
        count -= 1
        // Backward-shift deletion: each later entry of the run moves into the hole when the hole lies between its
        // home and where it is, so that no search stops early at the hole.
        var next = (hole + 1) & mask
        while buckets[next] != 0 {
            let home = home(buckets[next])
            if (next - home) & mask >= (next - hole) & mask {
                buckets[hole] = buckets[next]
                buckets[next] = 0
                hole = next
            }
            next = (next + 1) & mask
        }
    }

    /// The device held at `old` is now at `new` (the fleet compacts its array after an eviction).
    public mutating func move(_ device: DeviceID, from old: Int, to new: Int) {
        guard let bucket = find(device, slot: old) else { return }
        buckets[bucket] = buckets[bucket] & 0xFFFF_FFFF_0000_0000 | UInt64(new + 1)
    }

    /// The bucket holding the device at `slot` (found by its hash and slot: the devices array need not agree).
    private func find(_ device: DeviceID, slot: Int) -> Int? {
        guard count > 0 else { return nil }
        let entry = Self.hash(device, seed: seed) & 0xFFFF_FFFF_0000_0000 | UInt64(slot + 1)
        var bucket = home(entry)
        while buckets[bucket] != 0 {
            if buckets[bucket] == entry { return bucket }
            bucket = (bucket + 1) & mask
        }
        return nil
    }

    private mutating func put(_ entry: UInt64) {
        var bucket = home(entry)
        while buckets[bucket] != 0 { bucket = (bucket + 1) & mask }
        buckets[bucket] = entry
    }

    private mutating func grow() {
        let old = buckets
        buckets = Array(repeating: 0, count: max(16, old.count * 2))
        for entry in old where entry != 0 { put(entry) }
    }

    // MARK: Hash

    @inlinable
    static func hash(_ device: DeviceID, seed: UInt64) -> UInt64 {
        var hash = seed
        hash = mix(device.app, into: hash)
        hash = mix(device.user, into: hash ^ 0xFF)
        // Final avalanche (from MurmurHash3's fmix64), so that both halves depend on every byte.
        hash ^= hash >> 33
        hash &*= 0xFF51_AFD7_ED55_8CCD
        hash ^= hash >> 33
        hash &*= 0xC4CE_B9FE_1A85_EC53
        hash ^= hash >> 33
        return hash
    }

    @inlinable
    static func mix(_ string: String, into start: UInt64) -> UInt64 {
        var string = string
        return string.withUTF8 { bytes in
            var hash = start ^ (UInt64(bytes.count) &* 0x9E37_79B9_7F4A_7C15)
            var offset = 0
            while offset + 8 <= bytes.count {
                let word = UnsafeRawBufferPointer(bytes).loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                hash = (hash ^ word) &* 0x9E37_79B9_7F4A_7C15
                hash ^= hash >> 29
                offset += 8
            }
            if offset < bytes.count {
                var word: UInt64 = 0
                for index in offset..<bytes.count { word = word << 8 | UInt64(bytes[index]) }
                hash = (hash ^ word) &* 0x9E37_79B9_7F4A_7C15
                hash ^= hash >> 29
            }
            return hash
        }
    }
}
