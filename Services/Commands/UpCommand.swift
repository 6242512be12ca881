#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Metrics
import RoadSaveModel
import ServiceKit
import Storage
import ZeroMQ

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
///   start (a port in use, a bad setting) brings the whole thing down instead, since restarting cannot help.
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
        each listens, then "ready" once gateways, control, subscribers and catch-up accept connections. Each service
        keeps its durable state in DIR/ingest, DIR/detect and DIR/notify (created if missing, locked while it runs);
        running up again on the same DIR resumes from there. A service that dies is restarted (the others keep
        running); SIGTERM, SIGINT or SIGHUP stops all of them, ingest first and notifier last (a second signal kills
        them at once). If up itself is killed, even with SIGKILL, the services stop too.

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
    /// A first start that ends sooner than this is a failure to start, not a crash to recover from.
    static let startGrace = 3.0
    static let firstBackoff = 1.0
    static let maximumBackoff = 30.0
    /// Running this long resets the restart pause.
    static let stableAfter = 60.0

    public static func run(_ arguments: [String],
                           environment: [String: String] = ProcessInfo.processInfo.environment) -> Int32 {
        let options: Options
        do {
            options = try Options(arguments, environment: environment)
        } catch {
            return Console.fail("up", error)
        }
        if options.help {
            print(usage)
            return 0
        }
        guard let executable = currentExecutable() else {
            return Console.fail("up", CommandExit(1, "cannot find this executable (/proc/self/exe)"))
        }
        if options.dryRun {
            let supervisor = Supervisor(executable: executable, options: options, environment: environment,
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
        // SIGHUP too: the children have process groups of their own, so a closing terminal reaches only this process.
        SignalFlag.install([SIGTERM, SIGINT, SIGHUP])
        signal(SIGPIPE, SIG_IGN)
        // The parent-death signal is sent when the thread that spawned a child ends: only the main thread lives as
        // long as this process (a thread of Swift's pool may be retired while idle).
        precondition(Thread.isMainThread, "roadsave up must supervise from the main thread")
        var supervisor = Supervisor(executable: executable, options: options, environment: environment,
                                    log: Log(category: "up"))
        supervisor.keys = keys
        return withExtendedLifetime(lock) { supervisor.run() }
    }

    struct Options {
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
        var logLevel: String?
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

        init(_ arguments: [String], environment: [String: String]) throws(CommandExit) {
            do {
                let parsed = try CommandLineOptions(
                    arguments,
                    valued: ["--applications", "--applications-file", "--platform", "--settings", "--ndjson", "--webhooks",
                             "--webhook-secret-file", "--base-port", "--bind-host", "--log-level", "--data-dir",
                             "--metrics-port"],
                    flags: ["--help", "-h", "--dry-run", "--insecure", "--keys"])
                if parsed.has("--help") || parsed.has("-h") {
                    help = true
                    return
                }
                guard parsed.positional.isEmpty else { throw CommandExit.usage("unexpected argument \"\(parsed.positional[0])\"") }
                dryRun = parsed.has("--dry-run")
                insecure = parsed.has("--insecure")
                keys = parsed.has("--keys")
                let directory = parsed.string("--data-dir") ?? environment["ROADSAVE_DATA_DIR"] ?? "roadsave-data"
                guard !directory.isEmpty else {
                    throw CommandExit.usage("--data-dir (or ROADSAVE_DATA_DIR) is empty: give the directory for the services' state")
                }
                dataDirectory = URL(fileURLWithPath: directory).standardizedFileURL.path
                applications = parsed.string("--applications")
                applicationsFile = parsed.string("--applications-file")
                if let path = applicationsFile, !FileManager.default.isReadableFile(atPath: path) {
                    throw CommandExit.usage("--applications-file: cannot read \(path)")
                }
                let fromEnvironment = environment["ROADSAVE_APPLICATIONS"].map { !$0.isEmpty } ?? false
                    || environment["ROADSAVE_APPLICATIONS_FILE"] != nil
                if applications?.split(separator: ",").contains(where: { !$0.trimmingCharacters(in: .whitespaces).isEmpty }) != true,
                   applicationsFile == nil, !fromEnvironment {
                    throw CommandExit.usage("no applications: give --applications, ROADSAVE_APPLICATIONS or --applications-file (ingest would refuse every record)")
                }
                if let text = parsed.string("--platform") {
                    guard let url = URL(string: text), let scheme = url.scheme, ["http", "https"].contains(scheme),
                          url.host != nil else {
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
                        throw CommandExit.usage("--bind-host: \"\(host)\" is not a host address (an IP address, an interface or *)")
                    }
                    bindHost = host
                }
                if let level = parsed.string("--log-level") {
                    guard Log.Level(rawValue: level) != nil else {
                        throw CommandExit.usage("--log-level must be one of debug, info, warning, error, got \"\(level)\"")
                    }
                    logLevel = level
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
                        throw CommandExit.usage("--metrics-port \(metricsPort): its ports \(metricsPort)-\(metricsPort + 2) overlap "
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
                    throw CommandExit.usage("--bind-host \(bindHost) makes the services reachable from other machines, but up "
                        + "passes them no CurveZMQ keys: pass --keys to run with keys, --insecure to accept plaintext, "
                        + "unauthenticated connections, or bind 127.0.0.1 (the default)")
                }
            } catch let error as CommandLineOptions.UsageError {
                throw .usage(error.message)
            } catch let error as CommandExit {
                throw error
            } catch {
                throw .usage("\(error)")
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

    /// One supervised service.
    struct Child {
        var name: String
        var arguments: [String]
        var environment: [String: String]
        var pid: pid_t?
        var startedAt = 0.0
        var starts = 0
        var backoff = UpCommand.firstBackoff
        var restartAt: Double?
        /// SIGTERM sent during the shutdown, and when it must be gone.
        var stopDeadline: Double?
        var killed = false
        var lastStatus: String?
        var exitedCleanly = false
    }

    struct Supervisor {
        let executable: String
        let options: Options
        let log: Log
        var children: [Child] = []
        var stopping = false
        var signalsSeen: Int32 = 0
        var failure: Int32?
        var ready = false
        var readySince = MonotonicClock.now()
        /// The keys of `--keys`, prepared; nil without.
        var keys: UpKeys?

        init(executable: String, options: Options, environment: [String: String], log: Log) {
            self.executable = executable
            self.options = options
            self.log = log
            var common = environment
            // One config file cannot configure three services (each refuses the others' keys).
            common["ROADSAVE_CONFIG"] = nil
            // Each service gets its own directory by flag; the shared one would otherwise confuse a reader of `env`.
            common["ROADSAVE_DATA_DIR"] = nil
            // Ties each service to this process: it stops when this process ends, however it ends.
            common[SupervisorLink.environmentVariable] = String(getpid())
            // Secrets go only to the service that needs them.
            let secrets = ["ROADSAVE_APPLICATIONS", "ROADSAVE_APPLICATIONS_FILE", "ROADSAVE_WEBHOOK_SECRET",
                           "ROADSAVE_WEBHOOK_SECRET_FILE", "ROADSAVE_WEBHOOKS", "ROADSAVE_PLATFORM_URL"]
            func only(_ keep: [String], _ extra: [String: String]) -> [String: String] {
                var result = common
                for key in secrets where !keep.contains(key) { result[key] = nil }
                for (key, value) in extra { result[key] = value }
                return result
            }
            // What every service gets: the log level, --insecure.
            var sharedFlags: [String] = []
            if let logLevel = options.logLevel { sharedFlags = ["--log-level", logLevel] }
            if options.insecure { sharedFlags.append("--insecure") }
            let keys = UpKeys(directory: options.keysDirectory)
            func keyFlags(_ service: String) -> [String] { options.keys ? keys.arguments(of: service) : [] }
            func metricsFlags(_ offset: Int) -> [String] { options.metricsEndpoint(offset).map { ["--metrics-endpoint", $0] } ?? [] }

            var ingestEnvironment: [String: String] = [:]
            if let applications = options.applications { ingestEnvironment["ROADSAVE_APPLICATIONS"] = applications }
            if let file = options.applicationsFile { ingestEnvironment["ROADSAVE_APPLICATIONS_FILE"] = file }
            var detectEnvironment: [String: String] = [:]
            if let platform = options.platform { detectEnvironment["ROADSAVE_PLATFORM_URL"] = platform }
            var detectArguments = ["detect", "--records-endpoint", options.connect(options.records),
                                   "--control-endpoint", options.bind(options.control),
                                   "--events-endpoint", options.bind(options.events),
                                   "--data-dir", options.dataDirectory(of: "detect")]
            if let settings = options.settings { detectArguments += ["--settings", settings] }
            var notifyEnvironment: [String: String] = [:]
            if let webhooks = options.webhooks { notifyEnvironment["ROADSAVE_WEBHOOKS"] = webhooks }
            if let file = options.webhookSecretFile { notifyEnvironment["ROADSAVE_WEBHOOK_SECRET_FILE"] = file }
            var notifyArguments = ["notify", "--events-endpoint", options.connect(options.events),
                                   "--publish-endpoint", options.bind(options.subscribers),
                                   "--catch-up-endpoint", options.bind(options.catchUp),
                                   "--data-dir", options.dataDirectory(of: "notify")]
            if let ndjson = options.ndjson { notifyArguments += ["--ndjson", ndjson] }

            // Downstream first, so that the earliest events find their subscriber.
            children = [
                Child(name: "notify", arguments: notifyArguments + keyFlags("notify") + metricsFlags(2) + sharedFlags,
                      environment: only(["ROADSAVE_WEBHOOK_SECRET", "ROADSAVE_WEBHOOK_SECRET_FILE", "ROADSAVE_WEBHOOKS"],
                                        notifyEnvironment)),
                Child(name: "detect", arguments: detectArguments + keyFlags("detect") + metricsFlags(1) + sharedFlags,
                      environment: only(["ROADSAVE_PLATFORM_URL"], detectEnvironment)),
                Child(name: "ingest", arguments: ["ingest", "--gateway-endpoint", options.bind(options.gateways),
                                                  "--records-endpoint", options.bind(options.records),
                                                  "--data-dir", options.dataDirectory(of: "ingest")]
                                  + keyFlags("ingest") + metricsFlags(0) + sharedFlags,
                      environment: only(["ROADSAVE_APPLICATIONS", "ROADSAVE_APPLICATIONS_FILE"], ingestEnvironment)),
            ]
        }

        mutating func run() -> Int32 {
            log.info("starting", ["executable": executable, "basePort": String(options.basePort), "bindHost": options.bindHost,
                                  "platform": options.platform == nil ? "embedded" : "given"])
            if let keys {
                log.info("CurveZMQ keys", ["directory": keys.directory, "made": keys.made.isEmpty ? "none" : keys.made.joined(separator: ",")])
                Console.out("keys \(keys.directory) (\(keys.made.isEmpty ? "reused" : "made")); allow-list \(keys.allowList)")
                for client in UpKeys.clients {
                    Console.out("\(client.name) key \(keys.secretFile(client.name)), server key \(keys.publicFile(client.server))")
                }
            } else {
                // Without --keys: say so (a non-loopback --bind-host makes the services refuse to start).
                Console.err(options.insecure && !CurveServerKeys.isLoopback(options.bind(options.basePort))
                    ? "roadsave up: --insecure: no CurveZMQ keys, every socket is plaintext and unauthenticated, and reachable from other machines"
                    : "roadsave up: no CurveZMQ keys: every socket is plaintext and unauthenticated (loopback only; --keys for keys)")
            }
            for index in children.indices {
                guard start(index) else {
                    stopAll(reason: "a service could not be started")
                    return finishStopping(status: 1)
                }
            }
            Console.out("gateways \(options.connect(options.gateways))")
            Console.out("control \(options.connect(options.control))")
            Console.out("subscribers \(options.connect(options.subscribers))")
            Console.out("catch-up \(options.connect(options.catchUp))")
            Console.out("data \(options.dataDirectory)")
            Console.out("records \(options.connect(options.records)) (internal)")
            Console.out("events \(options.connect(options.events)) (internal)")
            if let port = options.metricsPort {
                let host = ["*", "0.0.0.0"].contains(options.bindHost) ? "127.0.0.1" : options.bindAddress
                Console.out("metrics http://\(host):\(port) (ingest), :\(port + 1) (detection), :\(port + 2) (notifier): "
                            + "/metrics /healthz /readyz")
            }
            if options.bindHost != "127.0.0.1" {
                Console.out("bound on \(options.bindHost), ports \(options.basePort)-\(options.basePort + 5)")
            }
            readySince = MonotonicClock.now()
            while true {
                reap()
                if let failure {
                    stopAll(reason: "a service failed at start")
                    return finishStopping(status: failure)
                }
                if SignalFlag.times > 0 {
                    signalsSeen = SignalFlag.times
                    Console.out("stopping (\(SignalFlag.name(SignalFlag.signal)))")
                    log.info("stopping", ["signal": SignalFlag.name(SignalFlag.signal)])
                    return finishStopping(status: 0)
                }
                restartDue()
                checkReady()
                usleep(50_000)
            }
        }

        /// Spawns child `index`; false if `posix_spawn` failed.
        mutating func start(_ index: Int) -> Bool {
            var child = children[index]
            let result = spawn(executable, child.arguments, environment: child.environment)
            switch result {
            case let .failure(message):
                log.error("cannot start service", ["service": child.name, "error": message])
                Console.err("roadsave up: cannot start \(child.name): \(message)")
                return false
            case let .success(pid):
                child.pid = pid
                child.startedAt = MonotonicClock.now()
                child.starts += 1
                child.restartAt = nil
                let verb = child.starts == 1 ? "started" : "restarted"
                Console.out("\(verb) \(child.name) pid \(pid)")
                log.info(verb, ["service": child.name, "pid": String(pid)])
                children[index] = child
                return true
            }
        }

        /// Collects every child that ended, and decides what happens next.
        mutating func reap() {
            while true {
                var status: Int32 = 0
                let pid = waitpid(-1, &status, WNOHANG)
                if pid < 0 && errno == EINTR { continue }
                guard pid > 0 else { return }
                guard let index = children.firstIndex(where: { $0.pid == pid }) else { continue }
                ended(index, status: status)
            }
        }

        mutating func ended(_ index: Int, status: Int32) {
            var child = children[index]
            let description = Self.describe(status)
            let exitCode: Int32? = status & 0x7f == 0 ? (status >> 8) & 0xff : nil
            child.pid = nil
            child.lastStatus = description
            child.exitedCleanly = exitCode == 0 && !child.killed
            let ranFor = MonotonicClock.now() - child.startedAt
            defer { children[index] = child }
            if stopping || child.stopDeadline != nil {
                log.info("stopped", ["service": child.name, "status": description])
                Console.out("stopped \(child.name) (\(description))")
                return
            }
            // Exiting on its own soon after its first start (a port in use, a bad setting) is a failure to start;
            // being killed (by the OOM killer, by someone testing the supervisor) is a crash like any other.
            if child.starts == 1, exitCode != nil, ranFor < UpCommand.startGrace {
                log.error("service failed at start", ["service": child.name, "status": description])
                Console.err("roadsave up: \(child.name) failed at start (\(description)); see its log above")
                failure = exitCode == 2 ? 2 : 1
                return
            }
            if ranFor >= UpCommand.stableAfter { child.backoff = UpCommand.firstBackoff }
            let pause = child.backoff
            child.backoff = min(UpCommand.maximumBackoff, child.backoff * 2)
            child.restartAt = MonotonicClock.now() + pause
            log.error("service died; restarting", ["service": child.name, "status": description,
                                                   "in": JSONObjectWriter.number(pause, decimals: 1)])
            Console.out("\(child.name) ended unexpectedly (\(description)); restarting in \(JSONObjectWriter.number(pause, decimals: 1)) s")
        }

        mutating func restartDue() {
            let now = MonotonicClock.now()
            for index in children.indices {
                guard children[index].pid == nil, let due = children[index].restartAt, due <= now else { continue }
                if !start(index) {
                    let pause = children[index].backoff
                    children[index].backoff = min(UpCommand.maximumBackoff, pause * 2)
                    children[index].restartAt = now + pause
                }
            }
        }

        /// "ready" once the four public endpoints accept TCP connections.
        mutating func checkReady() {
            guard !ready else { return }
            let ports = [options.gateways, options.control, options.subscribers, options.catchUp]
            guard let probeHost = Self.probeHost(options.bindHost) else {
                ready = true
                Console.out("ready")
                return
            }
            if ports.allSatisfy({ Self.accepts(host: probeHost, port: $0) }) {
                ready = true
                Console.out("ready")
                log.info("ready", ["gateways": options.connect(options.gateways),
                                   "control": options.connect(options.control),
                                   "subscribers": options.connect(options.subscribers),
                                   "catchUp": options.connect(options.catchUp)])
            } else if MonotonicClock.now() - readySince > 30 {
                log.warning("services not accepting connections after 30 s")
                readySince = MonotonicClock.now()
            }
        }

        /// Stops the services in pipeline order; returns the exit status (`status` if all stopped cleanly).
        mutating func finishStopping(status: Int32) -> Int32 {
            stopping = true
            var clean = true
            for name in ["ingest", "detect", "notify"] {
                guard let index = children.firstIndex(where: { $0.name == name }) else { continue }
                children[index].restartAt = nil
                // One that died earlier and waits for its restart has nothing to stop.
                guard let pid = children[index].pid else { continue }
                children[index].stopDeadline = MonotonicClock.now() + UpCommand.stopTimeout
                kill(pid, SIGTERM)
                while children[index].pid != nil {
                    reap()
                    if children[index].pid == nil { break }
                    if SignalFlag.times > signalsSeen {
                        signalsSeen = SignalFlag.times
                        log.warning("second signal: killing the services")
                        Console.out("killing the services (second \(SignalFlag.name(SignalFlag.signal)))")
                        killAll()
                        clean = false
                    } else if MonotonicClock.now() > children[index].stopDeadline! {
                        log.error("service did not stop in time; killing it", ["service": name, "pid": String(pid)])
                        children[index].killed = true
                        kill(pid, SIGKILL)
                        clean = false
                        children[index].stopDeadline = .infinity
                    }
                    usleep(20_000)
                }
                if !children[index].exitedCleanly { clean = false }
            }
            // Anything left (a second signal sent SIGKILL to all): collect it.
            while children.contains(where: { $0.pid != nil }) {
                reap()
                usleep(20_000)
            }
            if status != 0 { return status }
            log.info("stopped", ["clean": String(clean)])
            return clean ? 0 : 1
        }

        func stopAll(reason: String) {
            log.error("stopping every service", ["reason": reason])
        }

        mutating func killAll() {
            for index in children.indices {
                if let pid = children[index].pid {
                    children[index].killed = true
                    kill(pid, SIGKILL)
                }
            }
        }

        static func describe(_ status: Int32) -> String {
            let low = status & 0x7f
            if low == 0 { return "exit \((status >> 8) & 0xff)" }
            if low != 0x7f { return "killed by \(SignalFlag.name(low))" }
            return "status \(status)"
        }

        /// The IPv4 address to probe for a bind host, nil when it cannot be probed (an interface name, IPv6).
        static func probeHost(_ bindHost: String) -> String? {
            if bindHost == "*" || bindHost == "0.0.0.0" { return "127.0.0.1" }
            var address = in_addr()
            return inet_pton(AF_INET, bindHost, &address) == 1 ? bindHost : nil
        }

        /// Whether something accepts TCP connections at host:port (connect, then close at once).
        static func accepts(host: String, port: Int) -> Bool {
            #if canImport(Glibc)
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            #else
            let fd = socket(AF_INET, SOCK_STREAM, 0)
            #endif
            guard fd >= 0 else { return false }
            defer { close(fd) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { return false }
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            return result == 0
        }
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
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)

        let argv: [UnsafeMutablePointer<CChar>?] = ([path.split(separator: "/").last.map(String.init) ?? path] + arguments)
            .map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.sorted { $0.key < $1.key }
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
