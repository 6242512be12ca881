/// The slots of the devices a `DeviceFleet` changed since its last `takeChangedDevices()`: a flag per slot and the
/// slots flagged, in the order flagged. Marking the device of every record costs a load and a compare, not a hash
/// as in a `Set<Int>`, whose interface (the part the fleet uses) it keeps.
struct ChangedSlots: Sequence, Sendable {
    /// Slots flagged, each once, in the order flagged.
    private struct FlaggedSlots: Sendable {
        var flags: [Bool] = []
        var slots: [Int] = []

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

        mutating func removeAll(keepingCapacity: Bool) {
            for slot in slots { flags[slot] = false }
            slots.removeAll(keepingCapacity: keepingCapacity)
        }
    }

    private var changed = FlaggedSlots()
    /// The slots flagged since the last `takeTouched()`, kept apart from the marks a checkpoint takes (`removeAll`
    /// leaves them): every change of a device passes here, so the fleet's wake times recompute exactly these.
    private var touched = FlaggedSlots()

    var isEmpty: Bool { changed.slots.isEmpty }
    var count: Int { changed.slots.count }

    func contains(_ slot: Int) -> Bool { changed.contains(slot) }

    mutating func insert(_ slot: Int) {
        touched.insert(slot)
        changed.insert(slot)
    }

    /// The slots flagged since the last call (whatever `removeAll` did meanwhile), in the order flagged.
    mutating func takeTouched() -> [Int] {
        defer { touched.removeAll(keepingCapacity: true) }
        return touched.slots
    }

    mutating func removeAll(keepingCapacity: Bool = false) {
        changed.removeAll(keepingCapacity: keepingCapacity)
    }

    /// The slots flagged, ascending.
    func sorted() -> [Int] { changed.slots.sorted() }

    func makeIterator() -> IndexingIterator<[Int]> { changed.slots.makeIterator() }
}
