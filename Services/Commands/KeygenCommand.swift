import CommandSettings
import Foundation
import ZeroMQ

/// `roadsave keygen NAME`: a new CurveZMQ key pair in ZeroMQ's certificate files (`NAME.key`, secret, mode 0600;
/// `NAME.key.pub`, public), and the allow-list line that lets it in.
public enum KeygenCommand {
    public static let usage = """
        Usage: roadsave keygen NAME [--directory D] [--role ROLE] [--apps APP,APP]

        Writes a new CurveZMQ key pair in ZeroMQ's certificate format (as libzmq's zcert and pyzmq's zmq.auth read it):
          D/NAME.key        both keys; mode 0600; the services and clients refuse it when group or others can read it
          D/NAME.key.pub    the public key, to give to the peers
        and prints the allow-list line that admits the key (ROLE and APPs only shape that line; the default role is
        gateway). A server's key pair is made the same way: the server reads NAME.key, its clients NAME.key.pub.
        Existing files are never overwritten.

        Options:
          --directory D   where to write the files (default: the current directory; created if missing, mode 0700)
          --role ROLE     gateway, operator, subscriber or service, for the printed allow-list line
          --apps LIST     applicationIDs the key is limited to, for the printed line (default: every application)
          -h, --help      this text
        """

    public static func run(_ arguments: [String]) -> Int32 {
        let parsed: CommandLineOptions
        do {
            parsed = try CommandLineOptions(
                arguments, valued: ["--directory", "--role", "--apps"], flags: ["--help", "-h"])
        } catch {
            return Console.fail("keygen", .usage(error.message))
        }
        if parsed.has("--help") || parsed.has("-h") {
            print(usage)
            return 0
        }
        guard parsed.positional.count == 1, let name = parsed.positional.first else {
            return Console.fail("keygen", .usage(parsed.positional.isEmpty ? "NAME missing" : "one NAME only"))
        }
        guard !name.isEmpty, !name.contains("/"), !name.hasPrefix("."),
            name.allSatisfy({ !$0.isWhitespace && $0 != "#" })
        else {
            return Console.fail(
                "keygen", .usage("NAME \"\(name)\" must be a file name without /, spaces or #, not starting with ."))
        }
        let roleText = parsed.string("--role") ?? CurveRole.gateway.rawValue
        guard let role = CurveRole(rawValue: roleText) else {
            return Console.fail(
                "keygen",
                .usage(
                    "--role must be one of \(CurveRole.allCases.map(\.rawValue).joined(separator: ", ")), got \"\(roleText)\""
                ))
        }
        let apps = parsed.string("--apps")
        if let apps, apps.isEmpty || apps.contains(where: \.isWhitespace) {
            return Console.fail("keygen", .usage("--apps must be applicationIDs separated by commas, without spaces"))
        }
        let directory = parsed.string("--directory") ?? "."
        do {
            let (pair, paths) = try generate(name: name, directory: directory)
            Console.out("secret key: \(paths.secret) (mode 0600: keep it there)")
            Console.out("public key: \(paths.public)")
            Console.out("allow-list line: \(allowListLine(role: role, pair: pair, apps: apps))")
            return 0
        } catch {
            return Console.fail("keygen", CommandExit(1, "\(error)"))
        }
    }

    /// A new key pair `name` written in `directory` (made with mode 0700 if missing); never overwrites a file.
    /// `roadsave up --keys` makes its keys with it too.
    static func generate(name: String, directory: String) throws -> (
        pair: CurveKeyPair, paths: (secret: String, public: String)
    ) {
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        let pair = try CurveKeyPair.generate(name: name)
        return (pair, try pair.write(directory: directory))
    }

    /// The allow-list line that admits `pair` in `role` (for `apps`, comma-separated; nil for every application).
    static func allowListLine(role: CurveRole, pair: CurveKeyPair, apps: String? = nil) -> String {
        "\(role.rawValue) \(pair.publicKey) \(pair.name)\(apps.map { " " + $0 } ?? "")"
    }
}
