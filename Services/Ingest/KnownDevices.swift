import RecordCodecs
import RoadSaveModel
import Wire

/// The devices (clientUserIDs) of each application that ingest has accepted records of, at most `limit` per
/// application: a flood of new users cannot grow ingest's memory, the journal or detection's fleet without bound.
/// Pure: the journal loads it from and saves it to its `devices` table, in the same transaction as the records, and
/// passes the time (Unix seconds) in.
///
/// Admissions are tentative until `commit()` (the records were stored) or `rollBack()` (they were not), so a device
/// whose records were refused with their batch does not hold a slot.
///
/// Slots are freed: a device that has sent nothing for `idleAge` seconds is forgotten by `forgetIdle(now:)` (the
/// journal deletes its row), so an application whose users come and go is not locked out for good. When it sends
/// again it is a new device, admitted if its application has room. The time a device was last seen is saved at most
/// every `saveInterval` (not with every batch), so after a restart a slot may be freed up to that much early.
struct KnownDevices {
    let limit: Int
    /// Seconds without records after which a device's slot is freed; nil: never.
    let idleAge: Double?
    /// The journal's shard count: a device's shard is worked out once, when it takes its slot.
    let shards: Int
    /// Finds each device's slot number: the one hash of a device per record ingest accepts (`admit`). What follows
    /// for the record (its shard, the position it was stored at) goes by number.
    private var numbers = DeviceIndex()
    /// By number; nil where a slot was freed (its number is reused).
    private var slots: [Slot?] = []
    private var freeNumbers: [Int] = []
    private var counts: [String: Int] = [:]
    /// Devices admitted since the last commit or roll-back, in order, by number.
    private var pendingNumbers: [Int] = []
    /// Known devices seen again long enough after the time saved for them that it must be saved again.
    private var seenAgain: Set<Int> = []

    struct Slot: Equatable {
        var device: DeviceID
        /// `DeviceShard.of(device, shards:)`.
        var shard: Int
        /// When records of the device last came (Unix seconds).
        var lastSeen: Double
        /// `lastSeen` as the store has it.
        var savedLastSeen: Double
        /// No chunk after this journal position holds the device's records: the last chunk stored with them, or
        /// the head when the device was loaded or admitted (an earlier one may be anywhere before). Not stored: only
        /// detection's deadlines during catch-up ask for it (`Journal.lastPositions`).
        var lastPosition: UInt64 = 0

        /// Records came at `now`: returns whether the time saved for the device is now too old.
        mutating func seen(at now: Double, saveInterval: Double) -> Bool {
            guard now > lastSeen else { return false }
            lastSeen = now
            return now - savedLastSeen >= saveInterval
        }
    }

    init(limit: Int, idleAge: Double? = nil, shards: Int = 1) {
        self.limit = max(1, limit)
        self.idleAge = idleAge.flatMap { $0 > 0 ? $0 : nil }
        self.shards = max(1, shards)
    }

    /// How stale the saved time of a device may get: a tenth of the idle age, at most an hour.
    var saveInterval: Double { idleAge.map { min(3600, $0 / 10) } ?? .infinity }

    /// Devices admitted since the last commit or roll-back, in order.
    var pending: [DeviceID] { pendingNumbers.compactMap { slots[$0]?.device } }

    /// A device known from the store (at open): known whatever the limit is now.
    /// `head`: the journal's newest position.
    mutating func load(_ device: DeviceID, lastSeen: Double = 0, head: UInt64 = 0) {
        if let number = number(of: device) {
            slots[number]?.lastSeen = lastSeen
            slots[number]?.savedLastSeen = lastSeen
            slots[number]?.lastPosition = head
            return
        }
        take(device, lastSeen: lastSeen, savedLastSeen: lastSeen, head: head)
    }

