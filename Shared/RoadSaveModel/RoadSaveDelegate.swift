/// The brief's delegate. Services carry its calls as events (`RoadSaveEvent`); in-process users can implement it
/// and feed it with `RoadSaveEvent.deliver(to:)`.
public protocol RoadSaveDelegate: AnyObject {
    func tripDidStart(_ tripInfo: TripStartInfo)
    func tripDidEnd(_ tripInfo: TripInfo)
    /// Called once per crash, only after the platform's evaluation; never for a verdict of `none`.
    func crashDetected(_ crashInfo: CrashInfo)
    /// What happened after a reported crash, once per crash, `crashFollowUpDelay` after it: an extension of the
    /// brief's delegate, so a default that does nothing keeps delegates written for the brief compiling.
    func crashDidFollowUp(_ followUp: CrashFollowUpInfo)
    /// How a trip was driven, once per trip, after its `tripDidEnd`: an extension of the brief's delegate too.
    func tripWasScored(_ behaviour: TripBehaviour)
}

extension RoadSaveDelegate {
    public func crashDidFollowUp(_ followUp: CrashFollowUpInfo) {}
    public func tripWasScored(_ behaviour: TripBehaviour) {}
}
