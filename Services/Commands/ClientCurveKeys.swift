import CommandSettings
import RoadSaveClient
import ServiceKit
import ZeroMQ

/// `--key FILE` and `--server-key FILE` of the clients (send, tail, ctl): this client's CurveZMQ key pair and the
/// service's public key, to connect to a service that runs with keys. Without them the client connects in plaintext.
struct ClientCurveKeys: Sendable, Equatable {
    /// The key's name in its file (the service knows it by the name in its allow-list).
    var name: String
    var publicKey: String
    var secretKey: String
    var serverPublicKey: String
    /// The two files, for the client library (`send` and `tail`), which reads them again.
    var files: RoadSaveKeys

    static let flags: Set<String> = ["--key", "--server-key"]

    /// The lines of `--help`, for each client.
    static func help(service: String) -> String {
        """
          --key FILE          this client's CurveZMQ secret key file (roadsave keygen; mode 0600; a file with only
                              secret-key is enough: the public key follows from it): connect with CURVE; the
                              service must list its public key in its allow-list
          --server-key FILE   \(service)'s public key file (its NAME.key.pub), with --key
        """
    }

    /// Nil when neither flag is given; a usage error when only one is, or a file cannot be used.
    static func parse(_ parsed: CommandLineOptions) throws(CommandExit) -> ClientCurveKeys? {
        switch (parsed.string("--key"), parsed.string("--server-key")) {
        case (nil, nil):
            return nil
        case (.some, nil):
            throw .usage("--key needs --server-key FILE (the service's public key file)")
        case (nil, .some):
            throw .usage("--server-key needs --key FILE (this client's secret key file)")
        case (let keyPath?, let serverKeyPath?):
            do {
                let pair = try CurveKeyPair.readSecret(keyPath)
                let server = try CurveKeyPair.readPublic(serverKeyPath)
                return ClientCurveKeys(
                    name: pair.name, publicKey: pair.publicKey, secretKey: pair.secretKey!,
                    serverPublicKey: server.publicKey,
                    files: RoadSaveKeys(secretKeyFile: keyPath, serverPublicKeyFile: serverKeyPath))
            } catch {
                throw .usage("\(error)")
            }
        }
    }

    /// Makes `socket` a CURVE client of the service. Call before `connect`.
    func apply(to socket: ZMQSocket) throws(ZMQError) {
        try socket.setCurveClient(
            serverPublicKey: Array(serverPublicKey.utf8), publicKey: Array(publicKey.utf8),
            secretKey: Array(secretKey.utf8))
    }
}
