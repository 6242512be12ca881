import CommandSettings
import Foundation
import Logging
import Metrics
import ServiceKit
import Storage
import ZeroMQ

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// `roadsave up`: sensor-ingest, detection and notifier as three child processes of this executable, on consecutive
/// ports, supervised.
///
/// - The children are spawned with `posix_spawn`, with an empty signal mask and default dispositions (a mask or an
///   ignored signal would otherwise be inherited), standard input from /dev/null, and each in its own process group:
///   a Ctrl-C in the terminal reaches only this supervisor, which stops the services in pipeline order (ingest first,
///   so no record is taken that detection would not see; notifier last, so detection's final events are delivered).
/// - Secrets (applicationIDs, webhook URLs, which often carry tokens, the platform URL) go through the environment,
///   never on the command line, which `ps` shows to everyone.
/// - A child that dies unexpectedly is reported and restarted after a pause that doubles (1 s up to 30 s, back to 1 s
///   after a minute of good running); the others keep running. One that exits by itself within seconds of its first
///   start (a port in use, a bad setting) brings the whole thing down instead, since restarting cannot help. The rule
///   is `RestartPolicy` (ServiceKit); the supervision is in UpSupervisor.swift.
/// - SIGTERM / SIGINT: stop in order, each service given `stopTimeout` before SIGKILL; a second signal kills the
///   services at once. Exit 0 when every service stopped cleanly.
/// - SIGKILL (or any end of this process): every service gets SIGTERM from the kernel and stops gracefully; `up` puts
///   its pid in `ROADSAVE_SUPERVISOR_PID` and the service asks for the parent-death signal (see `SupervisorLink`). The
///   signal follows the *thread* that spawned the child, so children are spawned only from the main thread, which
///   lives as long as the process.
/// - `--keys`: every socket runs with CurveZMQ, the links between the services included, with the keys of `UpKeys`
///   (DIR/keys, made on the first run, reused after). Without it up says at start that nothing is encrypted.
/// - Each service keeps its state in its own data directory under `--data-dir` and locks it; a second `up` on the
///   same directory resumes where the first stopped (its services wait a few seconds for the lock of services that
///   are still stopping, e.g. after the first `up` was SIGKILLed).
public enum UpCommand {
    public static let usage = """
        Usage: roadsave up [options]

        Runs the three services on this machine as supervised child processes of this executable:
        sensor-ingest, detection (with the embedded default platform unless --platform) and notifier, on the ports
        P to P+5 (gateways P, records P+1, control P+2, events P+3, subscribers P+4, catch-up P+5). Prints where
        each listens, then "ready" once gateways, control, subscribers and catch-up listen. Each service
        keeps its durable state in DIR/ingest, DIR/detect and DIR/notify (created if missing, locked while it runs);
        running up again on the same DIR resumes from there. A service that dies is restarted (the others keep
        running); SIGTERM or SIGINT stops all of them, ingest first and notifier last (a second signal kills them at
        once). SIGHUP stops nothing: each service re-reads its allow-list, so a client key added to (or removed from)
        DIR/keys/allow.txt takes effect at once (kill -HUP the up process). If up itself is killed, even with
        SIGKILL, the services stop too.

        Options:
          --applications IDS          accepted applicationIDs, comma-separated (credentials; prefer the environment
                                      variable ROADSAVE_APPLICATIONS or a file); passed to ingest by environment only
          --applications-file F       file of accepted applicationIDs, one a line (# comments allowed)
          --platform URL              RoadSave platform base URL (default: the embedded platform)
          --settings FILE             JSON thresholds replacing the platform's settings (detection)
          --ndjson PATH               also append events as NDJSON to PATH (- for standard output)
          --webhooks URLS             webhook URLs, comma-separated (secret from ROADSAVE_WEBHOOK_SECRET or
                                      --webhook-secret-file)
          --webhook-secret-file F     file holding the webhook signing secret
          --data-dir DIR              the services' data directories go under DIR (env ROADSAVE_DATA_DIR;
                                      default ./roadsave-data)
          --base-port P               first of the six ports (default 5550)
          --bind-host H               address the services bind (default 127.0.0.1; * for every interface; any
                                      address other machines can reach needs --keys or --insecure)
          --keys                      run every socket with CurveZMQ: on the first run, make key pairs in DIR/keys
                                      (ingest, detect, notify for the services; gateway, operator, subscriber for
                                      clients; secret files mode 0600) and DIR/keys/allow.txt listing them; reuse
                                      them on later runs. Each service gets its key, the allow-list and the public
                                      key of the feed it reads; up prints the client keys to use, e.g.
                                      roadsave send --key DIR/keys/gateway.key --server-key DIR/keys/ingest.key.pub
          --insecure                  let the services bind a non-loopback --bind-host in plaintext, unauthenticated
                                      (passed on to each service as --insecure)
          --metrics-port M            serve /metrics, /healthz and /readyz over HTTP on --bind-host: ingest on M,
                                      detection on M+1, notifier on M+2 (default: none)
          --log-level L               the services' log level: debug, info, warning or error (default info)
          --dry-run                   print each service's command line (secrets stay in the environment) and exit
          -h, --help                  this text

        The services also read their usual ROADSAVE_* environment variables (see 'roadsave ingest --help' and the
        others); ROADSAVE_CONFIG is not passed on, since one file cannot configure three services.
        Exit status: 0 when every service stopped cleanly after a signal, 1 when a service failed at start or did
        not stop cleanly, 2 for bad options (also when a service refused its settings at start).
        """

