/// The slots of the devices a `DeviceFleet` changed since its last `takeChangedDevices()`: a flag per slot and the
/// slots flagged, in the order flagged. Marking the device of every record costs a load and a compare, not a hash
/// as in a `Set<Int>`, whose interface (the part the fleet uses) it keeps.
struct ChangedSlots: Sequence, Sendable {
    private var flags: [Bool] = []
    private var slots: [Int] = []

    var isEmpty: Bool { slots.isEmpty }
    var count: Int { slots.count }

    func contains(_ slot: Int) -> Bool {
        slot >= 0 && slot < flags.count && flags[slot]
    }

    mutating func insert(_ slot: Int) {
        if slot < flags.count {
            guard !flags[slot] else { return }
        } else {
            flags.append(contentsOf: repeatElement(false, count: slot - flags.count + 1))
        }
        flags[slot] = true
        slots.append(slot)
    }

    mutating func remove(_ slot: Int) {
        guard contains(slot) else { return }
        flags[slot] = false
        slots.removeAll { $0 == slot }
    }

    mutating func removeAll(keepingCapacity: Bool = false) {
        for slot in slots { flags[slot] = false }
        slots.removeAll(keepingCapacity: keepingCapacity)
    }

    /// The slots flagged, ascending.
    func sorted() -> [Int] { slots.sorted() }

    func makeIterator() -> IndexingIterator<[Int]> { slots.makeIterator() }
}
