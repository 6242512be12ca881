import Foundation

/// A bench subcommand's arguments: the recording it reads first, then `--flag value` options; `--help` prints the
/// usage. One reading for `engines` and `counts`, so they take their arguments alike.
struct BenchArguments {
    let arguments: [String]

    /// nil when `--help` was asked for (the usage printed); a missing recording exits with status 2 and the usage.
    static func read(_ arguments: [String], usage: String) -> BenchArguments? {
        if arguments.contains("--help") || arguments.contains("-h") {
            print(usage)
            return nil
        }
        guard let path = arguments.first, !path.hasPrefix("-") else {
            FileHandle.standardError.write(Data((usage + "\n").utf8))
            exit(2)
        }
        return BenchArguments(arguments: arguments)
    }

    /// The recording to read.
    var path: String { arguments[0] }

    /// The value after `flag`, if given.
    func value(of flag: String) -> String? {
        guard let index = arguments.firstIndex(of: flag), index + 1 < arguments.count else { return nil }
        return arguments[index + 1]
    }
}
