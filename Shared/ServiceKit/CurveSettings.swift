import CommandSettings
import Foundation
import ZeroMQ

/// The CurveZMQ settings every service shares: its secret key, its allow-list, and `--insecure`. The keys themselves
/// are read by `ZeroMQ.CurveServerKeys.load` through `serverKeys`, and `ServiceZAP` guards the sockets.
/// A service that reads another's feed (detection, the notifier) also takes `--curve-server-key` (`upstreamSpec`,
/// read by `upstreamKeys`): its own key pair is then its client key on that link.
public enum CurveSettings {
    public static let secretKey = Setting<String?>.text(
        flag: "--curve-secret-key", environment: "ROADSAVE_CURVE_SECRET_KEY", key: "curveSecretKey",
        help:
            "this service's CurveZMQ secret key file (roadsave keygen; mode 0600): sockets that take outside connections, and the feeds other services read, become CURVE servers; also this service's client key on a link with --curve-server-key",
        emptyIsUnset: true)
    public static let allow = Setting<String?>.text(
        flag: "--allow", environment: "ROADSAVE_ALLOW", key: "allow",
        help: "allow-list of client keys by role (ROLE Z85-PUBLIC-KEY NAME [APP,APP]); re-read on SIGHUP",
        emptyIsUnset: true)
    public static let insecure = Setting<Bool>(
        flag: "--insecure", environment: "ROADSAVE_INSECURE", key: "insecure",
        help: "allow a non-loopback bind without CurveZMQ keys (plaintext, anyone who reaches the port is let in)",
        switch: true)

    public static let specs: [any AnySetting] = [secretKey, allow, insecure]

    /// `--curve-server-key` as `upstreamKeys` reads it: the help names the upstream, the rest is the same.
    static let serverKey = upstreamSpec(upstream: "the upstream")

    /// `--curve-server-key`, for the services that connect to another's feed (`upstreamKeys` reads it): the files,
    /// nil when none is given.
    public static func upstreamSpec(upstream: String) -> Setting<[String]?> {
        Setting<[String]?>(
            flag: "--curve-server-key", environment: "ROADSAVE_CURVE_SERVER_KEY", key: "curveServerKey", default: nil,
            shown: nil,
            help: "\(upstream)'s CurveZMQ public key file (its NAME.key.pub, or a NAME.key whose public half is used); "
                + "comma-separated, one per endpoint in the same order, or one for all: the feed link becomes a CURVE "
                + "client, with this service's --curve-secret-key as its key (listed as service in the upstream's "
                + "allow-list); needed for an upstream on another machine unless --insecure"
        ) { text, _ throws(CommandLineOptions.UsageError) in
            let files = text.split(separator: ",", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            return files == [""] ? nil : files
        }
    }

    /// The service's CurveZMQ keys from its settings, checked (files, modes, the allow-list) against the outside
    /// `endpoints` it binds: nil when it runs without keys (loopback, or `--insecure`); a usage error saying why not.
    public static func serverKeys(_ source: ServiceConfiguration, endpoints: [(flag: String, endpoint: String)])
        throws(CommandLineOptions.UsageError) -> CurveServerKeys?
    {
        let secretKeyPath = try source.value(secretKey)
        let allowListPath = try source.value(allow)
        let plaintextAllowed = try source.value(insecure)
        do {
            return try CurveServerKeys.load(
                secretKeyPath: secretKeyPath, allowListPath: allowListPath, insecure: plaintextAllowed,
                endpoints: endpoints)
        } catch {
            throw .init(error.message)
        }
    }

    /// The CurveZMQ client keys of the links to `endpoints` (the upstream feeds of `flag`), one per endpoint in order:
    /// the server's public key from `--curve-server-key`, this service's own pair (`own`, from `serverKeys`) as the
    /// client key. Nil when no server key is given: plaintext, refused for an upstream on another machine unless
    /// `--insecure` (the same rule as a bind).
    public static func upstreamKeys(
        _ source: ServiceConfiguration, flag: String, endpoints: [String],
        own: CurveServerKeys?
    ) throws(CommandLineOptions.UsageError) -> [CurveClientKeys]? {
        guard let files = try source.value(serverKey) else {
            if try !source.value(insecure), let remote = endpoints.first(where: { !CurveServerKeys.isLoopback($0) }) {
                throw .init(
                    "\(flag) \(remote) is on another machine, but no --curve-server-key is given: the link would be "
                        + "plaintext and unauthenticated; pass --curve-server-key FILE (the upstream's public key) with "
                        + "--curve-secret-key and --allow, connect to 127.0.0.1, or pass --insecure")
            }
            return nil
        }
        guard let own else {
            throw .init(
                "--curve-server-key needs --curve-secret-key FILE (this service's key pair, its client key on the "
                    + "link) and --allow FILE")
        }
        if let empty = files.firstIndex(of: "") {
            throw .init("--curve-server-key: file \(empty + 1) of the list is empty")
        }
        guard files.count == 1 || files.count == endpoints.count else {
            throw .init(
                "--curve-server-key: \(files.count) files for \(endpoints.count) endpoints of \(flag); give one "
                    + "file for all, or one per endpoint in the same order")
        }
        var serverKeys: [String] = []
        for file in files {
            do {
                serverKeys.append(try CurveKeyPair.readPublic(file).publicKey)
            } catch {
                throw .init("--curve-server-key: \(error)")
            }
        }
        return endpoints.indices.map { index in
            CurveClientKeys(
                serverPublicKey: serverKeys[files.count == 1 ? 0 : index], publicKey: own.publicKey,
                secretKey: own.secretKey)
        }
    }
}
