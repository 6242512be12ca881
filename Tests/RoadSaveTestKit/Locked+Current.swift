import SystemKit

extension Locked {
    /// A copy of the value, read with the lock held: what a test checks of what other threads changed.
    public var current: State { withLock { $0 } }
}
