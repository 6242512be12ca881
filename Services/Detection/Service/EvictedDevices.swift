import DetectionEngine
import Foundation
import RoadSaveModel
import SystemKit

/// detection's devices that left memory (`--device-memory-idle`): where their states are and how to get them back.
///
/// A state leaves the fleet at a checkpoint and is written with it (same transaction), so the store's checkpoint and
/// its `devices` rows always agree: a restart re-running the inputs after the checkpoint reads an evicted device
/// back exactly when the first run did. Until that write has succeeded the state is kept here (`unsaved`); a device
/// named meanwhile comes back from here.
///
/// A device that is neither in memory nor here is looked up in the store only if its hash is in `index`: one `Int`
/// per device that ever left (about 16 bytes each in a `Set`), so a device never seen costs no query, and a hash
/// shared by chance costs one query that finds nothing. Entries are never removed (a device back in memory is not
/// looked up while it is there), so no other device's entry can be lost with it.
struct EvictedDevices: EvictedDeviceStore {
    private var index = Set<Int>()
    /// Where the states written with earlier checkpoints are read back (set by `load(from:)`).
    private var store: DetectionStore?
    /// Evicted states not yet written to the store (their checkpoint is being encoded, failed or was superseded).
    /// Boxed: a bucket holding the 560 inline bytes of a state, at the table's load factor, cost ~1 KB a device
    /// (155 MB for one checkpoint of 100,000 devices leaving, measured with heaptrack) where a reference costs 8.
    private(set) var unsaved: [DeviceID: EvictedState] = [:]
    private let unsavedLock = Locked()
    /// Devices of `unsaved` whose state the store has already (unchanged since a checkpoint wrote it): their row
    /// needs only to be marked out of memory, not encoded and written again.
    private(set) var storedAlready: Set<DeviceID> = []
    private let decoder = JSONDecoder()
    /// Reads rows made by the checkpoint writer (the store's, from `load(from:)`).
    private var rows = DeviceRowCodec()
    /// Devices that left memory / came back / lookups that found nothing (hash shared with an evicted device).
    private(set) var evictions = 0
    private(set) var restores = 0
    private(set) var emptyLookups = 0
    /// Devices out of memory when the store was opened.
    private var outOfMemoryAtLoad = 0

    /// Devices whose state is out of memory now (in the store, or leaving with a checkpoint).
    var outOfMemory: Int { outOfMemoryAtLoad + evictions - restores }

    /// Whether no device ever left memory (then nothing needs looking up).
    var isEmpty: Bool { index.isEmpty }

    /// Reads the index of the store's evicted devices (at start).
    mutating func load(from store: DetectionStore) throws {
        var loaded = Set<Int>()
        var count = 0
        try store.forEachEvictedDevice {
            loaded.insert($0.hashValue)
            count += 1
        }
        index = loaded
        outOfMemoryAtLoad = count
        rows = store.rows
        self.store = store
    }

    mutating func takeBack(_ device: DeviceID) throws -> FleetDeviceState? { try takeBack(device, from: store) }

    mutating func takeBack(app: String) throws -> [FleetDeviceState] { try takeBack(app: app, from: store) }

    /// States that have just left the fleet (not yet written); `storedAlready`: those whose state the store has.
    mutating func left(_ states: [FleetDeviceState], storedAlready stored: Set<DeviceID> = []) {
        for state in states {
            unsaved[state.device] = EvictedState(state, lock: unsavedLock, rows: rows)
            index.insert(state.device.hashValue)
            if stored.contains(state.device) {
                storedAlready.insert(state.device)
            } else {
                storedAlready.remove(state.device)
            }
        }
        evictions += states.count
    }

    /// The checkpoint holding these devices' states is on disk.
    mutating func written(_ devices: [DeviceID]) {
        for device in devices {
            unsaved.removeValue(forKey: device)
            storedAlready.remove(device)
        }
        // A table keeps its capacity when emptied: one large eviction would hold its peak size for good.
        if unsaved.isEmpty { unsaved = [:] }
        if storedAlready.isEmpty { storedAlready = [] }
    }

    /// The state of `device` if it left memory (taken from here or read from the store), nil otherwise.
    mutating func takeBack(_ device: DeviceID, from store: DetectionStore?) throws -> FleetDeviceState? {
        if let evicted = unsaved.removeValue(forKey: device) {
            storedAlready.remove(device)
            restores += 1
            return try evicted.state()
        }
        guard index.contains(device.hashValue), let store else { return nil }
        guard let bytes = try store.evictedState(of: device) else {
            emptyLookups += 1
            return nil
        }
        restores += 1
        return try decoder.decode(FleetDeviceState.self, from: Data(bytes))
    }

    /// Every device of `app` that left memory (a command addressing the whole application), in user order.
    mutating func takeBack(app: String, from store: DetectionStore?) throws -> [FleetDeviceState] {
        var states: [DeviceID: FleetDeviceState] = [:]
        for (device, evicted) in unsaved where device.app == app { states[device] = try evicted.state() }
        for device in states.keys {
            unsaved.removeValue(forKey: device)
            storedAlready.remove(device)
        }
        if let store {
            for (device, bytes) in try store.evictedStates(app: app) where states[device] == nil {
                states[device] = try decoder.decode(FleetDeviceState.self, from: Data(bytes))
            }
        }
        restores += states.count
        return states.keys.sorted().map { states[$0]! }
    }

    /// Gives the heap pages freed by devices that left back to the system: glibc keeps freed memory for reuse, so
    /// without this the resident size stays at its high-water mark after a large eviction.
    static func returnFreedMemory() {
        #if os(Linux)
            _ = glibcMallocTrim(0)
        #endif
    }
}

#if os(Linux)
    // glibc's malloc_trim(3): not in the Glibc module's headers.
    @_silgen_name("malloc_trim")
    private func glibcMallocTrim(_ pad: Int) -> Int32
#endif
