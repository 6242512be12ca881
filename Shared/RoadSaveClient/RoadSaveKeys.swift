import ZeroMQ

/// The CurveZMQ key files of a client that connects to a service running with keys (docs/operating.md, "Security"),
/// as `roadsave keygen` writes them: this client's secret key file and the service's public key file. Without keys a
/// client connects in plaintext, which a service admits on loopback only.
public struct RoadSaveKeys: Sendable, Hashable {
    /// This client's secret key file, `NAME.key` (mode 0600; a file with only `secret-key` is enough: the public key
    /// follows from it). The service's allow-list must list its public key with the client's role.
    public var secretKeyFile: String
    /// The service's public key file, its `NAME.key.pub` (a service's `.key` works too: only its public half is read).
    public var serverPublicKeyFile: String

    /// Both files, by path; they are read when the client is made.
    public init(secretKeyFile: String, serverPublicKeyFile: String) {
        self.secretKeyFile = secretKeyFile
        self.serverPublicKeyFile = serverPublicKeyFile
    }

    /// The keys in the files, as a socket takes them; an error names the file and what is wrong with it.
    func load() throws(RoadSaveClientError) -> CurveClientKeys {
        let pair: CurveKeyPair
        do {
            pair = try CurveKeyPair.readSecret(secretKeyFile)
        } catch {
            throw .unusableKey(path: secretKeyFile, reason: "\(error)")
        }
        let server: CurveKeyPair
        do {
            server = try CurveKeyPair.readPublic(serverPublicKeyFile)
        } catch {
            throw .unusableKey(path: serverPublicKeyFile, reason: "\(error)")
        }
        guard let secret = pair.secretKey else {
            throw .unusableKey(path: secretKeyFile, reason: "holds no secret-key")
        }
        return CurveClientKeys(serverPublicKey: server.publicKey, publicKey: pair.publicKey, secretKey: secret)
    }
}
