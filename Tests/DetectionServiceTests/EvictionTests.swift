import DetectionEngine
import Foundation
import RecordCodecs
import RoadSaveModel
import Storage
import Testing

@testable import DetectionService

/// Devices idle for `--device-memory-idle` leave detection's memory with a checkpoint (their state in the store's
/// `devices` table, `resident` 0) and come back from the store when they send again, across crashes and restarts.
///
/// The proof that a device comes back as it was, not afresh: "parker" is stopped by a control command (configured,
/// not monitored) before it leaves; its later drive must then give no event. Started afresh, auto-monitor would
/// monitor it and the drive would give a trip.
@Suite(.serialized) struct EvictionTests {
    static let parker = DeviceID(app: "app-1", user: "parker")

    /// Parked for 20 s at the start, then (after the first batch) a drive of 60 s from +110 s.
    static func parkerRecords() -> [SensorRecord] {
        var records = (0..<20).map { second in
            SensorRecord(
                device: parker, seq: UInt64(second), t: Streams.start + Double(second),
                payload: .location(LocationFix(latitude: -33.95, longitude: 18.3, speed: 0, horizontalAccuracy: 5)))
        }
        for record in Streams.drive(
            user: "parker", start: Streams.start + 110, drive: 60, standstill: 30, longitude: 18.3)
        {
            records.append(
                SensorRecord(device: parker, seq: UInt64(records.count), t: record.t, payload: record.payload))
        }
        return records
    }

    /// Rows of detection's store for devices out of memory.
    static func evictedRows(_ rig: DetectionRig) throws -> Set<String> {
        let database = try SQLiteDatabase(path: DataDirectory.file("detection.sqlite", in: rig.detectionDirectory))
        defer { database.close() }
        var users = Set<String>()
        try database.statement("SELECT user FROM devices WHERE resident = 0").query { users.insert($0.text(0)) }
        return users
    }

    enum Path: String, CaseIterable, CustomTestStringConvertible, Sendable {
        /// One detection throughout.
        case live
        /// Crashed after parker left; the next detection (no checkpoints) brings parker back from the store and
        /// crashes too; the third re-runs parker's records from the store's inputs, bringing it back again.
        case crashes
        var testDescription: String { rawValue }
    }

