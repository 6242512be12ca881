import DetectionEngine
import RoadSaveModel

/// One device inside the detection service: its session, its reorder stage, and the link between its event time
/// and the service's monotonic clock, so that timers (stop delay, crash decisions) fire on the clock when the
/// device falls silent.
struct DeviceRuntime {
    var session: DeviceSession
    var ordering: RecordOrdering
    /// The latest event time applied (or the time a control command was given), and when (monotonic seconds).
    var lastEventTime: Double?
    var lastArrival: Double = 0
    /// Records waiting for the application's settings before monitoring can start (auto-monitor).
    var waitingForSettings: [SensorRecord] = []

    init(device: DeviceID, window: Double) {
        session = DeviceSession(device: device)
        ordering = RecordOrdering(options: .init(window: window))
    }

    /// The device's event time now: its last event time plus the time passed on the clock since.
    func eventTime(atMonotonic now: Double, wallClock: Double) -> Double {
        guard let lastEventTime else { return wallClock }
        return lastEventTime + max(0, now - lastArrival)
    }

    mutating func noteArrival(eventTime: Double, monotonic now: Double) {
        lastEventTime = max(lastEventTime ?? eventTime, eventTime)
        lastArrival = now
    }
}
