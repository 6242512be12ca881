import CommandSettings
import Foundation
import ServiceKit
import Storage

/// A service's data directory as the service commands see it: its `--data-dir` setting (`ServiceSettings.dataDirectory`,
/// which refuses an empty one), locked for the life of the process.
enum DataDirectorySetting {
    /// Creates the directory if needed and takes its lock, waiting up to `wait` seconds for a predecessor.
    static func lock(
        _ source: ServiceConfiguration, _ setting: Setting<String>, wait: Double = DataDirectoryLock.defaultWait
    )
        throws(ServiceRunner.StartFailure) -> DataDirectoryLock
    {
        let path: String
        do {
            path = try source.value(setting)
        } catch {
            throw .init(error.message)
        }
        do {
            return try DataDirectoryLock(directory: DataDirectory.prepare(path), wait: wait)
        } catch {
            throw .init(error.message)
        }
    }
}
