import DetectionEngine
import Foundation
import Logging
import Replay
import RoadSaveModel
import Simulator
import Testing

/// The whole replay path (validation, ordering, engines, embedded platform) over simulated fleets, compared with
/// the simulator's ground truth: what each device really did.
@Suite struct SimulatedFleetTests {
    struct Replayed {
        var events: [RoadSaveEvent]
        var summary: Replayer.Summary
        func events(of user: String) -> [RoadSaveEvent] { events.filter { $0.device.user == user } }
    }

    final class Box: @unchecked Sendable { var events: [RoadSaveEvent] = [] }

    func replay(_ lines: [String]) async -> Replayed {
        let box = Box()
        let replayer = Replayer(platform: EmbeddedPlatform(), log: Log(category: "test", minimumLevel: .error)) {
            box.events.append($0)
        }
        for (index, line) in lines.enumerated() {
            await replayer.feed(line: Array(line.utf8), number: index + 1)
            // Long CPU-bound loops give the 2-thread cooperative pool back now and then, so tests running beside
            // this one (waiting on timers and processes) are not starved.
            if index % 2000 == 0 { await Task.yield() }
        }
        await replayer.finish()
        return Replayed(events: box.events, summary: replayer.summary)
    }

    static func trips(_ events: [RoadSaveEvent]) -> [TripInfo] {
        events.compactMap { if case .tripDidEnd(let info) = $0.body { info } else { nil } }
    }

    static func crashes(_ events: [RoadSaveEvent]) -> [CrashInfo] {
        events.compactMap { if case .crashDetected(let info) = $0.body { info } else { nil } }
    }

    @Test(arguments: [UInt64(1), 2, 3])
    func everyScenarioGivesTheEventsItsTruthCallsFor(seed: UInt64) async throws {
        // Two devices of every scenario in the mix, and two crashes.
        let options = SimulationOptions(
            devices: 2 * SimulationOptions.mixScenarioNames.count + 2, seed: seed,
            durationMinutes: 45, crashes: 2)
        let (lines, truth) = simulate(options)
        let replayed = await replay(lines)
        #expect(replayed.summary.invalid == 0)
        #expect(replayed.summary.late == 0)

        for device in truth {
            let events = replayed.events(of: device.user)
            let trips = Self.trips(events)
            let crashes = Self.crashes(events)
            let context = "\(device.user) (\(device.scenario), seed \(seed))"

            // Crashes: exactly the true ones, at the impact; nothing from drops, bumps or braking.
            #expect(crashes.count == device.crashes.count, "\(context): crashes \(crashes.map(\.detectedAt))")
            for (crash, real) in zip(crashes, device.crashes) {
                #expect(abs(crash.detectedAt - real.t) < 0.5, "\(context)")
                #expect(crash.confidence == .high || crash.confidence == .medium, "\(context): \(crash.confidence)")
                #expect(
                    Self.metres(crash.latitude ?? 0, crash.longitude ?? 0, real.latitude, real.longitude) < 100,
                    "\(context)")
            }

            // Trips: one per drive the user drove, starting near when driving began and ending at the last
            // movement; none for walking, running, cycling or a parked phone.
            let drives = device.drives.filter { $0.end - $0.start > 120 }
            if device.scenario == "bus" {
                // A bus passenger's phone sees what a driver's does (automotive, vehicle speeds); without a signal
                // that tells them apart, a ride may be a trip, but never more than one per ride.
                #expect(trips.count <= device.otherLegs.filter { $0.mode == "bus" }.count, "\(context)")
                continue
            }
            #expect(
                trips.count == drives.count,
                "\(context): trips \(trips.map { ISO8601.string(fromSeconds: $0.startDate) }) drives \(drives.map { ISO8601.string(fromSeconds: $0.start) })"
            )
            for (trip, drive) in zip(trips, drives) {
                #expect(trip.startDate >= drive.start - 1 && trip.startDate - drive.start < 90, "\(context): start")
                #expect(abs(trip.endDate - drive.end) < 15, "\(context): end \(trip.endDate - drive.end)")
                #expect(
                    abs(trip.distanceMetres - drive.distanceMetres) < 0.1 * drive.distanceMetres + 200,
                    "\(context): distance \(trip.distanceMetres) vs \(drive.distanceMetres)")
            }
            if ["walk", "run", "cycle", "parked", "phoneDrop"].contains(device.scenario) {
                #expect(trips.isEmpty, "\(context)")
            }
        }
    }

    @Test func aGatewaysDisorderChangesNoEvent() async {
        var options = SimulationOptions(devices: 6, seed: 9, durationMinutes: 40, crashes: 1)
        let clean = await replay(simulate(options).lines)
        options.disorder = true
        let messy = await replay(simulate(options).lines)
        #expect(messy.summary.duplicates > 0)
        #expect(clean.events.count > 6)
        for user in Set(clean.events.map(\.device.user)) {
            #expect(clean.events(of: user) == messy.events(of: user), "\(user)")
        }
    }

    static func metres(_ lat1: Double, _ lon1: Double, _ lat2: Double, _ lon2: Double) -> Double {
        let k = Double.pi / 180
        let x = (lon2 - lon1) * k * cos((lat1 + lat2) / 2 * k)
        let y = (lat2 - lat1) * k
        return (x * x + y * y).squareRoot() * 6_371_008.8
    }
}
