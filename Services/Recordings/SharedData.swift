// Finds the read-only folder of real recordings (`../shared/data` beside the RoadSave package). The data is never
// copied into the project, so a clone outside the RoadSave workspace simply has none, and the tests that need it skip.

import Foundation

public enum SharedData {
    /// The environment variable that overrides where the recordings are.
    public static let environmentVariable = "ROADSAVE_SHARED_DATA"

    /// `ROADSAVE_SHARED_DATA` if set; else `../shared/data` relative to the package root (the nearest folder above this
    /// source file that holds a Package.swift) when that folder exists; else nil.
    public static var directory: URL? {
        if let override = ProcessInfo.processInfo.environment[environmentVariable], !override.isEmpty {
            return URL(fileURLWithPath: override, isDirectory: true)
        }
        // Symlinks are resolved first, so a package that links this folder in from elsewhere still finds the data
        // beside the real package. Every package root on the way up is tried, nearest first.
        let here = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath()
        var folder = here.deletingLastPathComponent()
        while folder.path != "/" && !folder.path.isEmpty {
            if FileManager.default.fileExists(atPath: folder.appendingPathComponent("Package.swift").path) {
                let candidate = folder.deletingLastPathComponent()
                    .appendingPathComponent("shared", isDirectory: true)
                    .appendingPathComponent("data", isDirectory: true)
                if isDirectory(candidate) { return candidate }
            }
            folder = folder.deletingLastPathComponent()
        }
        return nil
    }

    /// Whether the recordings can be read (for `@Test(.enabled(if:))`).
    public static var isAvailable: Bool {
        guard let directory else { return false }
        return isDirectory(directory)
    }

    /// Whether one dataset's folder is there (datasets were added over time, so an older copy may lack some).
    public static func has(_ dataset: Dataset) -> Bool {
        guard let folder = url(dataset.folder) else { return false }
        return isDirectory(folder)
    }

    /// A file or folder inside the shared data, e.g. `url("phone-drops/raw_data.tar.gz")`; nil when the data is absent.
    public static func url(_ relativePath: String) -> URL? {
        directory?.appendingPathComponent(relativePath)
    }

    /// The files of one dataset folder whose names end with `suffix`, sorted by name (empty when absent).
    public static func files(in relativeFolder: String, suffix: String) -> [URL] {
        guard let folder = url(relativeFolder),
            let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path)
        else { return [] }
        return names.filter { $0.hasSuffix(suffix) }.sorted().map { folder.appendingPathComponent($0) }
    }

    private static func isDirectory(_ url: URL) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) && isDirectory.boolValue
    }
}
