import CommandSettings
import Foundation
import IngestService
import ServiceKit
import Testing

@testable import DetectionService

/// detection's data directory in a config file: under the key sensor-ingest (and the notifier) use,
/// `dataDirectory`, and under `dataDir`, its key before, so that files written for it keep working.
struct DataDirectorySettingTests {
    static func load(file json: String) throws -> DetectionConfiguration {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "roadsave-detection-config-\(UUID().uuidString).json"
        ).path
        try json.write(toFile: path, atomically: false, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let loopback = [
            "--records-endpoint", "tcp://127.0.0.1:5551", "--control-endpoint", "tcp://127.0.0.1:5552",
            "--events-endpoint", "tcp://127.0.0.1:5553",
        ]
        return try DetectionConfiguration.load(
            ServiceConfiguration(
                specs: DetectionConfiguration.specs, arguments: loopback + ["--config", path], environment: [:]))
    }

    @Test func theKeyIsTheOneSensorIngestUses() throws {
        #expect(DetectionConfiguration.Settings.dataDirectory.key == IngestConfiguration.Settings.dataDirectory.key)
        #expect(
            try Self.load(file: #"{"dataDirectory": "/var/lib/roadsave/detect"}"#).dataDirectory
                == "/var/lib/roadsave/detect")
    }

    @Test func aFileWrittenWithTheFormerKeyStillWorks() throws {
        #expect(try Self.load(file: #"{"dataDir": "/srv/detect"}"#).dataDirectory == "/srv/detect")
        let both = #expect(throws: CommandLineOptions.UsageError.self) {
            try Self.load(file: #"{"dataDir": "/srv/a", "dataDirectory": "/srv/b"}"#)
        }
        #expect(both?.message.contains("\"dataDir\" is the former name of \"dataDirectory\"") == true)
    }
}
