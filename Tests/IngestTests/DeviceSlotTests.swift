import Foundation
import RoadSaveModel
import Storage
import Testing

@testable import IngestService

/// Device slots (--max-devices-per-app) are freed when a device sends nothing for --device-idle-age: as a value, and
/// through the journal, persistently.
struct DeviceSlotTests {
    static func device(_ user: String, app: String = "app-1") -> DeviceID { DeviceID(app: app, user: user) }

    @Test func aBatchsDevicesAreAdmittedInOrderEachRunOnce() {
        // What ingest asks of a gateway batch: a slot for each record's device, in order, nil where refused.
        var devices = KnownDevices(limit: 2, idleAge: 1000)
        let users = ["a", "a", "b", "c", "c", "a", "b"]
        let records = users.map {
            SensorRecord(device: Self.device($0), t: 1, payload: .steps(1))
        }
        let (slots, refused) = devices.admit(devicesOf: records, now: 5)
        #expect(slots == [0, 0, 1, 0, 1])
        #expect(refused == [3, 4])
        #expect(devices.pending == [Self.device("a"), Self.device("b")], "admitted once each, in order")
        // The same as asking record by record.
        var one = KnownDevices(limit: 2, idleAge: 1000)
        #expect(records.compactMap { one.admit($0.device, now: 5) } == slots)
    }

    @Test func anIdleDeviceFreesItsSlotForANewOne() {
        var devices = KnownDevices(limit: 2, idleAge: 1000)
        let admitted1 = devices.admit(Self.device("a"), now: 0) != nil
        #expect(admitted1)
        let admitted2 = devices.admit(Self.device("b"), now: 0) != nil
        #expect(admitted2)
        _ = devices.commit()
        let admitted3 = devices.admit(Self.device("c"), now: 500) != nil
        #expect(!admitted3, "full")
        let admitted4 = devices.admit(Self.device("b"), now: 600) != nil
        #expect(admitted4, "b sends again")
        let forgotten5 = devices.forgetIdle(now: 1000)
        #expect(forgotten5 == [], "nobody idle for more than 1000 s yet")
        let forgotten6 = devices.forgetIdle(now: 1001)
        #expect(forgotten6 == [Self.device("a")], "a has sent nothing since 0")
        let admitted7 = devices.admit(Self.device("c"), now: 1001) != nil
        #expect(admitted7, "a's slot went to c")
        let admitted8 = devices.admit(Self.device("a"), now: 1002) != nil
        #expect(!admitted8, "a coming back is a new device, and there is no room")
        #expect(devices.refusal(for: "app-1").contains("--device-idle-age"))
    }

    @Test func withoutAnIdleAgeSlotsAreNeverFreed() {
        var devices = KnownDevices(limit: 1, idleAge: 0)
        let admitted9 = devices.admit(Self.device("a"), now: 0) != nil
        #expect(admitted9)
        _ = devices.commit()
        let forgotten10 = devices.forgetIdle(now: 1e9)
        #expect(forgotten10 == [])
        #expect(devices.contains(Self.device("a")))
        #expect(devices.refusal(for: "app-1").contains("never freed"))
    }

    @Test func tentativeAdmissionsAreNotForgottenAndAClockStepBackMakesNobodyOlder() {
        var devices = KnownDevices(limit: 5, idleAge: 100)
        let admitted11 = devices.admit(Self.device("a"), now: 1000) != nil
        #expect(admitted11)
        let admitted12 = devices.admit(Self.device("a"), now: 10) != nil
        #expect(admitted12, "a step back of the wall clock")
        #expect(devices.lastSeen(Self.device("a")) == 1000)
        let forgotten13 = devices.forgetIdle(now: 5000)
        #expect(forgotten13 == [], "a is tentative (its records are not stored yet)")
        _ = devices.commit()
        let forgotten14 = devices.forgetIdle(now: 5000)
        #expect(forgotten14 == [Self.device("a")])
    }

