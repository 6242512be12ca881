/// A weak reference as a value: what a `ReactorBound` holds when a callback from another thread must reach an object
/// on the reactor without keeping it alive (`ReactorBound(WeakReference(self), on: reactor)`).
public struct WeakReference<Object: AnyObject> {
    public weak var object: Object?

    public init(_ object: Object) {
        self.object = object
    }
}
