import Foundation
import RoadSaveModel
import Testing

@testable import DetectionEngine

/// A device restored from a checkpoint (a restart) or from the store (back from eviction) takes the reorder window
/// the fleet is configured with now, not the one it was stored with: changing `--reorder-window` and restarting
/// takes effect for every device.
@Suite struct ReorderWindowRestartTests {
    static let alice = FleetStreams.device("alice")

    static func options(window: Double) -> DeviceFleet.Options { DeviceFleet.Options(ordering: .init(window: window)) }

    /// alice's records at 0 s and 5 s, checkpointed under a 10 s window: both still buffered.
    static func checkpoint() -> (shared: Data, devices: [(DeviceID, Data)]) {
        var fleet = DeviceFleet(options: options(window: 10))
        _ = fleet.settingsFetched(app: FleetStreams.app, .fetched(DetectionSettings()), now: nil)
        _ = fleet.receive(DeviceFleetTests.fix(alice, at: Script.start, seq: 1), now: nil)
        _ = fleet.receive(DeviceFleetTests.fix(alice, at: Script.start + 5, seq: 2), now: nil)
        #expect(fleet.statistics.applied == 0 && fleet.deviceState(alice)?.ordering.bufferedCount == 2)
        return FleetDriver.encode(fleet)
    }

    /// How many of the checkpoint's records a record at 20 s releases in a fleet restored under `window`.
    static func appliedAfterARecordAt20s(restoredUnder window: Double) -> (window: Double?, applied: Int) {
        let (shared, devices) = checkpoint()
        var fleet = FleetDriver.decode(options: options(window: window), shared: shared, devices: devices)
        _ = fleet.receive(DeviceFleetTests.fix(alice, at: Script.start + 20, seq: 3), now: nil)
        return (fleet.deviceState(alice)?.ordering.options.window, fleet.statistics.applied)
    }

    @Test func aDeviceRestoredFromACheckpointTakesTheConfiguredWindow() {
        // Made with 10, restored under 30: 20 s is within 30 s of 0 s and 5 s, so both stay buffered.
        let wider = Self.appliedAfterARecordAt20s(restoredUnder: 30)
        #expect(wider.window == 30 && wider.applied == 0)
        // Under the window it was made with, the same record releases both (as before the restart).
        let same = Self.appliedAfterARecordAt20s(restoredUnder: 10)
        #expect(same.window == 10 && same.applied == 2)
    }

    @Test func aDeviceBackFromTheStoreTakesTheConfiguredWindow() throws {
        let decoder = JSONDecoder()
        let state = try decoder.decode(FleetDeviceState.self, from: try #require(Self.checkpoint().devices.first?.1))
        #expect(state.ordering.options.window == 10)
        var fleet = DeviceFleet(options: Self.options(window: 30))
        let restored = fleet.restore(state)
        #expect(restored)
        #expect(fleet.deviceState(Self.alice)?.ordering.options.window == 30)
    }
}
