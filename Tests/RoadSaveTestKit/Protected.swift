import Foundation

/// A value shared between a test and the threads it starts, touched only with its lock held. (Its own name, not
/// `Locked`, so that it never meets the production lock types a test target may also import.)
public final class Protected<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    public init(_ value: Value) {
        self.value = value
    }

    public func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    public var current: Value { withLock { $0 } }
}
