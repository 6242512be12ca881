import RoadSaveModel
import SystemKit

/// Keeps every event in memory, in the order handed over: for tests of the components that feed sinks.
public actor MemorySink: EventSink {
    public nonisolated let name: String
    /// The events accepted before shutdown, in order.
    public private(set) var events: [RoadSaveEvent] = []
    /// Events handed over after `shutdown` began (refused, as a real sink would): a component under test that
    /// delivers after shutting its sinks down shows up here.
    public private(set) var eventsAfterShutdown: [RoadSaveEvent] = []
    public private(set) var isShutDown = false

    public init(name: String = "memory") {
        self.name = name
    }

    public func deliver(_ event: RoadSaveEvent) async {
        if isShutDown {
            eventsAfterShutdown.append(event)
        } else {
            events.append(event)
        }
    }

    /// Nothing is ever in flight: returns 0.
    public func shutdown(deadline: Double) async -> Int {
        isShutDown = true
        return 0
    }

    /// Waits (polling, without blocking a thread) until at least `count` events arrived or `timeout` seconds passed;
    /// returns the events so far.
    public func waitForEvents(count: Int, timeout: Double) async -> [RoadSaveEvent] {
        let end = MonotonicClock.now() + timeout
        while events.count < count && MonotonicClock.now() < end && !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(5))
        }
        return events
    }

    public func removeAll() {
        events.removeAll()
        eventsAfterShutdown.removeAll()
    }
}
