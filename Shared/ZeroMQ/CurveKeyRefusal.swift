/// Why a message is refused although its connection's key was admitted at the handshake: the allow-list in force no
/// longer lists that key for the socket's role under the name it had (`CurveAllowList.entry(for:role:)`). The message
/// names the key as the handshake did, never its material.
public struct CurveKeyRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    public var role: CurveRole
    /// The name the key was admitted under ("?" when the message carried none).
    public var name: String
    public var message: String

    public init(role: CurveRole, name: String, message: String) {
        self.role = role
        self.name = name
        self.message = message
    }

    public var description: String { message }
}
