import Foundation
import RoadSaveModel

/// A long-running service: `run()` blocks until `stop()` (from another thread) has shut it down gracefully.
public protocol RunnableService: AnyObject, Sendable {
    func run() throws
    func stop()
}

/// The common life of a service process: signals blocked first thing, configuration from flags, environment and
/// file validated with a clear message (exit 2), `--help` with the effective configuration (secrets masked),
/// SIGTERM/SIGINT → graceful stop → exit 0.
public enum ServiceRunner {
    public static func run<Configuration>(
        name: String, summary: String, arguments: [String], specs: [SettingSpec],
        load: (ServiceConfiguration) throws(CommandLineOptions.UsageError) -> Configuration,
        make: (Configuration) throws -> any RunnableService
    ) -> Int32 {
        ShutdownSignals.block()
        // A subscriber or a pipe going away must be an error on that write, not the end of the service.
        signal(SIGPIPE, SIG_IGN)
        let usage = "Usage: roadsave \(name) [options]\n\n\(summary)\n\nOptions (flag, environment variable, config file key; flags win, then the environment, then the file):\n"
            + ServiceConfiguration.optionsHelp(specs) + "\n  -h, --help                  this text and the effective configuration"
        let source: ServiceConfiguration
        do {
            source = try ServiceConfiguration(specs: specs, arguments: arguments)
        } catch {
            return fail(name, error.message)
        }
        if source.helpRequested {
            print(usage)
            print("\nEffective configuration (secrets masked):\n" + source.describe())
            return 0
        }
        let configuration: Configuration
        do {
            configuration = try load(source)
        } catch {
            return fail(name, error.message)
        }
        let log = Log(category: name)
        let service: any RunnableService
        do {
            service = try make(configuration)
        } catch {
            return fail(name, "\(error)")
        }
        ShutdownSignals.onSignal { signal in
            log.info("shutting down", ["signal": signal])
            service.stop()
        }
        log.info("starting", ["configuration": source.describe().replacingOccurrences(of: "\n", with: ";")])
        do {
            try service.run()
            log.info("stopped")
            return 0
        } catch {
            log.error("failed", ["error": "\(error)"])
            FileHandle.standardError.write(Data("roadsave \(name): \(error)\n".utf8))
            return 1
        }
    }

    static func fail(_ name: String, _ message: String) -> Int32 {
        FileHandle.standardError.write(Data("roadsave \(name): \(message)\nRun 'roadsave \(name) --help' for usage.\n".utf8))
        return 2
    }
}
