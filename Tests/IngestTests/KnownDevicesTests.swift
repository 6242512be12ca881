import GatewayKit
import RoadSaveModel
import Testing
import Wire

@testable import IngestService

/// The per-application device limit as a value: tentative admissions, commit, roll-back.
struct KnownDevicesTests {
    static func device(_ user: String, app: String = "app-1") -> DeviceID { DeviceID(app: app, user: user) }

    /// Which of `users` (of `app`) are admitted, in order (`#expect` cannot take a mutating call).
    static func admitted(_ users: [String], app: String = "app-1", into devices: inout KnownDevices) -> [Bool] {
        users.map { devices.admit(device($0, app: app)) != nil }
    }

    @Test func admitsUpToTheLimitPerApplicationAndKnownDevicesAlways() {
        var devices = KnownDevices(limit: 2)
        let answers = Self.admitted(["a", "b", "c", "a"], into: &devices)
        #expect(answers == [true, true, false, true], "a third device is refused; a known one goes on at the limit")
        let otherApplication = Self.admitted(["c"], app: "app-2", into: &devices)
        #expect(otherApplication == [true], "the limit is per application")
        #expect(devices.count(of: "app-1") == 2)
        #expect(devices.refusal(for: "app-1").contains("at most 2"))
    }

    @Test func aRollBackFreesTheSlotsOfDevicesWhoseRecordsWereNotStored() {
        var devices = KnownDevices(limit: 2)
        _ = Self.admitted(["a"], into: &devices)
        let stored = devices.commit()
        #expect(stored == [Self.device("a")])
        _ = Self.admitted(["b"], into: &devices)
        devices.rollBack()
        #expect(!devices.contains(Self.device("b")) && devices.contains(Self.device("a")))
        let afterRollBack = Self.admitted(["c", "b"], into: &devices)
        #expect(afterRollBack == [true, false], "b's slot went to c")
        let storedNext = devices.commit()
        #expect(storedNext == [Self.device("c")])
        #expect(devices.pending.isEmpty)
    }

    @Test func devicesLoadedFromTheStoreStayKnownWhenTheLimitWasLowered() {
        var devices = KnownDevices(limit: 1)
        devices.load(Self.device("a"))
        devices.load(Self.device("b"))
        let answers = Self.admitted(["b", "c"], into: &devices)
        #expect(answers == [true, false])
        #expect(devices.pending.isEmpty, "loaded devices are stored already")
    }

    @Test func aDeviceKeepsItsSlotNumberAndItsShardAndAFreedNumberIsTakenAgain() {
        var devices = KnownDevices(limit: 10, idleAge: 100, shards: 4)
        let a = devices.admit(Self.device("a"), now: 0)
        let b = devices.admit(Self.device("b"), now: 50)
        #expect(a != nil && b != nil && a != b)
        #expect(devices.admit(Self.device("a"), now: 60) == a, "the same device, the same number")
        for (device, number) in [(Self.device("a"), a), (Self.device("b"), b)] {
            #expect(devices.shard(ofSlot: number ?? -1) == DeviceShard.of(device, shards: 4))
        }
        _ = devices.commit()
        #expect(devices.forgetIdle(now: 155) == [Self.device("b")])
        let c = devices.admit(Self.device("c"), now: 155)
        #expect(c == b, "b's number went to c")
        #expect(devices.shard(ofSlot: c ?? -1) == DeviceShard.of(Self.device("c"), shards: 4))
        devices.noteStored(slot: c ?? -1, at: 7)
        #expect(devices.lastPosition(Self.device("c")) == 7 && devices.lastPosition(Self.device("b")) == nil)
    }

    /// What the journal asks once a gateway batch: its records' shards by their slots, and the chunk each device's
    /// records went to (for a chunk of some of the batch's records, and for one of all of them).
    @Test func aBatchsShardsAndStoredPositionsAreTheSameAsAskedSlotBySlot() {
        var devices = KnownDevices(limit: 100, shards: 4)
        let users = ["a", "b", "c", "d", "e", "a", "c"]
        let numbers = users.compactMap { devices.admit(Self.device($0)) }
        #expect(numbers.count == users.count)
        #expect(devices.shards(ofSlots: numbers) == numbers.map { devices.shard(ofSlot: $0) })
        #expect(Set(devices.shards(ofSlots: numbers)).count > 1, "the devices span several shards")
        devices.noteStored(slots: numbers, indexes: [1, 3], at: 5)
        let afterSome = ["a", "b", "c", "d", "e"].map { devices.lastPosition(Self.device($0)) }
        #expect(afterSome == [0, 5, 0, 5, 0], "only the chunk's records' devices (b and d)")
        devices.noteStored(slots: numbers, indexes: nil, at: 9)
        let afterAll = ["a", "b", "c", "d", "e"].map { devices.lastPosition(Self.device($0)) }
        #expect(afterAll == [9, 9, 9, 9, 9])
    }

    /// Thousands of devices met, rolled back and forgotten in a seeded random order (the index grows and deletes
    /// entries in the middle of its runs): each device is known exactly while a model says so, keeps its number
    /// while known, and no two known devices share one.
    @Test func devicesAreFoundByTheirNumbersThroughAdmissionsRollBacksAndForgetting() {
        var random = SplitMix64(state: 7)
        var devices = KnownDevices(limit: 100_000, idleAge: 100)
        var known: [DeviceID: Int] = [:]
        var lastSeen: [DeviceID: Double] = [:]
        var pending: [DeviceID] = []
        // Short (inline) and long (heap) identifiers, three applications.
        let everyone = (0..<3000).map {
            Self.device("user-\($0)-\(String(repeating: "x", count: $0 % 40))", app: "app-\($0 % 3)")
        }
        for step in 0..<60 {
            let now = Double(step * 10)
            for _ in 0..<200 {
                let device = everyone[Int.random(in: 0..<everyone.count, using: &random)]
                let number = devices.admit(device, now: now)
                if let old = known[device] { #expect(number == old, "a known device keeps its number") }
                if known[device] == nil, let number {
                    pending.append(device)
                    known[device] = number
                }
                lastSeen[device] = now
            }
            if Int.random(in: 0..<3, using: &random) == 0 {
                devices.rollBack()
                for device in pending {
                    known[device] = nil
                    lastSeen[device] = nil
                }
            } else {
                _ = devices.commit()
            }
            pending = []
            for device in devices.forgetIdle(now: now) {
                #expect(known[device] != nil && now - (lastSeen[device] ?? now) > 100)
                known[device] = nil
                lastSeen[device] = nil
            }
            #expect(Set(known.values).count == known.count, "no two known devices share a number")
            #expect(devices.count == known.count, "a device forgotten or rolled back leaves the index")
            for device in everyone.prefix(500) {
                #expect(devices.contains(device) == (known[device] != nil))
            }
        }
        #expect(known.count > 1000)
    }
}
