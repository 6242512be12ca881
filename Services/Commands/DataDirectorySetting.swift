import Foundation
import ServiceKit
import Storage

/// A service's data directory as the service commands see it: the raw `--data-dir` value of the configuration
/// (whatever the service's own configuration type does with it), locked for the life of the process.
enum DataDirectorySetting {
    static let flag = "--data-dir"

    /// The setting for a configuration that does not declare one yet (default `roadsave-data/<service>`). Each
    /// service configuration is to declare its own, with this flag, environment variable and default; this one only
    /// stands in until it does.
    static func spec(_ service: String) -> SettingSpec {
        SettingSpec(flag: flag, environment: "ROADSAVE_DATA_DIR", key: "dataDirectory", default: "roadsave-data/\(service)",
                    help: "directory of this service's durable state (created if missing; one process at a time)")
    }

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
