import DetectionEngine
import Foundation
import RoadSaveModel
import SystemKit

/// A device's state that left memory and is not written yet, behind one reference: the tables and lists that hold
/// the states of a checkpoint's leaving devices (tens of thousands at a time) then hold 8 bytes each, not a copy of
/// the state's 560 inline bytes each.
///
/// Once the checkpoint's encoding thread has made its row, only the row is kept (`encodedRow`): the state (~4 KB of
/// heap for a quiet device) goes back while the rest of the checkpoint is encoded and written, instead of both being
/// held until then. A device heard again before that write gets its state back from the row (`state()`), as one
/// read from the store would.
final class EvictedState: @unchecked Sendable {
    // @unchecked: `held` is read and replaced only under `lock` (the encoding thread and the reactor thread).
    private enum Held {
        case state(FleetDeviceState)
        case row([UInt8])
    }

    let device: DeviceID
    private var held: Held
    /// Shared by the states of one `EvictedDevices` (a lock each would cost more than the reference it guards).
    private let lock: Locked<Void>
    /// What reads the row back (it is compressed, `DeviceRowCodec`).
    private let rows: DeviceRowCodec

    init(_ state: FleetDeviceState, lock: Locked<Void>, rows: DeviceRowCodec) {
        device = state.device
        held = .state(state)
        self.lock = lock
        self.rows = rows
    }

    private var current: Held {
        lock.withLock { held }
    }

    /// The state, decoded from its row if that was made already.
    func state() throws -> FleetDeviceState {
        switch current {
        case .state(let state): return state
        case .row(let bytes):
            return try JSONDecoder().decode(FleetDeviceState.self, from: Data(rows.json(bytes, of: device)))
        }
    }

    /// The state's row, made by `encode` the first time; from then on only the row is kept.
    func encodedRow(_ encode: (FleetDeviceState) throws -> [UInt8]) throws -> [UInt8] {
        switch current {
        case .row(let bytes):
            return bytes
        case .state(let state):
            let bytes = try encode(state)
            lock.withLock { held = .row(bytes) }
            return bytes
        }
    }
}
