import CommandSettings
import Foundation
import Logging

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A long-running service: `run()` blocks until `stop()` (from another thread) has shut it down gracefully.
public protocol RunnableService: AnyObject, Sendable {
    func run() throws
    func stop()
}

/// The common life of a service process: signals blocked first thing, configuration from flags, environment and
/// file validated with a clear message (exit 2), what the service holds for its whole life taken (its data
/// directory's lock; exit 1 if it cannot be), `--help` with the effective configuration (secrets masked),
/// SIGTERM/SIGINT → graceful stop → exit 0.
public enum ServiceRunner {
    /// A service that cannot start for a reason other than its settings (its data directory is in use): exit 1.
    public struct StartFailure: Error, CustomStringConvertible {
        public var message: String
        public init(_ message: String) { self.message = message }
        public var description: String { message }
    }

    /// How long a service whose supervisor is gone may take to stop before it ends itself: nobody is left to kill a
    /// stop that hangs (a sink, a platform call), and the next supervisor's services wait for its data directory.
    public static let orphanStopLimit = 15.0

    /// - Parameters:
    ///   - hold: runs after the configuration is valid and before the service is made; what it returns is kept until
    ///     the process ends (the data directory's lock). A `StartFailure` (or any error) ends the start with exit 1.
    ///   - supervisor: the pid of the supervising `roadsave up`, when there is one (see `SupervisorLink`); a stop
    ///     requested once it is gone is bounded by `orphanStopLimit`.
    public static func run<Configuration>(
        name: String, summary: String, arguments: [String], specs: [any AnySetting],
        load: (ServiceConfiguration) throws(CommandLineOptions.UsageError) -> Configuration,
        hold: (ServiceConfiguration) throws -> AnyObject? = { _ in nil },
        make: (Configuration) throws -> any RunnableService,
        supervisor: Int32? = nil
    ) -> Int32 {
        ShutdownSignals.block()
        // A subscriber or a pipe going away must be an error on that write, not the end of the service.
        signal(SIGPIPE, SIG_IGN)
        let usage =
            "Usage: roadsave \(name) [options]\n\n\(summary)\n\nOptions (flag, environment variable, config file key; flags win, then the environment, then the file):\n"
            + ServiceConfiguration.optionsHelp(specs)
            + "\n  -h, --help                  this text and the effective configuration"
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
        // From here a stop request is taken at once, even while the service is still being made (SIGTERM stays
        // blocked in every thread and is only ever taken by the signal thread's sigwait).
        let stopRequest = StopRequest()
        ShutdownSignals.onSignal { signal in
            log.info("shutting down", ["signal": signal])
            if let supervisor, getppid() != supervisor {
                OrphanWatchdog.start(limit: orphanStopLimit, log: log)
            }
            stopRequest.request(signal)
        }
        let held: AnyObject?
        do {
            held = try hold(source)
        } catch {
            log.error("cannot start", ["error": "\(error)"])
            FileHandle.standardError.write(Data("roadsave \(name): \(error)\n".utf8))
            return 1
        }
        return withExtendedLifetime(held) {
            let service: any RunnableService
            do {
                service = try make(configuration)
            } catch {
                return fail(name, "\(error)")
            }
            if let signal = stopRequest.attach(service) {
                log.info("stopped before starting", ["signal": signal])
                return 0
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
    }

    static func fail(_ name: String, _ message: String) -> Int32 {
        FileHandle.standardError.write(
            Data("roadsave \(name): \(message)\nRun 'roadsave \(name) --help' for usage.\n".utf8))
        return 2
    }
}
