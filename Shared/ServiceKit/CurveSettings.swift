import RoadSaveModel

/// The CurveZMQ settings every service shares: its secret key, its allow-list, and `--insecure`. The keys themselves
/// are read by `ZeroMQ.CurveServerKeys.load`; a service's configuration calls both, and `ServiceZAP` guards its sockets.
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

    /// The paths given and the `--insecure` switch.
    public static func paths(_ source: ServiceConfiguration)
        throws(CommandLineOptions.UsageError) -> (secretKey: String?, allow: String?, insecure: Bool) {
        let secretKey = source.string("curveSecretKey").flatMap { $0.isEmpty ? nil : $0 }
        let allow = source.string("allow").flatMap { $0.isEmpty ? nil : $0 }
        return (secretKey, allow, try source.bool("insecure"))
    }
}
