import RoadSaveModel
import Testing

@testable import IngestService

/// Crash-relevant batches first in a group commit's journal order, never past a batch that shares a device or a
/// stream with them (`UrgentBatchOrder`).
struct UrgentBatchOrderTests {
    struct Batch: UrgencyReadable {
        var records: [SensorRecord]
        var slots: [Int]?
        var stream: String?
    }

    static let impactTime = 1_772_433_100.0

    /// A fix of the device in `slot` at `t` for each of `slots` (a gateway's batch of many devices).
    static func fixes(_ slots: [Int], at t: Double = impactTime, stream: String? = "bulk") -> Batch {
        let records = slots.map { slot in
            SensorRecord(
                device: DeviceID(app: "app-1", user: "user-\(slot)"), t: t,
                payload: .location(LocationFix(latitude: -33.9, longitude: 18.4, speed: 12, horizontalAccuracy: 5)))
        }
        return Batch(records: records, slots: slots, stream: stream)
    }

    /// A phone's batch with an impact at `impactTime`, between two fixes.
    static func impact(slot: Int, stream: String? = nil) -> Batch {
        var batch = fixes([slot], at: impactTime - 1, stream: stream)
        batch.records.append(
            SensorRecord(
                device: DeviceID(app: "app-1", user: "user-\(slot)"), t: impactTime,
                payload: .impact(ImpactObservation(peakG: 45))))
        batch.records.append(fixes([slot], at: impactTime + 1).records[0])
        batch.slots = [slot, slot, slot]
        return batch
    }

    @Test func aGroupWithoutImpactsKeepsItsArrivalOrder() {
        var order = UrgentBatchOrder()
        #expect(
            order.journalOrder(of: [Self.fixes([1, 2]), Self.fixes([3, 4]), Self.fixes([5], stream: nil)], now: 0)
                == nil)
        #expect(order.impacts.isEmpty)
    }

    @Test func anImpactGoesAheadOfOtherDevicesBulk() {
        var order = UrgentBatchOrder()
        let group = [Self.fixes(Array(1...500)), Self.fixes(Array(501...1000)), Self.impact(slot: 2000)]
        #expect(order.journalOrder(of: group, now: 0) == [2, 0, 1])
    }

    @Test func theRecordsThatDecideTheCrashFollowItAheadForAMinute() {
        var order = UrgentBatchOrder()
        #expect(order.journalOrder(of: [Self.impact(slot: 7)], now: 0) == nil, "alone, it is first anyway")
        let decide = Self.fixes([7], at: Self.impactTime + 30, stream: nil)
        #expect(order.journalOrder(of: [Self.fixes(Array(1...6)), decide], now: 1) == [1, 0])
        let later = Self.fixes([7], at: Self.impactTime + UrgentBatchOrder.urgentAfterImpact + 1, stream: nil)
        #expect(order.journalOrder(of: [Self.fixes(Array(1...6)), later], now: 2) == nil)
        let before = Self.fixes([7], at: Self.impactTime - 5, stream: nil)
        #expect(order.journalOrder(of: [Self.fixes(Array(1...6)), before], now: 3) == nil, "a late record of before")
    }

    @Test func itNeverOvertakesABatchOfTheSameDeviceOrStream() {
        var order = UrgentBatchOrder()
        // The same device earlier in the group: its records keep their order.
        #expect(order.journalOrder(of: [Self.fixes([1, 2, 9]), Self.impact(slot: 9)], now: 0) == nil)
        // The same stream earlier: a watermark must not come before the records it vouches for.
        #expect(order.journalOrder(of: [Self.fixes([1, 2]), Self.impact(slot: 10, stream: "bulk")], now: 0) == nil)
        #expect(
            order.journalOrder(of: [Self.fixes([1, 2]), Self.impact(slot: 11, stream: "phone-gateway")], now: 0)
                == [1, 0])
        // Devices unknown (no slots): nothing passes it.
        var unknown = Self.fixes([1, 2])
        unknown.slots = nil
        #expect(order.journalOrder(of: [unknown, Self.impact(slot: 12)], now: 0) == nil)
        // A gateway's word alone (a watermark, no records) holds back only its stream.
        let word = Batch(records: [], slots: nil, stream: "bulk")
        #expect(order.journalOrder(of: [word, Self.impact(slot: 13)], now: 0) == [1, 0])
        #expect(order.journalOrder(of: [word, Self.impact(slot: 14, stream: "bulk")], now: 0) == nil)
        // An urgent batch held in place stays there; a later one of other devices still goes ahead.
        let group = [Self.fixes([20]), Self.impact(slot: 20), Self.fixes([30, 31]), Self.impact(slot: 40)]
        #expect(order.journalOrder(of: group, now: 0) == [3, 0, 1, 2])
    }

    @Test func anImpactIsForgottenTenMinutesAfterItArrived() {
        var order = UrgentBatchOrder()
        _ = order.journalOrder(of: [Self.impact(slot: 7)], now: 0)
        let decide = Self.fixes([7], at: Self.impactTime + 30, stream: nil)
        #expect(order.journalOrder(of: [Self.fixes([1]), decide], now: UrgentBatchOrder.impactMemory + 1) == nil)
        #expect(order.impacts.isEmpty)
    }
}
