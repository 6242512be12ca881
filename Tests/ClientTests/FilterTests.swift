import RoadSaveModel
import Testing

@testable import RoadSaveClient

/// `RoadSaveSubscriber.Filter`, a value: what it subscribes to, what it asks the catch-up endpoint, which topics it
/// takes (whole: `app-1` never takes `app-10`), and its kinds against the model's event names.
@Suite struct FilterTests {
    @Test func everyEventNameIsAKind() {
        #expect(RoadSaveSubscriber.EventKind.allCases.map(\.rawValue) == RoadSaveEvent.names)
    }

    @Test func prefixesAndTopicsTaken() {
        let everything = RoadSaveSubscriber.Filter.everything
        #expect(everything.takesEverything && everything.catchUpPrefix == nil)
        #expect(everything.prefixes == RoadSaveEvent.names.map { $0 + "." })

        let crashes = RoadSaveSubscriber.Filter(events: [.crashFollowUp, .crashDetected], application: "app-1")
        #expect(crashes.prefixes == ["crashDetected.app-1.", "crashFollowUp.app-1."])
        #expect(!crashes.takesEverything && crashes.catchUpPrefix == nil)
        #expect(crashes.accepts("crashDetected.app-1.u-1"))
        #expect(!crashes.accepts("crashDetected.app-10.u-1"))
        #expect(!crashes.accepts("tripDidStart.app-1.u-1"))

        let device = RoadSaveSubscriber.Filter(events: [.tripDidEnd], application: "app-1", user: "user-9")
        #expect(device.catchUpPrefix == "tripDidEnd.app-1.user-9")
        #expect(device.accepts("tripDidEnd.app-1.user-9") && !device.accepts("tripDidEnd.app-1.user-90"))

        let user = RoadSaveSubscriber.Filter(user: "user-9")
        #expect(user.accepts("crashDetected.any-app.user-9") && !user.accepts("crashDetected.any-app.user-90"))

        let raw = RoadSaveSubscriber.Filter.topicPrefix("crash")
        #expect(raw.prefixes == ["crash"] && raw.catchUpPrefix == "crash")
        #expect(raw.accepts("crashFollowUp.a.b") && !raw.accepts("tripDidStart.a.b"))
    }

    @Test func aBadFilterIsNamed() {
        #expect(RoadSaveSubscriber.Filter(application: "").problem()?.contains("application") == true)
        #expect(RoadSaveSubscriber.Filter(user: "").problem()?.contains("user") == true)
        var mixed = RoadSaveSubscriber.Filter.topicPrefix("crash")
        mixed.application = "app-1"
        #expect(mixed.problem()?.contains("topic prefix") == true)
        #expect(RoadSaveSubscriber.Filter.everything.problem() == nil)
    }
}
