import DetectionEngine
import Foundation
import RoadSaveModel
import Testing

@testable import DetectionService

/// A graceful stop while a periodic checkpoint is still being encoded off the reactor: the last checkpoint must
/// still hold every device the journal positions say were read.
@Suite(.serialized) struct StopCheckpointTests {
    @Test func aGracefulStopDuringACheckpointKeepsEveryDevice() async throws {
        let devices = 4000
        let records = (0..<devices).map { index in
            SensorRecord(
                device: DeviceID(app: "app-1", user: "many-\(index)"), seq: 1, t: Streams.start + Double(index) * 0.001,
                payload: .location(LocationFix(latitude: -33.9, longitude: 18.4, speed: 0, horizontalAccuracy: 5)))
        }
        try await DetectionRig.with { rig in
            try rig.startDetection(checkpointInterval: 0.1)
            try await rig.send(records, batch: "many")
            try await rig.until("the records applied") { try rig.appliedPosition() == rig.journalHead() }
            // Checkpoints every 0.1 s of 4000 new devices take longer than that to encode (debug build): the stop
            // nearly always finds one in flight.
            try await rig.stopDetection()
            let view = try rig.storeView()
            #expect(
                try view.positions.values.max() == rig.journalHead(), "the last checkpoint's journal position is behind"
            )
            #expect(view.inputs.isEmpty)
            let stored = try rig.storedDeviceCount()
            #expect(stored == devices, "the last checkpoint holds \(stored) of \(devices) devices")
        }
    }
}
