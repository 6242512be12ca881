import RecordCodecs
import RoadSaveModel

/// The per-device logic around the engines, once, for replay and the detection service: record ordering, a
/// session per device, settings per application, auto-monitor (records wait while their application's settings are
/// fetched), gateways' watermarks (`FleetStreamState`), idle flush and clock-driven timers for silent devices of
/// gateways that send none, control commands and rejection counts.
///
/// A pure value, like `DeviceSession`: each input is a `mutating func` named after what happened and returns what
/// the shell must do. It never reads a clock and never lets hash order reach its output, so the same inputs in the
/// same order give the same state and the same actions, byte for byte. That is what makes recovery simple: a
/// shell that logs the inputs that are not in its journal (platform answers, control commands, ticks) can load a
/// checkpoint (`sharedState` + `deviceState(_:)` of every device, all Codable) and re-run to the same events.
public struct DeviceFleet: Sendable {
    public struct Options: Sendable, Equatable, Codable {
        /// Record ordering per device; one default window (`RecordOrdering.Options`) for replay and the service.
        public var ordering: RecordOrdering.Options
        /// A device met in the records is configured (mode all, automatic trips) and monitored with its
        /// application's settings from its first record.
        public var autoMonitor: Bool
        /// Seconds on the shell's clock without a record after which a device's reorder buffer is released
        /// (`tick` only: without a clock, records release each other).
        public var idleFlush: Double
        /// Records kept per device while its application's settings are fetched; more are counted `notMonitored`.
        public var maximumWaitingRecords: Int
        /// Seconds (on the shell's clock, or record time without one) before a failed settings fetch for an
        /// application is tried again; meanwhile records of its new devices are not monitored.
        public var settingsRetry: Double
        /// Seconds on the shell's clock a gateway's watermark may stand still while its devices wait for it; then
        /// the clock's rules (window, idle flush, quiet time) release them until it moves again: a gateway, link
        /// or ingest that is down holds its devices' records and decisions at most this long.
        public var watermarkHold: Double

        public static let defaultWatermarkHold = 60.0

        public init(
            ordering: RecordOrdering.Options = .init(), autoMonitor: Bool = true, idleFlush: Double = 1,
            maximumWaitingRecords: Int = 10_000, settingsRetry: Double = 30,
            watermarkHold: Double = Options.defaultWatermarkHold
        ) {
            self.ordering = ordering
            self.autoMonitor = autoMonitor
            self.idleFlush = idleFlush
            self.maximumWaitingRecords = maximumWaitingRecords
            self.settingsRetry = settingsRetry
            self.watermarkHold = watermarkHold
        }
    }

    public let options: Options
    /// Devices in the order they were met (a device back from eviction: from its return); `index` finds them.
    /// Internal, not private: eviction (DeviceFleet+Eviction.swift) takes devices out and puts them back.
    var devices: [FleetDeviceState] = []
    var index = DeviceIndex()
    var applications: [String: FleetApplicationState] = [:]
    /// The gateways' streams the records came through, and a number for each (the wake times name streams by it).
    var streams: [String: FleetStreamState] = [:] {
        // A stream that changed may govern its devices otherwise.
        didSet { lastGoverning = nil }
    }
    var streamNumbers: [String: Int32] = [:]
    var streamNames: [String] = []
    /// `governingWatermark`'s last answer, for the stream and clock it was for: a gateway batch's records come
    /// through one stream one after another, and finding that stream by its name (hashing the name) cost a fortieth
    /// of detection's work a record. Any change of `streams` forgets it.
    var lastGoverning: (stream: String, now: Double?, watermark: Double?)?
    /// One copy of each application's settings for all its devices' sessions (see `SessionSettings`).
    private var sharedSettings: [String: SessionSettings] = [:]
    var changed = ChangedSlots()
    /// Per slot, a time on the shell's clock before which `tick` has nothing to do for the device (`wakeTime`).
    var wakeTimes = WakeTimes()
    /// The slot of the last record's device: a run of one device's records (a gateway batch) finds it without hashing.
    private var lastSlot = 0
    /// Reused for every record, so that the common case allocates nothing.
    var rejectedScratch: [(SensorRecord, RecordOrdering.Rejection)] = []
    public internal(set) var statistics = FleetStatistics()
    /// Whether the last `tick` changed any device (a shell that logs its inputs need not keep a tick that did not).
    public internal(set) var lastTickChangedState = false
    /// The devices the last `evictIdle` took out that had not changed since the last `takeChangedDevices()`.
    public internal(set) var lastEvictedUnchanged: Set<DeviceID> = []
    var newestRecordTime: Double?

    public init(options: Options = .init()) {
        self.options = options
    }

    // MARK: Reading

    /// Platform calls the fleet is waiting for: settings fetches asked for and not answered (by application), then
    /// crash candidates sent and not answered (devices in the order met, each in the order sent). A shell restored
    /// from a checkpoint asks for them again.
    public var pendingPlatformCalls: [FleetAction] {
        let fetches = applications.values.filter(\.fetchInFlight).map(\.app).sorted().map {
            FleetAction.fetchSettings(app: $0)
        }
        let evaluations = devices.flatMap { state in
            state.awaitingEvaluation.map { FleetAction.evaluateCrash(device: state.device, candidate: $0) }
        }
        return fetches + evaluations
    }

