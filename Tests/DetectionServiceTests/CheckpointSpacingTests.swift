import DetectionEngine
import Testing

/// How long detection waits after an expensive checkpoint before the next (`DetectionCore.checkpointSpacing`),
/// and when it does not wait (`checkpointDue`).
struct CheckpointSpacingTests {
    @Test func anExpensiveCheckpointPostponesTheNextByItsCostShareUnlessDevicesLeft() {
        #expect(DetectionCore.checkpointSpacing(cost: 3, devicesLeft: false, share: 20) == 3 * 20)
        #expect(DetectionCore.checkpointSpacing(cost: 3, devicesLeft: true) == 0)
    }

    /// Idle devices leave memory only with a checkpoint: one is due when the devices in memory have doubled.
    @Test func aCheckpointIsDueWhenTheDevicesInMemoryDoubled() {
        #expect(!DetectionCore.checkpointDue(resident: 900, residentAtLast: 0), "a small fleet waits")
        #expect(!DetectionCore.checkpointDue(resident: 40_000, residentAtLast: 20_000))
        #expect(DetectionCore.checkpointDue(resident: 40_001, residentAtLast: 20_000))
    }
}
