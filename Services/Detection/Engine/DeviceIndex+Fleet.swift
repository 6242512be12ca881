import RecordCodecs
import RoadSaveModel

extension DeviceIndex {
    /// The device's slot in the fleet's `devices`, if it is in the table.
    func slot(of device: DeviceID, in devices: [FleetDeviceState]) -> Int? {
        // Compared where they are, through the buffer: reading `devices[slot].device` would copy (retain) the IDs.
        devices.withUnsafeBufferPointer { devices in
            slot(of: device) { devices[$0].session.device == device }
        }
    }
}