    public var deviceCount: Int { devices.count }

    /// Gateways' streams known.
    public var streamCount: Int { streams.count }

    /// Devices in memory with a trip in progress: a pass over all of them, for metrics now and then, not per record.
    public var tripsInProgress: Int { devices.reduce(0) { $0 + ($1.session.isTripInProgress ? 1 : 0) } }

    /// Devices in the order they were met.
    public var deviceIDs: [DeviceID] { devices.map(\.device) }

    public func session(_ device: DeviceID) -> DeviceSession? {
        slot(of: device).map { devices[$0].session }
    }

    /// The settings known for an application (fetched for auto-monitor or by a control command).
    public func settings(app: String) -> DetectionSettings? {
        applications[app]?.settings
    }

    // MARK: Checkpoints

    /// Devices whose state changed since the last call, in the order they were met (for incremental checkpoints).
    /// Whether any device changed since the last `takeChangedDevices()`.
    public var hasChangedDevices: Bool { !changed.isEmpty }

    public mutating func takeChangedDevices() -> [DeviceID] {
        let slots = changed.sorted()
        changed.removeAll(keepingCapacity: true)
        return slots.map { devices[$0].device }
    }

    public func deviceState(_ device: DeviceID) -> FleetDeviceState? {
        slot(of: device).map { devices[$0] }
    }

    public var sharedState: FleetSharedState {
        FleetSharedState(
            applications: applications.values.sorted { $0.app < $1.app },
            deviceOrder: devices.map(\.device), statistics: statistics, newestRecordTime: newestRecordTime,
            streams: streams.values.sorted { $0.name < $1.name })
    }

    /// A fleet as it was checkpointed. Devices are put in `shared.deviceOrder`; a device listed there without a
    /// state is left out, and states of devices not listed follow, sorted.
    public init(options: Options, shared: FleetSharedState, devices states: [(DeviceID, FleetDeviceState)]) {
        self.options = options
        var byDevice: [DeviceID: FleetDeviceState] = [:]
        for (device, state) in states { byDevice[device] = state }
        let listed = Set(shared.deviceOrder)
        let order = shared.deviceOrder + byDevice.keys.filter { !listed.contains($0) }.sorted()
        for device in order {
            guard var state = byDevice.removeValue(forKey: device) else { continue }
            // The configured window, not the checkpoint's: changing --reorder-window and restarting takes effect
            // for every device (see `adoptConfiguredOrdering`).
            Self.adoptConfiguredOrdering(&state, options: options)
            index.insert(device, slot: devices.count)
            devices.append(state)
        }
        for application in shared.applications { applications[application.app] = application }
        for slot in devices.indices { shareSettings(slot: slot) }
        statistics = shared.statistics
        newestRecordTime = shared.newestRecordTime
        for stream in shared.streams ?? [] { streams[stream.name] = stream }
        renumberStreams()
    }

    // MARK: Internals

    /// A device restored (from a checkpoint, or back from eviction) takes the fleet's reorder window, not the one it
    /// was stored with: an operator who changes `--reorder-window` and restarts expects it to apply to all devices.
    /// Only the window: the other ordering options are not settings, and `sequenceMemory` sizes stored state.
    static func adoptConfiguredOrdering(_ state: inout FleetDeviceState, options: Options) {
        if state.ordering.options.window != options.ordering.window {
            state.ordering.adopt(window: options.ordering.window)
        }
    }

    /// What monitoring meets when the platform never gave the application's settings (the session's startup guard
    /// with nothing cached).
    static let settingsUnavailable = RoadSaveError.offlineLimitExceeded(
        lastSuccessfulFetch: nil,
        graceSeconds: DetectionSettings().offlineGrace)

    /// The device's slot, if it is in memory.
    func slot(of device: DeviceID) -> Int? {
        index.slot(of: device, in: devices)
    }

    mutating func slot(for device: DeviceID) -> Int {
        if lastSlot < devices.count, devices[lastSlot].session.device == device {
            changed.insert(lastSlot)
            return lastSlot
        }
        if let slot = slot(of: device) {
            changed.insert(slot)
            lastSlot = slot
            return slot
        }
        let slot = devices.count
        devices.append(FleetDeviceState(device: device, ordering: options.ordering))
        index.insert(device, slot: slot)
        lastSlot = slot
        statistics.devices += 1
        changed.insert(slot)
        return slot
    }

    /// The device's session takes its application's shared copy of the settings when it uses the same ones.
    mutating func shareSettings(slot: Int) {
        let app = devices[slot].device.app
        let settings = devices[slot].session.sharedSettings
        if let shared = sharedSettings[app], shared.wrappedValue == settings.wrappedValue {
            devices[slot].session.shareSettings(shared)
        } else if applications[app]?.settings == settings.wrappedValue {
            sharedSettings[app] = settings
        }
    }
}