    @Test(arguments: Path.allCases) func anIdleDeviceLeavesMemoryAndComesBackAsItWas(_ path: Path) async throws {
        let fleet = Streams.fleet()
        let records = Streams.interleave([fleet, Self.parkerRecords()])
        // Parker gives no event (it is stopped before it drives): the reference is the rest of the fleet.
        let expected = Streams.replay(fleet)
        let batches = Streams.batches(records, cuttingAt: [25, 50, 75, 130, 160])
        try await DetectionRig.with { rig in
            let sender = BatchSender(rig: rig, batches: batches)
            try rig.startDetection(checkpointInterval: 0.3, deviceMemoryIdle: 0.5)
            try await sender.send(through: 0)
            try await rig.until("the first batch applied") { try RecoveryTests.appliedEverything(rig) }
            // Auto-monitor configures parker once its application's settings are fetched, maybe after its records
            // were applied: until then the command is refused with notConfigured. Asked again for up to 30 s, which
            // a busy machine needs more than a quiet one.
            var stop = try await rig.control(#"{"command": "stopMonitoring", "app": "app-1", "user": "parker"}"#)
            for _ in 0..<300 where stop.error == "notConfigured" {
                try await Task.sleep(nanoseconds: 100_000_000)
                stop = try await rig.control(#"{"command": "stopMonitoring", "app": "app-1", "user": "parker"}"#)
            }
            #expect(stop.ok, "\(stop.json)")
            try await rig.until("parker out of memory") { try Self.evictedRows(rig).contains("parker") }

            switch path {
            case .live:
                try await sender.send(through: batches.count - 1)
            case .crashes:
                try await rig.abandonDetection()
                try rig.startDetection(checkpointInterval: 3600, deviceMemoryIdle: 0.5)
                try await sender.send(through: batches.count - 1)
                try await rig.until("every batch applied") { try RecoveryTests.appliedEverything(rig) }
                try await rig.abandonDetection()
                #expect(try rig.storeView().inputs.contains { if case .records = $0.input { true } else { false } })
                try rig.startDetection(checkpointInterval: 0.3, deviceMemoryIdle: 0.5)
            }
            try await rig.until("every event of the replay in the outbox", timeout: 40) {
                Set(rig.uniqueEvents.map(\.event.eventID)).isSuperset(of: expected.map(\.eventID))
            }
            try await rig.until("everything applied and checkpointed") {
                try RecoveryTests.checkpointCoversEverything(rig)
            }
            // A command for parker brings it back too: still configured, not monitored.
            let state = try await rig.control(
                #"{"command": "setDetectionMode", "app": "app-1", "user": "parker", "detectionMode": "all"}"#)
            #expect(state.ok)
            #expect(state.states.first?["lifecycle"] == .string("configured"), "\(state.json)")

            let expectedJSON = Dictionary(uniqueKeysWithValues: expected.map { ($0.eventID, $0.json()) })
            for item in rig.observed.outbox {
                #expect(expectedJSON[item.event.eventID] == item.json, "not an event of the replay: \(item.json)")
            }
            #expect(!rig.observed.outbox.contains { $0.event.device == Self.parker })
            #expect(rig.observed.errors.isEmpty, "\(rig.observed.errors)")
            // Quiet again, the devices leave memory again (the fleet's trips and crashes have ended).
            try await rig.until("every device out of memory") { try Self.evictedRows(rig).count == 6 }
            try await rig.stopDetection()
        }
    }

    @Test func aStoreWrittenBeforeEvictionIsOpenedWithEveryDeviceInMemory() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "rs-evict-\(UUID().uuidString.prefix(8))"
        ).path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The schema before `resident`.
        let old = try SQLiteDatabase(path: DataDirectory.file("detection.sqlite", in: directory))
        try old.execute(
            """
            CREATE TABLE devices(app TEXT NOT NULL, user TEXT NOT NULL, state BLOB NOT NULL, PRIMARY KEY (app, user)) WITHOUT ROWID;
            CREATE TABLE checkpoint(id INTEGER PRIMARY KEY CHECK (id = 1), input INTEGER NOT NULL, taken_at REAL NOT NULL, state BLOB NOT NULL);
            INSERT INTO devices VALUES ('app-1', 'old', x'7b7d');
            INSERT INTO checkpoint VALUES (1, 0, 0, x'7b7d');
            """)
        old.close()
        let store = try DetectionStore(directory: directory, shard: "all")
        let checkpoint = try #require(try store.loadCheckpoint())
        #expect(checkpoint.devices.map(\.0) == [DeviceID(app: "app-1", user: "old")])
        try store.writeCheckpoint(
            input: 0, shared: [0x7b, 0x7d], changedDevices: [],
            evictedDevices: [(DeviceID(app: "app-1", user: "old"), [0x7b, 0x7d])], positions: [:], at: 0)
        #expect(try store.loadCheckpoint()?.devices.isEmpty == true)
        #expect(try store.evictedState(of: DeviceID(app: "app-1", user: "old")) == [0x7b, 0x7d])
        #expect(try store.evictedState(of: DeviceID(app: "app-1", user: "new")) == nil)
        #expect(try store.evictedStates(app: "app-1").map(\.0.user) == ["old"])
        var index: [DeviceID] = []
        try store.forEachEvictedDevice { index.append($0) }
        #expect(index == [DeviceID(app: "app-1", user: "old")])
        // The devices table is a rowid table now (see `DetectionStore.devicesColumns`), its rows kept.
        var schema = ""
        try store.state.statement("SELECT sql FROM sqlite_master WHERE name = 'devices'").query { schema = $0.text(0) }
        #expect(!schema.uppercased().contains("WITHOUT ROWID") && schema.contains("PRIMARY KEY (app, user)"))
        store.close()
        let reopened = try DetectionStore(directory: directory, shard: "all")
        #expect(try reopened.evictedState(of: DeviceID(app: "app-1", user: "old")) == [0x7b, 0x7d])
        reopened.close()
    }
}
