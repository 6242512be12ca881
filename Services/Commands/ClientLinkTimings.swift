import CommandSettings
import ServiceKit
import ZeroMQ

/// `--link-heartbeat`, `--link-timeout`, `--connect-timeout` and `--reconnect-max` of the clients (send, tail, ctl):
/// the services' `LinkSettings`, as flags, so a client notices a dead connection and makes it anew as the services
/// do (a gateway's batches are sent again on the new one, a subscriber catches up on what it missed).
enum ClientLinkTimings {
    static let flags: Set<String> = SettingValues.valued(LinkSettings.specs)

    /// The lines of `--help`, in the clients' columns.
    static let help = SettingHelp.command(LinkSettings.specs, width: 112, column: 22)

    /// The timings given (defaults for those not given); a usage error names the flag.
    static func parse(_ parsed: CommandLineOptions) throws(CommandExit) -> LinkTimings {
        do {
            return try LinkSettings.timings(SettingValues(LinkSettings.specs, options: parsed))
        } catch {
            throw .usage(error.message)
        }
    }
}
