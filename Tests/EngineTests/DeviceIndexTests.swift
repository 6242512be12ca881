import GatewayKit
import RecordCodecs
import RoadSaveModel
import Testing

@testable import DetectionEngine

/// `DeviceIndex` against a dictionary: inserts, removals (backward-shift deletion) and moves of slots, as the fleet's
/// eviction compacts its devices array, in a seeded random order, and every device looked up after each step.
@Suite struct DeviceIndexTests {
    func device(_ number: Int) -> DeviceID {
        // Short (inline) and long (heap) identifiers, and two applications.
        DeviceID(
            app: number % 3 == 0 ? "app-with-a-long-identifier-\(number % 2)" : "demo",
            user: number % 2 == 0 ? "u\(number)" : "user-with-a-much-longer-name-\(number)")
    }

    @Test func agreesWithADictionaryThroughInsertsRemovalsAndMoves() {
        var random = SplitMix64(state: 42)
        var index = DeviceIndex()
        var devices: [FleetDeviceState] = []
        var reference: [DeviceID: Int] = [:]
        var nextNumber = 0
        func check() {
            #expect(index.count == reference.count)
            for (slot, state) in devices.enumerated() { #expect(index.slot(of: state.device, in: devices) == slot) }
            // Devices taken out, or never met, are not found.
            for number in -1...nextNumber where reference[device(number)] == nil {
                #expect(index.slot(of: device(number), in: devices) == nil)
            }
        }
        for round in 0..<40 {
            // Meet some devices.
            for _ in 0..<Int.random(in: 1...60, using: &random) {
                let id = device(nextNumber)
                nextNumber += 1
                index.insert(id, slot: devices.count)
                reference[id] = devices.count
                devices.append(FleetDeviceState(device: id, ordering: .init()))
            }
            check()
            // Evict some, compacting the array as DeviceFleet.evictIdle does.
            var write = 0
            for read in devices.indices {
                if Int.random(in: 0..<4, using: &random) == 0 {
                    index.remove(devices[read].device, slot: read)
                    reference[devices[read].device] = nil
                    continue
                }
                if write != read {
                    devices.swapAt(write, read)
                    index.move(devices[write].device, from: read, to: write)
                    reference[devices[write].device] = write
                }
                write += 1
            }
            devices.removeLast(devices.count - write)
            check()
            if round % 10 == 9 {
                // Put back a few that left, at the end.
                for number in stride(from: 0, to: nextNumber, by: 7) where reference[device(number)] == nil {
                    index.insert(device(number), slot: devices.count)
                    reference[device(number)] = devices.count
                    devices.append(FleetDeviceState(device: device(number), ordering: .init()))
                }
                check()
            }
        }
        #expect(devices.count > 100)
    }
}
