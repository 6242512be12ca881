import DetectionEngine
import Foundation
import RoadSaveModel
import Storage
import Testing

@testable import DetectionService

/// Device rows compressed against the store's dictionary (`DeviceRowCodec`): they read back as the JSON written,
/// rows written before compression read as they are, the dictionary is stored with the first checkpoint using it,
/// and a row that cannot be read says why.
@Suite struct DeviceRowCodecTests {
    /// The JSON of `count` parked devices' states, as a checkpoint encodes them.
    static func parkedStates(_ count: Int) throws -> [(DeviceID, [UInt8])] {
        var fleet = DeviceFleet()
        let start = 1_772_433_000.0
        _ = fleet.settingsFetched(app: "app-1", .fetched(DetectionSettings()), now: start)
        for index in 0..<count {
            let device = DeviceID(app: "app-1", user: "parked-\(index)")
            _ = fleet.receive(
                SensorRecord(device: device, seq: 0, t: start + Double(index), payload: .capabilities(.full)),
                now: start + Double(index))
            _ = fleet.receive(
                SensorRecord(
                    device: device, seq: 1, t: start + Double(index) + 1,
                    payload: .location(
                        LocationFix(
                            latitude: -33.9 + Double(index) * 0.001,
                            longitude: 18.4, speed: 0, horizontalAccuracy: 5))),
                now: start + Double(index) + 1)
        }
        _ = fleet.tick(now: start + Double(count) + 5)
        return try fleet.takeChangedDevices().map { device in
            (device, try DetectionService.checkpointJSON(try #require(fleet.deviceState(device))))
        }
    }

    @Test func rowsReadBackAsTheirJSONAndTakeAFractionOfIt() throws {
        let codec = DeviceRowCodec()
        let states = try Self.parkedStates(20)
        let rows = states.map { codec.compress($0.1) }
        for (row, (_, json)) in zip(rows, states) {
            #expect(row.first == DeviceRowCodec.marker)
            #expect(try codec.json(row) == json)
        }
        // Against the first device's JSON, each of the others takes a small part of its own.
        let json = states.dropFirst().map(\.1.count).reduce(0, +)
        let compressed = rows.dropFirst().map(\.count).reduce(0, +)
        #expect(compressed * 5 < json, "\(compressed) bytes compressed for \(json) of JSON")
    }

    @Test func rowsWrittenAsJSONReadAsTheyAre() throws {
        let json = Array(#"{"session":{}}"#.utf8)
        #expect(try DeviceRowCodec().json(json) == json)
    }

    @Test func aRowThatCannotBeReadSaysWhy() throws {
        let codec = DeviceRowCodec()
        let unknown: [UInt8] = [DeviceRowCodec.marker, 7, 0, 0, 0, 0x28, 0xB5, 0x2F, 0xFD]
        #expect(throws: DeviceRowCodec.CorruptRow.self) { try codec.json(unknown) }
        do {
            _ = try codec.json(unknown, of: DeviceID(app: "app-1", user: "parked-7"))
        } catch {
            #expect("\(error)".contains("dictionary 7") && "\(error)".contains("parked-7"), "\(error)")
        }
        // A known dictionary, a broken frame.
        let row = codec.compress(try Self.parkedStates(1)[0].1)
        var broken = row
        broken.removeLast(broken.count / 2)
        #expect(throws: DeviceRowCodec.CorruptRow.self) { try codec.json(broken) }
    }

    /// The dictionary goes into the store with the checkpoint whose rows use it: reopened, the store reads them.
    @Test func theDictionaryIsStoredWithTheFirstCheckpointUsingIt() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "rs-rows-\(UUID().uuidString.prefix(8))"
        ).path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let states = try Self.parkedStates(3)
        var store = try DetectionStore(directory: directory, shard: "all")
        let rows = states.map { ($0.0, store.rows.compress($0.1)) }
        try store.writeCheckpoint(
            input: 0, shared: Array("{}".utf8), changedDevices: Array(rows.prefix(2)),
            evictedDevices: [rows[2]], positions: [:], at: 1)
        #expect(store.rows.dictionaryToStore == nil, "stored with the checkpoint")
        store.close()

        store = try DetectionStore(directory: directory, shard: "all")
        defer { store.close() }
        let loaded = try #require(try store.loadCheckpoint())
        #expect(
            Dictionary(uniqueKeysWithValues: loaded.devices.map { ($0.0, $0.1) })
                == Dictionary(uniqueKeysWithValues: states.prefix(2).map { ($0.0, $0.1) }))
        #expect(try store.evictedState(of: states[2].0) == states[2].1)
        // New rows of the reopened store use the same dictionary (and need not store it again).
        let again = store.rows.compress(states[0].1)
        #expect(store.rows.dictionaryToStore == nil)
        #expect(try store.rows.json(again) == states[0].1)
    }
}
