import Foundation
import ServiceKit
import Storage

/// A service's data directory as the service commands see it: the raw `--data-dir` value of the configuration
/// (whatever the service's own configuration type does with it), locked for the life of the process. Every service
/// configuration declares `--data-dir`; one that did not would run without a lock.
enum DataDirectorySetting {
    static let flag = "--data-dir"

    /// Creates the directory if needed and takes its lock, waiting up to `wait` seconds for a predecessor.
    static func lock(_ source: ServiceConfiguration, wait: Double = DataDirectoryLock.defaultWait) throws(ServiceRunner.StartFailure)
        -> DataDirectoryLock? {
        guard let key = source.specs.first(where: { $0.flag == flag })?.key, let path = source.string(key) else { return nil }
        guard !path.isEmpty else { throw .init("\(flag) is empty: give the directory of this service's state") }
        do {
            return try DataDirectoryLock(directory: DataDirectory.prepare(path), wait: wait)
        } catch {
            throw .init(error.message)
        }
    }
}
