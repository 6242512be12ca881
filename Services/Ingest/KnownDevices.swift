import RoadSaveModel

/// The devices (clientUserIDs) of each application that ingest has accepted records of, at most `limit` per
/// application: a flood of new users cannot grow ingest's memory, the journal or detection's fleet without bound.
/// Pure: the journal loads it from and saves it to its `devices` table, in the same transaction as the records.
///
/// Admissions are tentative until `commit()` (the records were stored) or `rollBack()` (they were not), so a device
/// whose records were refused with their batch does not hold a slot.
struct KnownDevices {
    let limit: Int
    private(set) var byApplication: [String: Set<String>] = [:]
    /// Devices admitted since the last commit or roll-back, in order.
    private(set) var pending: [DeviceID] = []

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// A device known from the store (at open): known whatever the limit is now.
    mutating func load(_ device: DeviceID) {
        byApplication[device.app, default: []].insert(device.user)
    }

    /// True if the device is known, or new and its application still has room (it then becomes known, tentatively).
    mutating func admit(_ device: DeviceID) -> Bool {
        if byApplication[device.app]?.contains(device.user) == true { return true }
        guard count(of: device.app) < limit else { return false }
        byApplication[device.app, default: []].insert(device.user)
        pending.append(device)
        return true
    }

    /// The devices admitted since the last commit, now stored: returns them and forgets that they were tentative.
    mutating func commit() -> [DeviceID] {
        defer { pending = [] }
        return pending
    }

    /// The records of the tentative admissions were not stored: the devices are unknown again.
    mutating func rollBack() {
        for device in pending { byApplication[device.app]?.remove(device.user) }
        pending = []
    }

    func count(of application: String) -> Int { byApplication[application]?.count ?? 0 }

    func contains(_ device: DeviceID) -> Bool { byApplication[device.app]?.contains(device.user) == true }

    /// The rejection reason for a record of a device refused by `admit`.
    func refusal(for application: String) -> String {
        "a new device of an application that already has \(count(of: application)) devices (at most \(limit), "
            + "--max-devices-per-app): not accepted; records of known devices still are"
    }
}
