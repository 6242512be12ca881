@testable import DetectionService
import Testing

/// How long detection waits after an expensive checkpoint before the next (`DetectionService.checkpointSpacing`),
/// and when it does not wait (`checkpointDue`).
struct CheckpointSpacingTests {
    @Test func anExpensiveCheckpointPostponesTheNextByItsCostShareUnlessDevicesLeft() {
        #expect(DetectionService.checkpointSpacing(cost: 3, devicesLeft: false) == 3 * DetectionService.checkpointCostShare)
        #expect(DetectionService.checkpointSpacing(cost: 3, devicesLeft: true) == 0)
    }

    /// Idle devices leave memory only with a checkpoint: one is due when the devices in memory have doubled.
    @Test func aCheckpointIsDueWhenTheDevicesInMemoryDoubled() {
        #expect(!DetectionService.checkpointDue(resident: 900, residentAtLast: 0), "a small fleet waits")
        #expect(!DetectionService.checkpointDue(resident: 40_000, residentAtLast: 20_000))
        #expect(DetectionService.checkpointDue(resident: 40_001, residentAtLast: 20_000))
    }
}