    /// The device's slot number if it is known, or new and its application still has room (it then becomes known,
    /// tentatively); nil when refused. `now` (Unix seconds) is when its records came; a clock that went back never
    /// makes a device older. `head`: the journal's newest position (a device forgotten and admitted again may have
    /// records up to there). The number stands until the next `forgetIdle` or `rollBack`.
    @discardableResult
    mutating func admit(_ device: DeviceID, now: Double = 0, head: UInt64 = 0) -> Int? {
        if let number = number(of: device) {
            // Changed in place: this runs for every record ingest accepts.
            if slots[number]!.seen(at: now, saveInterval: saveInterval) { seenAgain.insert(number) }
            return number
        }
        guard count(of: device.app) < limit else { return nil }
        let number = take(device, lastSeen: now, savedLastSeen: now, head: head)
        pendingNumbers.append(number)
        return number
    }

    /// `admit` for the device of each of `records`, in order, at `now`: what ingest asks of a gateway batch, in one
    /// access (not one a record). A run of one device's records (gateways often send several together) is asked
    /// once. Returns the slot numbers of the records admitted, in order, and the indexes of those refused (empty,
    /// and no array made, unless an application is at its limit).
    mutating func admit(devicesOf records: [SensorRecord], now: Double = 0, head: UInt64 = 0)
        -> (slots: [Int], refused: [Int])
    {
        var slots: [Int] = []
        slots.reserveCapacity(records.count)
        var refused: [Int] = []
        var previous: (device: DeviceID, number: Int?)?
        for index in records.indices {
            let number: Int?
            if let previous, previous.device == records[index].device {
                number = previous.number
            } else {
                number = admit(records[index].device, now: now, head: head)
                previous = (records[index].device, number)
            }
            if let number { slots.append(number) } else { refused.append(index) }
        }
        return (slots, refused)
    }

    @discardableResult
    private mutating func take(_ device: DeviceID, lastSeen: Double, savedLastSeen: Double, head: UInt64) -> Int {
        let slot = Slot(
            device: device, shard: shards == 1 ? 0 : DeviceShard.of(device, shards: shards),
            lastSeen: lastSeen, savedLastSeen: savedLastSeen, lastPosition: head)
        let number: Int
        if let free = freeNumbers.popLast() {
            number = free
            slots[number] = slot
        } else {
            number = slots.count
            slots.append(slot)
        }
        numbers.insert(device, slot: number)
        counts[device.app, default: 0] += 1
        return number
    }

    /// The device's slot number, if it is known.
    private func number(of device: DeviceID) -> Int? {
        // Compared where they are, through the buffer: reading `slots[number]?.device` would copy (retain) the IDs.
        slots.withUnsafeBufferPointer { slots in
            numbers.slot(of: device) { slots[$0]?.device == device }
        }
    }

    private mutating func free(_ number: Int) {
        guard let device = slots[number]?.device else { return }
        numbers.remove(device, slot: number)
        slots[number] = nil
        freeNumbers.append(number)
        counts[device.app, default: 0] -= 1
        if counts[device.app] == 0 { counts[device.app] = nil }
    }

    /// What the next store transaction must write: the new devices (`pending`) and those seen again, each with the
    /// time it was last seen.
    var unsaved: [(device: DeviceID, lastSeen: Double)] {
        let again = seenAgain.compactMap { slots[$0] }.sorted {
            ($0.device.app, $0.device.user) < ($1.device.app, $1.device.user)
        }
        return pendingNumbers.compactMap { slots[$0] }.map { ($0.device, $0.lastSeen) }
            + again.map { ($0.device, $0.lastSeen) }
    }

    /// The devices admitted since the last commit, now stored (with everything in `unsaved`): returns them and
    /// forgets that they were tentative.
    mutating func commit() -> [DeviceID] {
        for number in pendingNumbers + seenAgain where slots[number] != nil {
            slots[number]!.savedLastSeen = slots[number]!.lastSeen
        }
        seenAgain = []
        defer { pendingNumbers = [] }
        return pending
    }

    /// The records of the tentative admissions were not stored: the devices are unknown again. (Devices seen again
    /// stay to be saved with the next commit.)
    mutating func rollBack() {
        for number in pendingNumbers { free(number) }
        pendingNumbers = []
    }

