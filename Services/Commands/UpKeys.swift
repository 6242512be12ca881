import Foundation
import Storage
import ZeroMQ

/// The CurveZMQ keys of `roadsave up --keys`, in DATA-DIR/keys: a pair for each service (ingest, detect, notify:
/// each its server key and, on the feed it reads, its client key), a pair for each kind of client (gateway, operator,
/// subscriber), and the allow-list admitting them. Made on the first run, reused on the next ones, so clients given
/// the files once keep working.
struct UpKeys {
    /// The services' key names (the names of their commands), listed as `service` in the allow-list.
    static let services = ["ingest", "detect", "notify"]
    /// The client keys, each listed in its role for every application, and the service it connects to.
    static let clients: [(name: String, role: CurveRole, server: String)] = [
        ("gateway", .gateway, "ingest"), ("operator", .operator, "detect"), ("subscriber", .subscriber, "notify"),
    ]

    let directory: String
    /// The key names made by this run (empty when every key was there already).
    private(set) var made: [String] = []

    init(directory: String) {
        self.directory = directory
    }

    /// Where the keys of `up` live for the data directory `dataDirectory`.
    static func directory(in dataDirectory: String) -> String { DataDirectory.file("keys", in: dataDirectory) }

    var allowList: String { DataDirectory.file("allow.txt", in: directory) }
    func secretFile(_ name: String) -> String { CurveKeyPair.paths(name: name, directory: directory).secret }
    func publicFile(_ name: String) -> String { CurveKeyPair.paths(name: name, directory: directory).public }

    /// Makes the missing keys (and the allow-list, when it is missing) and checks the ones already there. A pair with
    /// one of its two files missing, or a secret file readable by others, is an error naming the file: up never
    /// replaces a key that clients may hold.
    mutating func prepare() throws {
        var pairs: [String: CurveKeyPair] = [:]
        for name in Self.services + Self.clients.map(\.name) {
            let (secret, publicPath) = (secretFile(name), publicFile(name))
            switch (FileManager.default.fileExists(atPath: secret), FileManager.default.fileExists(atPath: publicPath))
            {
            case (false, false):
                pairs[name] = try KeygenCommand.generate(name: name, directory: directory).pair
                made.append(name)
            case (true, true):
                pairs[name] = try CurveKeyPair.readSecret(secret)
                if try CurveKeyPair.readPublic(publicPath).publicKey != pairs[name]!.publicKey {
                    throw CurveKeyError(
                        "\(publicPath) does not hold the public key of \(secret); remove both to make a new pair")
                }
            case (true, false), (false, true):
                let missing = FileManager.default.fileExists(atPath: secret) ? publicPath : secret
                throw CurveKeyError(
                    "\(missing) is missing (the other file of the \(name) key pair is there); remove "
                        + "both to make a new pair, or put it back")
            }
        }
        if !FileManager.default.fileExists(atPath: allowList) {
            var lines = [
                "# Written by roadsave up --keys; edit freely (up leaves it alone once it exists).",
                "# role        public key (Z85)                            name",
            ]
            lines += Self.clients.map { KeygenCommand.allowListLine(role: $0.role, pair: pairs[$0.name]!) }
            lines += Self.services.map { KeygenCommand.allowListLine(role: .service, pair: pairs[$0]!) }
            try (lines.joined(separator: "\n") + "\n").write(toFile: allowList, atomically: true, encoding: .utf8)
        } else if !made.isEmpty {
            // Keys made now cannot be in a list written before: say so rather than let every connection be refused.
            throw CurveKeyError(
                "made new keys (\(made.joined(separator: ", "))) but \(allowList) exists from an earlier "
                    + "run and does not list them: add their lines (roadsave keygen prints the form) or "
                    + "remove it so up writes it again")
        }
    }

    /// The CurveZMQ flags of `service`: its key pair, the allow-list, and the public key of the feed it reads.
    func arguments(of service: String) -> [String] {
        var arguments = ["--curve-secret-key", secretFile(service), "--allow", allowList]
        switch service {
        case "detect": arguments += ["--curve-server-key", publicFile("ingest")]
        case "notify": arguments += ["--curve-server-key", publicFile("detect")]
        default: break
        }
        return arguments
    }
}
