import DetectionEngine
import Foundation
import RoadSaveModel
import Testing
import ZeroMQ

@testable import DetectionService

/// Detection in this process reading ingest's journal, with a platform that is slow for one device only: the other
/// device's events must not wait for it.
@Suite(.serialized) struct SlowPlatformTests {
    @Test func aSlowPlatformHoldsUpOnlyTheDeviceWaitingForIt() async throws {
        try await DetectionRig.with { rig in
            // The slow device's evaluation is held until the test lets it go (not delayed by seconds: how far apart two
            // alerts land would depend on the machine's load).
            let platform = ScriptedPlatform(holding: ["slow"])
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
            func tripStarts() -> Set<String> {
                Set(rig.uniqueEvents.filter { $0.event.name == "tripDidStart" }.map(\.event.device.user))
            }
            // While the slow device's evaluation is held: the fast device's alert goes out, and both trips start.
            try await rig.until("the fast device's crash and both trip starts, the slow evaluation held") {
                crashes().contains { $0.user == "fast" } && tripStarts() == ["fast", "slow"]
                    && platform.candidates.contains { $0.user == "slow" }
            }
            #expect(!crashes().contains { $0.user == "slow" }, "a held evaluation gave its alert")
            platform.release()
            try await rig.until("both crashes in the outbox", timeout: 20) { crashes().count == 2 }
            #expect(crashes().map(\.user) == ["fast", "slow"], "\(crashes())")
            #expect(platform.candidates.map(\.user).sorted() == ["fast", "slow"])
        }
    }
}
