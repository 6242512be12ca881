/// What a socket needs to be a CurveZMQ client: the server's public key, and this client's own key pair (Z85 text,
/// 40 characters each). A RoadSave service reading another's feed uses its own server key pair as its client key.
public struct CurveClientKeys: Sendable, Equatable {
    public var serverPublicKey: String
    public var publicKey: String
    public var secretKey: String

    public init(serverPublicKey: String, publicKey: String, secretKey: String) {
        self.serverPublicKey = serverPublicKey
        self.publicKey = publicKey
        self.secretKey = secretKey
    }
}

extension ZMQSocket {
    /// Makes this socket a CurveZMQ client with `keys`. Call before `connect`.
    public func setCurveClient(_ keys: CurveClientKeys) throws(ZMQError) {
        try setCurveClient(
            serverPublicKey: Array(keys.serverPublicKey.utf8), publicKey: Array(keys.publicKey.utf8),
            secretKey: Array(keys.secretKey.utf8))
    }
}
