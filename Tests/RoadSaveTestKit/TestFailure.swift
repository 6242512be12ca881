/// A test's own failure, thrown where the harness cannot go on (a service that did not start, say), with what
/// happened in its message.
public struct TestFailure: Error, CustomStringConvertible {
    public let description: String

    public init(_ description: String) {
        self.description = description
    }
}