    @Test func lastSeenIsSavedOnlyWhenItMovedBySaveInterval() {
        var devices = KnownDevices(limit: 5, idleAge: 1000)
        #expect(devices.saveInterval == 100)
        #expect(KnownDevices(limit: 1, idleAge: 30 * 86_400).saveInterval == 3600, "at most an hour")
        _ = devices.admit(Self.device("a"), now: 0)
        #expect(devices.unsaved.map(\.device) == [Self.device("a")], "new: saved with its records")
        _ = devices.commit()
        _ = devices.admit(Self.device("a"), now: 50)
        #expect(devices.unsaved.isEmpty, "50 s later: not worth a write")
        _ = devices.admit(Self.device("a"), now: 120)
        #expect(devices.unsaved.map(\.device) == [Self.device("a")] && devices.unsaved.first?.lastSeen == 120)
        _ = devices.commit()
        #expect(devices.unsaved.isEmpty)
    }

    @Test func theJournalFreesIdleSlotsInItsStoreAndKeepsThemFreeAfterARestart() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let clock = TestClock(1_000_000)
        func open() throws -> Journal {
            try Journal(
                directory: directory.path, shards: 4, maximumDevicesPerApplication: 2, deviceIdleAge: 3600,
                log: Records.quiet, clock: { clock.now })
        }
        do {
            let journal = try open()
            #expect(journal.admit(Self.device("a")) != nil && journal.admit(Self.device("b")) != nil)
            try journal.append([
                .init(id: "1", records: Records.drive(user: "a", count: 1) + Records.drive(user: "b", count: 1))
            ])
            clock.now += 3000
            #expect(journal.admit(Self.device("b")) != nil, "b sends again")
            try journal.append([.init(id: "2", records: Records.drive(user: "b", count: 1, start: 1_772_434_000))])
            #expect(journal.admit(Self.device("c")) == nil)
            clock.now += 1000
            try journal.enforceRetention()
            #expect(
                !journal.knows(Self.device("a")) && journal.knows(Self.device("b")), "a idle for 4000 s, b for 1000 s")
            #expect(journal.statistics.freedDevices == 1)
            journal.close()
        }
        let database = try SQLiteDatabase(path: directory.path + "/" + Journal.fileName)
        #expect(
            try database.integer("SELECT count(*) FROM devices WHERE app = 'app-1' AND user = 'a'") == 0,
            "deleted from the store")
        #expect(try database.integer("SELECT count(*) FROM devices WHERE user = 'b' AND last_seen = 1003000") == 1)
        database.close()

        let journal = try open()
        defer { journal.close() }
        #expect(journal.deviceCount(of: "app-1") == 1, "the slot is still free after a restart")
        #expect(journal.admit(Self.device("c")) != nil)
        #expect(journal.admit(Self.device("d")) == nil)
    }

    @Test func aJournalFromBeforeLastSeenIsUpgradedAndItsDevicesCountAsSeenAtOpen() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let clock = TestClock(1_000_000)
        do {
            let journal = try Journal(directory: directory.path, shards: 4, log: Records.quiet, clock: { clock.now })
            #expect(journal.admit(Self.device("old")) != nil)
            try journal.append([.init(id: "1", records: Records.drive(user: "old", count: 1))])
            journal.close()
            let database = try SQLiteDatabase(path: journal.path)
            try database.execute("ALTER TABLE devices DROP COLUMN last_seen")
            database.close()
        }
        clock.now += 10 * 86_400
        let journal = try Journal(
            directory: directory.path, shards: 4, deviceIdleAge: 3600, log: Records.quiet,
            clock: { clock.now })
        defer { journal.close() }
        try journal.enforceRetention()
        #expect(journal.knows(Self.device("old")), "its idle time starts at the upgrade")
        clock.now += 3601
        try journal.enforceRetention()
        #expect(!journal.knows(Self.device("old")))
    }
}
