import CommandSettings

/// The opening that `replay` and `report` share: their options read (the shared platform and ordering settings'
/// flags with the command's own), `--help` noticed, and the one record file named.
public enum RecordFileArguments {
    public enum Outcome {
        case help
        /// A usage error, for the command's own `fail`.
        case problem(String)
        case file(CommandLineOptions, path: String)
    }

    /// `verb` says what is done to the file: "only one record file can be \(verb) at a time".
    public static func read(_ arguments: [String], valued: Set<String>, flags: Set<String>, verb: String) -> Outcome {
        let options: CommandLineOptions
        do {
            options = try CommandLineOptions(
                arguments, valued: SettingValues.valued(ReplayCommand.settings).union(valued),
                flags: flags.union(["--help", "-h"]))
        } catch {
            return .problem(error.message)
        }
        if options.has("--help") || options.has("-h") { return .help }
        guard options.positional.count == 1, let path = options.positional.first else {
            return .problem(
                options.positional.isEmpty ? "a record file is needed" : "only one record file can be \(verb) at a time"
            )
        }
        return .file(options, path: path)
    }
}
