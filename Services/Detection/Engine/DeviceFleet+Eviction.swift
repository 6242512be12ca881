import RoadSaveModel

/// Eviction: devices that have been quiet for a while leave memory as a `FleetDeviceState` value (the same value a
/// checkpoint holds), and are put back before their next input. A million known devices of which a few thousand are
/// active then cost memory only for the active ones.
///
/// Only a device with nothing in flight may leave: no record buffered for ordering or waiting for its
/// application's settings, no candidate waiting for the platform's verdict, no trip in progress and no timer
/// (`nextDeadline`: stop delay, crash decision). Such a device does nothing on `tick`, `finish`, `settingsFetched`
/// or `crashEvaluated`, so leaving changes no output; put back, it is the same value, so it goes on exactly as if it
/// had never left. What the shell must do: call `restore(_:)` before any input that names the device (a record, a
/// control command for it, or one for its whole application: `control` addresses only devices in memory).
///
/// One difference is visible: a device put back joins the end of the device order (as a newly met device does),
/// so when it and another device both have timers firing in the same `tick`, their actions come in the other
/// order. Each device's own actions, and all actions of every other input, are unchanged.
extension DeviceFleet {
    /// Whether `state` may leave memory now: quiet for `idle` seconds on the shell's clock `now` (since its last
    /// record arrived), or without a clock (replay) behind the newest record time by `idle` seconds, and nothing in
    /// flight (see above).
    public func isEvictable(_ state: FleetDeviceState, idle: Double, now: Double?) -> Bool {
        guard let reference = now ?? newestRecordTime,
            let lastSeen = now == nil ? state.lastEventTime : state.lastArrival,
            reference - lastSeen >= idle
        else { return false }
        return !state.hasWorkInFlight
    }

    /// Takes every evictable device out of memory (at most `limit`) and returns their states, in the order they
    /// were met. The caller keeps them (the detection service writes them to its store with the checkpoint) and
    /// gives one back with `restore(_:)` when the device is named again. Devices that stay keep their order.
    /// `lastEvictedUnchanged` then names those that had not changed since the last `takeChangedDevices()`: a shell
    /// that wrote every changed device at its checkpoints has their current state stored already.
    public mutating func evictIdle(idle: Double, now: Double?, limit: Int = .max) -> [FleetDeviceState] {
        lastEvictedUnchanged = []
        guard limit > 0, now != nil || newestRecordTime != nil else { return [] }
        var evicted: [FleetDeviceState] = []
        // The devices changed since the last checkpoint, by ID: their slots move when the array is compacted.
        var changedDevices: [DeviceID]?
        var write = 0
        for read in devices.indices {
            if evicted.count < limit, isEvictable(devices[read], idle: idle, now: now) {
                if changedDevices == nil { changedDevices = changed.map { devices[$0].device } }
                // Slots after `read` have not moved yet: `changed` still describes this one.
                if !changed.contains(read) { lastEvictedUnchanged.insert(devices[read].device) }
                index.remove(devices[read].device, slot: read)
                evicted.append(devices[read])
                continue
            }
            if write != read {
                devices.swapAt(write, read)
                index.move(devices[write].device, from: read, to: write)
            }
            write += 1
        }
        guard let changedDevices else { return [] }
        devices.removeLast(devices.count - write)
        releaseSpareCapacity()
        wakeTimes.needsFullRefresh = true // slots moved
        // An evicted device's latest state is the value returned: it need not be written again as changed.
        changed.removeAll()
        for slot in changedDevices.compactMap({ slot(of: $0) }).sorted() { changed.insert(slot) }
        return evicted
    }

    /// An array keeps its capacity when it shrinks: after a large eviction the fleet's would hold the peak's slots
    /// (560 inline bytes each) for good. Copied into an array of the size needed once most of it is spare.
    mutating func releaseSpareCapacity() {
        guard devices.capacity > 4 * max(devices.count, 1024) else { return }
        var compact: [FleetDeviceState] = []
        compact.reserveCapacity(devices.count)
        compact.append(contentsOf: devices)
        devices = compact
    }

    /// Whether the device's state is in memory (false for a device never met, or one taken out by `evictIdle`).
    public func isResident(_ device: DeviceID) -> Bool {
        slot(of: device) != nil
    }

    /// Devices in memory.
    public var residentCount: Int { devices.count }

    /// Puts back a device that `evictIdle` took out, at the end of the device order, before an input names it.
    /// Returns false (and changes nothing) when the device is already in memory: the state in memory is newer.
    @discardableResult
    public mutating func restore(_ state: FleetDeviceState) -> Bool {
        guard slot(of: state.device) == nil else { return false }
        var state = state
        // Stored before a restart under another --reorder-window, it takes the configured one (as a checkpoint does).
        Self.adoptConfiguredOrdering(&state, options: options)
        let slot = devices.count
        devices.append(state)
        index.insert(state.device, slot: slot)
        shareSettings(slot: slot)
        // Written back at the next checkpoint as in memory again.
        changed.insert(slot)
        return true
    }
}
