import NotifierSinks
import Testing

@Suite struct MemorySinkTests {
    @Test func keepsEventsInOrderAndRefusesAfterShutdown() async {
        let sink = MemorySink()
        let events = TestEvents.journey("ana", 1) + TestEvents.journey("ben", 2)
        for event in events { await sink.deliver(event) }
        #expect(await sink.events == events)
        #expect(await sink.waitForEvents(count: 6, timeout: 1) == events)
        #expect(await sink.shutdown(deadline: 1) == 0)
        await sink.deliver(TestEvents.crash("ana", crash: "late"))
        #expect(await sink.events == events)
        #expect(await sink.eventsAfterShutdown.count == 1)
        // Usable through the protocol.
        let sinks: [any EventSink] = [sink]
        #expect(sinks[0].name == "memory")
    }
}
