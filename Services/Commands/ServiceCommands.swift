import CommandSettings
import DetectionService
import Foundation
import IngestService
import NotifierService
import ServiceKit
import Storage

extension IngestService: RunnableService {}
extension DetectionService: RunnableService {}
extension NotifierService: RunnableService {}

/// `roadsave ingest`: the sensor-ingest service.
public enum IngestCommand {
    public static func run(_ arguments: [String]) -> Int32 {
        ServiceProcess.run(
            name: "ingest",
            summary:
                "sensor-ingest: takes batches of records from gateways (ZeroMQ ROUTER), validates each record, stores the valid\nones in its journal (SQLite in --data-dir, fsync'd) and only then acknowledges the batch; detection pulls them by\nposition from --records-endpoint.",
            arguments: arguments, specs: IngestConfiguration.specs,
            dataDirectory: IngestConfiguration.Settings.dataDirectory,
            load: IngestConfiguration.load,
            make: { try IngestService(configuration: $0) })
    }
}

/// `roadsave detect`: the detection service.
public enum DetectCommand {
    public static func run(_ arguments: [String]) -> Int32 {
        ServiceProcess.run(
            name: "detect",
            summary:
                "detection: reads sensor-ingest's journals by position and runs the trip and crash engines per device, takes\ncontrol commands and calls the platform off its socket thread. Its store in --data-dir holds a checkpoint of every\ndevice, the inputs since (journal ranges, platform answers, commands, clock ticks) and an outbox of events kept until\nthe notifier has stored them; a restart re-runs the inputs after the checkpoint and gives the same events again.",
            arguments: arguments, specs: DetectionConfiguration.specs,
            dataDirectory: DetectionConfiguration.Settings.dataDirectory,
            load: DetectionConfiguration.load,
            make: { try DetectionService(configuration: $0) })
    }
}

/// `roadsave notify`: the notifier service.
public enum NotifyCommand {
    public static func run(_ arguments: [String]) -> Int32 {
        ServiceProcess.run(
            name: "notify",
            summary:
                "notifier: pulls detection's events, stores each once (by eventID) in --data-dir and delivers them to alerting\nsystems: a ZeroMQ PUB socket (topics <event>.<app>.<user>, with catch-up from --catch-up-endpoint), HMAC-signed\nwebhooks and NDJSON, each in the current or the legacy 3.x format.",
            arguments: arguments, specs: NotifierConfiguration.specs,
            dataDirectory: NotifierConfiguration.Settings.dataDirectory,
            load: NotifierConfiguration.load,
            make: { try NotifierService(configuration: $0) })
    }
}

/// What the three service commands share around `ServiceRunner`: the tie to a supervising `roadsave up` (so no
/// service outlives it) and the exclusive lock on the service's data directory (so two processes never share a
/// store).
enum ServiceProcess {
    static func run<Configuration>(
        name: String, summary: String, arguments: [String], specs: [any AnySetting], dataDirectory: Setting<String>,
        load: (ServiceConfiguration) throws(CommandLineOptions.UsageError) -> Configuration,
        make: (Configuration) throws -> any RunnableService,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> Int32 {
        // Blocked before the parent-death signal is asked for, so that signal can only ever be taken by the
        // service's signal thread (a graceful stop), never kill the process half-way through a commit.
        ShutdownSignals.block()
        let supervisor: Int32?
        do {
            supervisor = try SupervisorLink.attach(environment: environment)
        } catch {
            return Console.fail(name, error)
        }
        return ServiceRunner.run(
            name: name, summary: summary, arguments: arguments, specs: specs, load: load,
            hold: { source in try DataDirectorySetting.lock(source, dataDirectory) },
            make: make, supervisor: supervisor)
    }
}
