/// The slots of the devices a `DeviceFleet` changed since its last `takeChangedDevices()`: a flag per slot and the
/// slots flagged, in the order flagged. Marking the device of every record costs a load and a compare, not a hash
/// as in a `Set<Int>`, whose interface (the part the fleet uses) it keeps.
struct ChangedSlots: Sequence, Sendable {
    private var flags: [Bool] = []
    private var slots: [Int] = []
    /// The slots flagged since the last `takeTouched()`, kept apart from the marks a checkpoint takes (`removeAll`
    /// leaves them): every change of a device passes here, so the fleet's wake times recompute exactly these.
    private var touchedFlags: [Bool] = []
    private var touched: [Int] = []

    var isEmpty: Bool { slots.isEmpty }
    var count: Int { slots.count }

    func contains(_ slot: Int) -> Bool {
        slot >= 0 && slot < flags.count && flags[slot]
    }

    mutating func insert(_ slot: Int) {
        if slot < touchedFlags.count {
            if !touchedFlags[slot] {
                touchedFlags[slot] = true
                touched.append(slot)
            }
        } else {
            touchedFlags.append(contentsOf: repeatElement(false, count: slot - touchedFlags.count + 1))
            touchedFlags[slot] = true
            touched.append(slot)
        }
        if slot < flags.count {
            guard !flags[slot] else { return }
        } else {
            flags.append(contentsOf: repeatElement(false, count: slot - flags.count + 1))
        }
        flags[slot] = true
        slots.append(slot)
    }

    /// The slots flagged since the last call (whatever `removeAll` did meanwhile), in the order flagged.
    mutating func takeTouched() -> [Int] {
        for slot in touched { touchedFlags[slot] = false }
        defer { touched.removeAll(keepingCapacity: true) }
        return touched
    }

    mutating func removeAll(keepingCapacity: Bool = false) {
        for slot in slots { flags[slot] = false }
        slots.removeAll(keepingCapacity: keepingCapacity)
    }

    /// The slots flagged, ascending.
    func sorted() -> [Int] { slots.sorted() }

    func makeIterator() -> IndexingIterator<[Int]> { slots.makeIterator() }
}
