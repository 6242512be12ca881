import RoadSaveModel
import ZeroMQ

/// The CurveZMQ settings every service shares: its secret key, its allow-list, and `--insecure`. The keys themselves
/// are read by `ZeroMQ.CurveServerKeys.load` through `serverKeys`, and `ServiceZAP` guards the sockets.
public enum CurveSettings {
    public static let specs: [SettingSpec] = [
        SettingSpec(flag: "--curve-secret-key", environment: "ROADSAVE_CURVE_SECRET_KEY", key: "curveSecretKey",
                    help: "this service's CurveZMQ secret key file (roadsave keygen; mode 0600): sockets that take outside connections become CURVE servers"),
        SettingSpec(flag: "--allow", environment: "ROADSAVE_ALLOW", key: "allow",
                    help: "allow-list of client keys by role (ROLE Z85-PUBLIC-KEY NAME [APP,APP]); re-read on SIGHUP"),
        SettingSpec(flag: "--insecure", environment: "ROADSAVE_INSECURE", key: "insecure",
                    help: "allow a non-loopback bind without CurveZMQ keys (plaintext, anyone who reaches the port is let in)",
                    switch: true),
    ]

    /// The service's CurveZMQ keys from its settings, checked (files, modes, the allow-list) against the outside
    /// `endpoints` it binds: nil when it runs without keys (loopback, or `--insecure`); a usage error saying why not.
    public static func serverKeys(_ source: ServiceConfiguration, endpoints: [(flag: String, endpoint: String)])
        throws(CommandLineOptions.UsageError) -> CurveServerKeys? {
        let secretKey = source.string("curveSecretKey").flatMap { $0.isEmpty ? nil : $0 }
        let allow = source.string("allow").flatMap { $0.isEmpty ? nil : $0 }
        let insecure = try source.bool("insecure")
        do {
            return try CurveServerKeys.load(secretKeyPath: secretKey, allowListPath: allow, insecure: insecure,
                                            endpoints: endpoints)
        } catch {
            throw .init(error.message)
        }
    }
}
