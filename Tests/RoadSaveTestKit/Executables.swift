import Foundation

/// The project's built executables, which tests run as separate processes (as users and scripts do).
public enum Executables {
    /// Their folder: `ROADSAVE_BIN_DIR`, else beside the test bundle in SwiftPM's build folder (the runner may be
    /// inside the .xctest bundle, so a few folders up), else `.build/debug`.
    public static let folder: URL = {
        if let path = ProcessInfo.processInfo.environment["ROADSAVE_BIN_DIR"] { return URL(fileURLWithPath: path) }
        var folder = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent()
        for _ in 0..<4 {
            if FileManager.default.isExecutableFile(atPath: folder.appendingPathComponent("roadsave").path) {
                return folder
            }
            folder = folder.deletingLastPathComponent()
        }
        return TestPaths.repository.appendingPathComponent(".build/debug")
    }()

    /// A built executable by name (`roadsave-ingest`, say).
    public static func named(_ name: String) -> URL { folder.appendingPathComponent(name) }

    /// `roadsave`: `ROADSAVE_BIN` when set, else the one in `folder`.
    public static var roadsave: URL {
        if let path = ProcessInfo.processInfo.environment["ROADSAVE_BIN"] { return URL(fileURLWithPath: path) }
        return named("roadsave")
    }

    /// `/usr/bin/env`, to run `python3` and other tools from the PATH as a user would.
    public static let env = URL(fileURLWithPath: "/usr/bin/env")
}
