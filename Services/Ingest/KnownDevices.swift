import RoadSaveModel

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
    private(set) var byApplication: [String: [String: Slot]] = [:]
    /// Devices admitted since the last commit or roll-back, in order.
    private(set) var pending: [DeviceID] = []
    /// Known devices seen again long enough after the time saved for them that it must be saved again.
    private(set) var seenAgain: Set<DeviceID> = []

    struct Slot: Equatable {
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

    init(limit: Int, idleAge: Double? = nil) {
        self.limit = max(1, limit)
        self.idleAge = idleAge.flatMap { $0 > 0 ? $0 : nil }
    }

    /// How stale the saved time of a device may get: a tenth of the idle age, at most an hour.
    var saveInterval: Double { idleAge.map { min(3600, $0 / 10) } ?? .infinity }

    /// A device known from the store (at open): known whatever the limit is now.
    /// `head`: the journal's newest position.
    mutating func load(_ device: DeviceID, lastSeen: Double = 0, head: UInt64 = 0) {
        byApplication[device.app, default: [:]][device.user] = Slot(lastSeen: lastSeen, savedLastSeen: lastSeen,
                                                                     lastPosition: head)
    }

    /// True if the device is known, or new and its application still has room (it then becomes known, tentatively).
    /// `now` (Unix seconds) is when its records came; a clock that went back never makes a device older. `head`:
    /// the journal's newest position (a device forgotten and admitted again may have records up to there).
    mutating func admit(_ device: DeviceID, now: Double = 0, head: UInt64 = 0) -> Bool {
        // Changed in place (one lookup: this runs for every record ingest accepts).
        let interval = saveInterval
        if let mustSave = byApplication[device.app]?[device.user]?.seen(at: now, saveInterval: interval) {
            if mustSave { seenAgain.insert(device) }
            return true
        }
        guard count(of: device.app) < limit else { return false }
        byApplication[device.app, default: [:]][device.user] = Slot(lastSeen: now, savedLastSeen: now, lastPosition: head)
        pending.append(device)
        return true
    }

    /// What the next store transaction must write: the new devices (`pending`) and those seen again, each with the
    /// time it was last seen.
    var unsaved: [(device: DeviceID, lastSeen: Double)] {
        (pending + seenAgain.sorted { ($0.app, $0.user) < ($1.app, $1.user) }).compactMap { device in
            byApplication[device.app]?[device.user].map { (device, $0.lastSeen) }
        }
    }

    /// The devices admitted since the last commit, now stored (with everything in `unsaved`): returns them and
    /// forgets that they were tentative.
    mutating func commit() -> [DeviceID] {
        for device in pending + seenAgain {
            if let slot = byApplication[device.app]?[device.user] {
                byApplication[device.app]![device.user]!.savedLastSeen = slot.lastSeen
            }
        }
        seenAgain = []
        defer { pending = [] }
        return pending
    }

    /// The records of the tentative admissions were not stored: the devices are unknown again. (Devices seen again
    /// stay to be saved with the next commit.)
    mutating func rollBack() {
        for device in pending {
            byApplication[device.app]?[device.user] = nil
            if byApplication[device.app]?.isEmpty == true { byApplication[device.app] = nil }
        }
        pending = []
    }

    /// Forgets the devices that have sent nothing for `idleAge` seconds before `now` and returns them (for the store
    /// to delete): their slots are free. Tentative admissions are never forgotten. Nothing without an idle age.
    mutating func forgetIdle(now: Double) -> [DeviceID] {
        guard let idleAge else { return [] }
        let pendingNow = Set(pending)
        var forgotten: [DeviceID] = []
        for (application, slots) in byApplication {
            for (user, slot) in slots where now - slot.lastSeen > idleAge {
                let device = DeviceID(app: application, user: user)
                guard !pendingNow.contains(device) else { continue }
                forgotten.append(device)
            }
        }
        for device in forgotten {
            byApplication[device.app]?[device.user] = nil
            if byApplication[device.app]?.isEmpty == true { byApplication[device.app] = nil }
            seenAgain.remove(device)
        }
        return forgotten.sorted { ($0.app, $0.user) < ($1.app, $1.user) }
    }

    /// Records of a known device were stored in the chunk at `position`.
    mutating func noteStored(_ device: DeviceID, at position: UInt64) {
        byApplication[device.app]?[device.user]?.lastPosition = position
    }

    /// No chunk after this position holds the device's records (`Slot.lastPosition`); nil for a device not known.
    func lastPosition(_ device: DeviceID) -> UInt64? { byApplication[device.app]?[device.user]?.lastPosition }

    func count(of application: String) -> Int { byApplication[application]?.count ?? 0 }

    func contains(_ device: DeviceID) -> Bool { byApplication[device.app]?[device.user] != nil }

    /// When records of a known device last came.
    func lastSeen(_ device: DeviceID) -> Double? { byApplication[device.app]?[device.user]?.lastSeen }

    /// The rejection reason for a record of a device refused by `admit`.
    func refusal(for application: String) -> String {
        let freeing = idleAge.map { "a device's slot is freed after \(Int($0)) s without records (--device-idle-age)" }
            ?? "slots are never freed (--device-idle-age 0)"
        return "a new device of an application that already has \(count(of: application)) devices (at most \(limit), "
            + "--max-devices-per-app): not accepted; records of known devices still are, and \(freeing)"
    }
}
