#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Who sent a message on a CurveZMQ server socket, as libzmq tells it for each message (`zmq_msg_gets`): the name the
/// ZAP handler gave the key at the connection's handshake (`User-Id`) and the key the handshake proved
/// (`ZAPHandler.publicKeyProperty`, Z85). Only the key says which allow-list line a message answers to now: a name
/// may have passed to another key since.
public struct CurvePeer: Sendable, Hashable {
    public var name: String
    public var publicKey: String

    public init(name: String, publicKey: String) {
        self.name = name
        self.publicKey = publicKey
    }

    /// Whether this is the peer libzmq's C strings name (`zmq_msg_gets`), compared where they are.
    func matches(name otherName: UnsafePointer<CChar>, publicKey otherKey: UnsafePointer<CChar>) -> Bool {
        name.withCString { strcmp($0, otherName) == 0 } && publicKey.withCString { strcmp($0, otherKey) == 0 }
    }
}