    /// How long one service may take to stop before it is killed (detection and notifier give their platform calls and
    /// sinks up to 10 s).
    static let stopTimeout = 20.0

    public static func run(
        _ arguments: [String],
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> Int32 {
        // Its signals are installed later, once the services can be started and stopped.
        ClientCommand.run(
            "up", usage: usage, signals: nil, options: { try Options(arguments, environment: environment) }
        ) {
            options, _ in supervise(options, environment: environment)
        }
    }

    /// Starts the services and supervises them until a signal; returns the exit status.
    static func supervise(_ options: Options, environment: [String: String]) -> Int32 {
        guard let executable = currentExecutable() else {
            return Console.fail("up", CommandExit(1, "cannot find this executable (/proc/self/exe)"))
        }
        if options.dryRun {
            let supervisor = Supervisor(
                executable: executable, options: options, environment: environment,
                log: Log(category: "up"))
            for child in supervisor.children {
                print(([child.name + ":", executable] + child.arguments).joined(separator: " "))
            }
            return 0
        }
        // Created here, before any service starts, so a directory that cannot be made is one clear error. The lock
        // on DIR itself keeps a second `up` out at once (its services would otherwise wait for theirs, fail and be
        // restarted for ever); a SIGKILLed `up` releases it at once, and its services' own locks cover their stop.
        let lock: DataDirectoryLock
        do {
            for directory in [options.dataDirectory] + Options.services.map(options.dataDirectory(of:)) {
                _ = try DataDirectory.prepare(directory)
            }
            lock = try DataDirectoryLock(directory: options.dataDirectory)
        } catch {
            return Console.fail("up", CommandExit(1, error.message))
        }
        // Under the lock, so two ups never make two sets of keys.
        var keys: UpKeys?
        if options.keys {
            var prepared = UpKeys(directory: options.keysDirectory)
            do {
                try prepared.prepare()
            } catch {
                return Console.fail("up", CommandExit(1, "--keys: \(error)"))
            }
            keys = prepared
        }
        // SIGHUP as the services take it (re-read the allow-lists), passed on to them: they have process groups of
        // their own, so no signal sent to this process reaches them otherwise.
        SignalFlag.install([SIGTERM, SIGINT, SIGHUP])
        // The parent-death signal is sent when the thread that spawned a child ends: only the main thread lives as
        // long as this process (a thread of Swift's pool may be retired while idle).
        precondition(Thread.isMainThread, "roadsave up must supervise from the main thread")
        var supervisor = Supervisor(
            executable: executable, options: options, environment: environment,
            log: Log(category: "up"))
        supervisor.keys = keys
        return withExtendedLifetime(lock) { supervisor.run() }
    }

    struct Options: ClientCommandOptions {
        var help = false
        var applications: String?
        var applicationsFile: String?
        var platform: String?
        var settings: String?
        var ndjson: String?
        var webhooks: String?
        var webhookSecretFile: String?
        var basePort = 5550
        var bindHost = "127.0.0.1"
        /// `--log-level`, passed on to the services.
        var serviceLogLevel: String?
        /// up's own lines are at info whatever the services' level: its starts, restarts and stops are what it is for.
        var logLevel: Log.Level { .info }
        /// The first of the three metrics ports (`--metrics-port`); nil: no metrics endpoint.
        var metricsPort: Int?
        /// Absolute, so the services' messages and logs name the real place.
        var dataDirectory = ""
        var dryRun = false
        /// `--insecure`: a non-loopback --bind-host without keys is what the operator wants.
        var insecure = false
        /// `--keys`: CurveZMQ everywhere, with the keys in DIR/keys (`UpKeys`).
        var keys = false

        /// The services, by their command names, which are also the names of their data directories.
        static let services = ["ingest", "detect", "notify"]

        init(_ arguments: [String], environment: [String: String]) throws {
            let parsed = try CommandLineOptions(
                arguments,
                valued: [
                    "--applications", "--applications-file", "--platform", "--settings", "--ndjson", "--webhooks",
                    "--webhook-secret-file", "--base-port", "--bind-host", "--log-level", "--data-dir",
                    "--metrics-port",
                ],
                flags: CommandLineOptions.helpSwitches.union(["--dry-run", "--insecure", "--keys"]))
            if parsed.asksForHelp {
                help = true
                return
            }
            guard parsed.positional.isEmpty else {
                throw CommandExit.usage("unexpected argument \"\(parsed.positional[0])\"")
            }
            dryRun = parsed.has("--dry-run")
            insecure = parsed.has("--insecure")
            keys = parsed.has("--keys")
            let directory = parsed.string("--data-dir") ?? environment["ROADSAVE_DATA_DIR"] ?? "roadsave-data"
            guard !directory.isEmpty else {
                throw CommandExit.usage(
                    "--data-dir (or ROADSAVE_DATA_DIR) is empty: give the directory for the services' state")
            }
            dataDirectory = URL(fileURLWithPath: directory).standardizedFileURL.path
            applications = parsed.string("--applications")
            applicationsFile = parsed.string("--applications-file")
            if let path = applicationsFile, !FileManager.default.isReadableFile(atPath: path) {
                throw CommandExit.usage("--applications-file: cannot read \(path)")
            }
            let fromEnvironment =
                environment["ROADSAVE_APPLICATIONS"].map { !$0.isEmpty } ?? false
                || environment["ROADSAVE_APPLICATIONS_FILE"] != nil
            if applications?.split(separator: ",").contains(where: { !$0.trimmingCharacters(in: .whitespaces).isEmpty })
                != true,
                applicationsFile == nil, !fromEnvironment
            {
                throw CommandExit.usage(
                    "no applications: give --applications, ROADSAVE_APPLICATIONS or --applications-file (ingest would refuse every record)"
                )
            }
            if let text = parsed.string("--platform") {
                guard let url = URL(string: text), let scheme = url.scheme, ["http", "https"].contains(scheme),
                    url.host != nil
                else {
                    throw CommandExit.usage("--platform: \"\(text)\" is not an http:// or https:// URL")
                }
                platform = text
            }
            settings = parsed.string("--settings")
            if let path = settings, !FileManager.default.isReadableFile(atPath: path) {
                throw CommandExit.usage("--settings: cannot read \(path)")
            }
            ndjson = parsed.string("--ndjson")
            webhooks = parsed.string("--webhooks")
            webhookSecretFile = parsed.string("--webhook-secret-file")
            if let path = webhookSecretFile, !FileManager.default.isReadableFile(atPath: path) {
                throw CommandExit.usage("--webhook-secret-file: cannot read \(path)")
            }
            basePort = try parsed.integer("--base-port", range: 1...65530) ?? 5550
            metricsPort = try parsed.integer("--metrics-port", range: 1...65533)
            if let host = parsed.string("--bind-host") {
                guard !host.isEmpty, !host.contains("/"), host.rangeOfCharacter(from: .whitespaces) == nil else {
                    throw CommandExit.usage(
                        "--bind-host: \"\(host)\" is not a host address (an IP address, an interface or *)")
                }
                bindHost = host
            }
            if let level = parsed.string("--log-level") {
                guard Log.Level(rawValue: level) != nil else {
                    throw CommandExit.usage("--log-level must be one of debug, info, warning, error, got \"\(level)\"")
                }
                serviceLogLevel = level
            }
            for port in basePort...(basePort + 5) {
                do {
                    _ = try Endpoint.validate(bind(port), flag: "--bind-host/--base-port")
                } catch {
                    throw CommandExit.usage(error.message)
                }
            }
            if let metricsPort {
                guard metricsPort + 2 < basePort || metricsPort > basePort + 5 else {
                    throw CommandExit.usage(
                        "--metrics-port \(metricsPort): its ports \(metricsPort)-\(metricsPort + 2) overlap "
                            + "the services' \(basePort)-\(basePort + 5) (--base-port)")
                }
                do {
                    _ = try MetricsEndpoint(parsing: metricsEndpoint(0)!)
                } catch {
                    throw CommandExit.usage("--metrics-port needs --bind-host to be an IP address or *: \(error)")
                }
            }
            // The services would refuse it one by one; say it once, with what to do.
            if !insecure, !keys, !CurveServerKeys.isLoopback(bind(basePort)) {
                throw CommandExit.usage(
                    "--bind-host \(bindHost) makes the services reachable from other machines, but up "
                        + "passes them no CurveZMQ keys: pass --keys to run with keys, --insecure to accept plaintext, "
                        + "unauthenticated connections, or bind 127.0.0.1 (the default)")
            }
        }

        /// The bind host as an address is written before ":port" (an IPv6 address in brackets).
        var bindAddress: String { bindHost.contains(":") && !bindHost.hasPrefix("[") ? "[\(bindHost)]" : bindHost }

        func bind(_ port: Int) -> String { "tcp://\(bindAddress):\(port)" }

        /// `--metrics-endpoint` of the service `offset` ports after `--metrics-port` (on the bind host).
        func metricsEndpoint(_ offset: Int) -> String? {
            metricsPort.map { "\(bindAddress):\($0 + offset)" }
        }

        /// Where a local client connects for an endpoint bound with `bind`.
        func connect(_ port: Int) -> String { Endpoint.connectable(bind(port)) }

        var gateways: Int { basePort }
        var records: Int { basePort + 1 }
        var control: Int { basePort + 2 }
        var events: Int { basePort + 3 }
        var subscribers: Int { basePort + 4 }
        var catchUp: Int { basePort + 5 }

        func dataDirectory(of service: String) -> String { DataDirectory.file(service, in: dataDirectory) }

        /// Where `--keys` keeps the keys.
        var keysDirectory: String { UpKeys.directory(in: dataDirectory) }
    }

    enum SpawnResult {
        case success(pid_t)
        case failure(String)
    }

    /// `posix_spawn` with a clean signal state: empty mask, default dispositions for the signals a service
    /// handles or a parent may ignore, its own process group, standard input from /dev/null.
    static func spawn(_ path: String, _ arguments: [String], environment: [String: String]) -> SpawnResult {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGPIPE, SIGCHLD, SIGHUP, SIGQUIT] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)

        let argv: [UnsafeMutablePointer<CChar>?] =
            ([path.split(separator: "/").last.map(String.init) ?? path] + arguments)
            .map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] =
            environment.sorted { $0.key < $1.key }
            .map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        guard result == 0 else { return .failure(String(cString: strerror(result))) }
        return .success(pid)
    }

    /// This process's executable, as `/proc/self/exe` resolves it.
    static func currentExecutable() -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        if count > 0 {
            let path = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            // A rebuilt executable shows as "path (deleted)"; the old inode still runs, the new file is at the path.
            return path.hasSuffix(" (deleted)") ? String(path.dropLast(" (deleted)".count)) : path
        }
        let argument0 = CommandLine.arguments.first ?? ""
        return argument0.contains("/") ? argument0 : nil
    }
}
