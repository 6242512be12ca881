import DetectionEngine
import RoadSaveModel

/// A device's state that left memory and is not written yet, behind one reference: the tables and lists that hold
/// the states of a checkpoint's leaving devices (tens of thousands at a time) then hold 8 bytes each, not a copy of
/// the state's 560 inline bytes each.
final class EvictedState: Sendable {
    let state: FleetDeviceState

    init(_ state: FleetDeviceState) {
        self.state = state
    }

    var device: DeviceID { state.device }
}
