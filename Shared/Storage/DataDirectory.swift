import Foundation

/// A service's data directory (`--data-dir`, `ROADSAVE_DATA_DIR`): created on first use, readable only by its owner,
/// since it holds people's positions.
public enum DataDirectory {
    /// Creates `path` (and its parents) if needed and checks that it is a writable directory. The error says why not.
    public static func prepare(_ path: String) throws(StorageError) -> String {
        let manager = FileManager.default
        var isDirectory: ObjCBool = false
        if manager.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw StorageError(code: -1, message: "data directory \(path) exists and is not a directory")
            }
        } else {
            do {
                try manager.createDirectory(
                    atPath: path, withIntermediateDirectories: true,
                    attributes: [.posixPermissions: 0o700])
            } catch {
                throw StorageError(
                    code: -1, message: "cannot create data directory \(path): \(error.localizedDescription)")
            }
        }
        guard manager.isWritableFile(atPath: path) else {
            throw StorageError(code: -1, message: "data directory \(path) is not writable")
        }
        return path
    }

    /// `directory/name`.
    public static func file(_ name: String, in directory: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }
}
