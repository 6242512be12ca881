/// A device is the pair (applicationID, clientUserID) (PROTOCOL §2).
public struct DeviceID: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// Longest app or user identifier accepted, in UTF-8 bytes.
    public static let maximumLength = 256

    public var app: String
    public var user: String

    public init(app: String, user: String) {
        self.app = app
        self.user = user
    }

    public static func < (lhs: DeviceID, rhs: DeviceID) -> Bool {
        (lhs.app, lhs.user) < (rhs.app, rhs.user)
    }

    /// For logs: the application ID is a credential, so it is masked.
    public var description: String { "\(Secret.mask(app))/\(user)" }
}
