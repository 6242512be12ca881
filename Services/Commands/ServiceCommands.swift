import DetectionService
import IngestService
import NotifierService
import ServiceKit

extension IngestService: RunnableService {}
extension DetectionService: RunnableService {}
extension NotifierService: RunnableService {}

/// `roadsave ingest`: the sensor-ingest service.
public enum IngestCommand {
    public static func run(_ arguments: [String]) -> Int32 {
        ServiceRunner.run(
            name: "ingest",
            summary: "sensor-ingest: takes batches of records from gateways (ZeroMQ ROUTER), validates each record, stores the valid\nones in its journal (SQLite in --data-dir, fsync'd) and only then acknowledges the batch; detection pulls them by\nposition from --records-endpoint.",
            arguments: arguments, specs: IngestConfiguration.specs, load: IngestConfiguration.load,
            make: { try IngestService(configuration: $0) })
    }
}

/// `roadsave detect`: the detection service.
public enum DetectCommand {
    public static func run(_ arguments: [String]) -> Int32 {
        ServiceRunner.run(
            name: "detect",
            summary: "detection: runs the trip and crash engines per device over sensor-ingest's records, takes control commands,\ncalls the platform off its socket thread and publishes events to the notifier.",
            arguments: arguments, specs: DetectionConfiguration.specs, load: DetectionConfiguration.load,
            make: { try DetectionService(configuration: $0) })
    }
}

/// `roadsave notify`: the notifier service.
public enum NotifyCommand {
    public static func run(_ arguments: [String]) -> Int32 {
        ServiceRunner.run(
            name: "notify",
            summary: "notifier: delivers detection's events to alerting systems: a ZeroMQ PUB socket (topics <event>.<app>.<user>),\nHMAC-signed webhooks and NDJSON, each in the current or the legacy 3.x format.",
            arguments: arguments, specs: NotifierConfiguration.specs, load: NotifierConfiguration.load,
            make: { try NotifierService(configuration: $0) })
    }
}
