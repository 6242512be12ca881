/// Why the journal cannot be opened, or cannot serve a request; the message says what to do about it.
public struct JournalError: Error, Sendable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
