import DetectionEngine
@testable import DetectionService
import Foundation
import RoadSaveModel
import Testing
import ZeroMQ

/// Detection in this process reading ingest's journal, with a platform that is slow for one device only: the other
/// device's events must not wait for it.
@Suite(.serialized) struct SlowPlatformTests {
    @Test func aSlowPlatformHoldsUpOnlyTheDeviceWaitingForIt() async throws {
        try await DetectionRig.with { rig in
        let platform = ScriptedPlatform(delays: ["slow": 3])
        try rig.startDetection(platform: platform)

        let records = Streams.interleave([
            Streams.drive(user: "slow", drive: 60, impactG: 45, standstill: 20, longitude: 18.4),
            Streams.drive(user: "fast", drive: 60, impactG: 45, standstill: 20, longitude: 18.5),
        ])
        #expect(records.count == 164)
        try await rig.send(records, batch: "both")

        func crashes() -> [(user: String, at: Double)] {
            rig.uniqueEvents.compactMap { item in
                if case .crashDetected = item.event.body { (item.event.device.user, item.at) } else { nil }
            }
        }
        try await rig.until("both crashes in the outbox", timeout: 20) { crashes().count == 2 }
        let crashTimes = crashes()
        #expect(crashTimes.map(\.user) == ["fast", "slow"], "\(crashTimes)")
        // The fast device's alert went out while the slow one was still being evaluated.
        #expect(crashTimes[1].at - crashTimes[0].at > 2, "\(crashTimes)")
        #expect(platform.candidates.map(\.user).sorted() == ["fast", "slow"])
        // Trips of both devices started without waiting for either evaluation.
        let starts = rig.uniqueEvents.filter { $0.event.name == "tripDidStart" }
        #expect(Set(starts.map(\.event.device.user)) == ["fast", "slow"])
        #expect(starts.allSatisfy { $0.at < crashTimes[1].at }, "a trip start waited for the slow evaluation")
        }
    }
}
