import DetectionEngine
import Foundation
import RoadSaveModel
import SystemKit
import Testing

@testable import DetectionService

/// A state leaving memory keeps only its row once the checkpoint has encoded it, and gives the same state back
/// from it (a device heard again before the checkpoint is written).
@Suite struct EvictedStateTests {
    @Test func theStateComesBackTheSameFromItsRow() throws {
        let device = DeviceID(app: "app-1", user: "parked")
        var fleet = DeviceFleet()
        let start = 1_772_433_000.0
        _ = fleet.receive(SensorRecord(device: device, seq: 0, t: start, payload: .capabilities(.full)), now: start)
        _ = fleet.receive(
            SensorRecord(
                device: device, seq: 1, t: start + 1,
                payload: .location(
                    LocationFix(
                        latitude: -33.9, longitude: 18.4, speed: 0,
                        horizontalAccuracy: 5))), now: start + 1)
        _ = fleet.settingsFetched(app: device.app, .fetched(DetectionSettings()), now: start + 2)
        _ = fleet.tick(now: start + 3)
        let state = try #require(fleet.evictIdle(idle: 5, now: start + 10).first)
        let sorted = JSONEncoder()
        sorted.outputFormatting = .sortedKeys

        let rows = DeviceRowCodec()
        let evicted = EvictedState(state, lock: Locked(), rows: rows)
        #expect(try sorted.encode(evicted.state()) == sorted.encode(state))
        var encodings = 0
        let row = try evicted.encodedRow {
            encodings += 1
            return rows.compress(try DetectionService.checkpointJSON($0))
        }
        #expect(
            try evicted.encodedRow { _ in
                encodings += 1
                return []
            } == row, "made once")
        #expect(encodings == 1)
        #expect(try sorted.encode(evicted.state()) == sorted.encode(state))
        #expect(evicted.device == device)
    }
}