    /// Forgets the devices that have sent nothing for `idleAge` seconds before `now` and returns them (for the store
    /// to delete): their slots are free. Tentative admissions are never forgotten. Nothing without an idle age.
    mutating func forgetIdle(now: Double) -> [DeviceID] {
        guard let idleAge else { return [] }
        let pendingNow = Set(pendingNumbers)
        var forgotten: [(number: Int, device: DeviceID)] = []
        for (number, slot) in slots.enumerated() {
            guard let slot, now - slot.lastSeen > idleAge, !pendingNow.contains(number) else { continue }
            forgotten.append((number, slot.device))
        }
        for (number, _) in forgotten {
            free(number)
            seenAgain.remove(number)
        }
        return forgotten.map(\.device).sorted { ($0.app, $0.user) < ($1.app, $1.user) }
    }

    /// Records of the device in slot `number` were stored in the chunk at `position`.
    mutating func noteStored(slot number: Int, at position: UInt64) {
        slots[number]?.lastPosition = position
    }

    /// `noteStored(slot:at:)` for the slot of each record of a chunk: `numbers[index]` for each of `indexes` (nil:
    /// every one of `numbers`). One call a chunk, so that its owner (the journal, a class) is accessed once, not
    /// once a record.
    mutating func noteStored(slots numbers: [Int], indexes: ArraySlice<Int>?, at position: UInt64) {
        slots.withUnsafeMutableBufferPointer { slots in
            numbers.withUnsafeBufferPointer { numbers in
                guard let indexes else {
                    for index in 0..<numbers.count { slots[numbers[index]]?.lastPosition = position }
                    return
                }
                indexes.withUnsafeBufferPointer { indexes in
                    for index in 0..<indexes.count { slots[numbers[indexes[index]]]?.lastPosition = position }
                }
            }
        }
    }

    /// Records of a known device were stored in the chunk at `position`.
    mutating func noteStored(_ device: DeviceID, at position: UInt64) {
        if let number = number(of: device) { noteStored(slot: number, at: position) }
    }

    /// The shard of the device in slot `number`.
    func shard(ofSlot number: Int) -> Int { slots[number]?.shard ?? 0 }

    /// The shard of the device in each of `numbers`' slots, in order: a gateway batch's records' shards, looked up
    /// once each (its chunks need them twice) and in one call.
    func shards(ofSlots numbers: [Int]) -> [Int] {
        // Through the buffers, which unoptimised builds also read without a generic iterator's allocation a record.
        slots.withUnsafeBufferPointer { slots in
            numbers.withUnsafeBufferPointer { numbers in
                [Int](unsafeUninitializedCapacity: numbers.count) { shards, count in
                    for index in 0..<numbers.count { shards[index] = slots[numbers[index]]?.shard ?? 0 }
                    count = numbers.count
                }
            }
        }
    }

    /// No chunk after this position holds the device's records (`Slot.lastPosition`); nil for a device not known.
    func lastPosition(_ device: DeviceID) -> UInt64? { number(of: device).flatMap { slots[$0]?.lastPosition } }

    func count(of application: String) -> Int { counts[application] ?? 0 }

    /// Devices known, of every application (tentative admissions included).
    var count: Int { numbers.count }

    func contains(_ device: DeviceID) -> Bool { number(of: device) != nil }

    /// When records of a known device last came.
    func lastSeen(_ device: DeviceID) -> Double? { number(of: device).flatMap { slots[$0]?.lastSeen } }

    /// The rejection reason for a record of a device refused by `admit`.
    func refusal(for application: String) -> String {
        let freeing =
            idleAge.map { "a device's slot is freed after \(Int($0)) s without records (--device-idle-age)" }
            ?? "slots are never freed (--device-idle-age 0)"
        return "a new device of an application that already has \(count(of: application)) devices (at most \(limit), "
            + "--max-devices-per-app): not accepted; records of known devices still are, and \(freeing)"
    }
}
