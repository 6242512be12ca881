/// The brief's delegate. Services carry its calls as events (`RoadSaveEvent`); in-process users can implement it
/// and feed it with `RoadSaveEvent.deliver(to:)`.
public protocol RoadSaveDelegate: AnyObject {
    func tripDidStart(_ tripInfo: TripStartInfo)
    func tripDidEnd(_ tripInfo: TripInfo)
    /// Called once per crash, only after the platform's evaluation; never for a verdict of `none`.
    func crashDetected(_ crashInfo: CrashInfo)
}
