import Foundation
import Logging
import Metrics
import RecordCodecs
import ServiceKit
import Storage
import SystemKit
import ZeroMQ

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// `roadsave up`'s supervision: each service a child process, started, watched, restarted by its `RestartPolicy` and
/// stopped in pipeline order.
extension UpCommand {
    /// One supervised service.
    struct Child {
        var name: String
        var arguments: [String]
        var environment: [String: String]
        var pid: pid_t?
        var startedAt = 0.0
        var starts = 0
        /// When it is started again after it ends (`RestartPolicy`, in ServiceKit).
        var restarts = RestartPolicy()
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
        var hangupsSeen: Int32 = 0
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
            let secrets = [
                "ROADSAVE_APPLICATIONS", "ROADSAVE_APPLICATIONS_FILE", "ROADSAVE_WEBHOOK_SECRET",
                "ROADSAVE_WEBHOOK_SECRET_FILE", "ROADSAVE_WEBHOOKS", "ROADSAVE_PLATFORM_URL",
            ]
            func only(_ keep: [String], _ extra: [String: String]) -> [String: String] {
                var result = common
                for key in secrets where !keep.contains(key) { result[key] = nil }
                for (key, value) in extra { result[key] = value }
                return result
            }
            // What every service gets: the log level, --insecure.
            var sharedFlags: [String] = []
            if let level = options.serviceLogLevel { sharedFlags = ["--log-level", level] }
            if options.insecure { sharedFlags.append("--insecure") }
            let keys = UpKeys(directory: options.keysDirectory)
            func keyFlags(_ service: String) -> [String] { options.keys ? keys.arguments(of: service) : [] }
            func metricsFlags(_ offset: Int) -> [String] {
                options.metricsEndpoint(offset).map { ["--metrics-endpoint", $0] } ?? []
            }

            var ingestEnvironment: [String: String] = [:]
            if let applications = options.applications { ingestEnvironment["ROADSAVE_APPLICATIONS"] = applications }
            if let file = options.applicationsFile { ingestEnvironment["ROADSAVE_APPLICATIONS_FILE"] = file }
            var detectEnvironment: [String: String] = [:]
            if let platform = options.platform { detectEnvironment["ROADSAVE_PLATFORM_URL"] = platform }
            var detectArguments = [
                "detect", "--records-endpoint", options.connect(options.records),
                "--control-endpoint", options.bind(options.control),
                "--events-endpoint", options.bind(options.events),
                "--data-dir", options.dataDirectory(of: "detect"),
            ]
            if let settings = options.settings { detectArguments += ["--settings", settings] }
            var notifyEnvironment: [String: String] = [:]
            if let webhooks = options.webhooks { notifyEnvironment["ROADSAVE_WEBHOOKS"] = webhooks }
            if let file = options.webhookSecretFile { notifyEnvironment["ROADSAVE_WEBHOOK_SECRET_FILE"] = file }
            var notifyArguments = [
                "notify", "--events-endpoint", options.connect(options.events),
                "--publish-endpoint", options.bind(options.subscribers),
                "--catch-up-endpoint", options.bind(options.catchUp),
                "--data-dir", options.dataDirectory(of: "notify"),
            ]
            if let ndjson = options.ndjson { notifyArguments += ["--ndjson", ndjson] }

            // Downstream first, so that the earliest events find their subscriber.
            children = [
                Child(
                    name: "notify", arguments: notifyArguments + keyFlags("notify") + metricsFlags(2) + sharedFlags,
                    environment: only(
                        ["ROADSAVE_WEBHOOK_SECRET", "ROADSAVE_WEBHOOK_SECRET_FILE", "ROADSAVE_WEBHOOKS"],
                        notifyEnvironment)),
                Child(
                    name: "detect", arguments: detectArguments + keyFlags("detect") + metricsFlags(1) + sharedFlags,
                    environment: only(["ROADSAVE_PLATFORM_URL"], detectEnvironment)),
                Child(
                    name: "ingest",
                    arguments: [
                        "ingest", "--gateway-endpoint", options.bind(options.gateways),
                        "--records-endpoint", options.bind(options.records),
                        "--data-dir", options.dataDirectory(of: "ingest"),
                    ]
                        + keyFlags("ingest") + metricsFlags(0) + sharedFlags,
                    environment: only(["ROADSAVE_APPLICATIONS", "ROADSAVE_APPLICATIONS_FILE"], ingestEnvironment)),
            ]
        }

        mutating func run() -> Int32 {
            log.info(
                "starting",
                [
                    "executable": executable, "basePort": String(options.basePort), "bindHost": options.bindHost,
                    "platform": options.platform == nil ? "embedded" : "given",
                ])
            if let keys {
                log.info(
                    "CurveZMQ keys",
                    [
                        "directory": keys.directory,
                        "made": keys.made.isEmpty ? "none" : keys.made.joined(separator: ","),
                    ])
                Console.out(
                    "keys \(keys.directory) (\(keys.made.isEmpty ? "reused" : "made")); allow-list \(keys.allowList)")
                for client in UpKeys.clients {
                    Console.out(
                        "\(client.name) key \(keys.secretFile(client.name)), server key \(keys.publicFile(client.server))"
                    )
                }
            } else {
                // Without --keys: say so (a non-loopback --bind-host makes the services refuse to start).
                Console.err(
                    options.insecure && !CurveServerKeys.isLoopback(options.bind(options.basePort))
                        ? "roadsave up: --insecure: no CurveZMQ keys, every socket is plaintext and unauthenticated, and reachable from other machines"
                        : "roadsave up: no CurveZMQ keys: every socket is plaintext and unauthenticated (loopback only; --keys for keys)"
                )
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
                Console.out(
                    "metrics http://\(host):\(port) (ingest), :\(port + 1) (detection), :\(port + 2) (notifier): "
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
                if SignalFlag.hangupTimes > hangupsSeen {
                    hangupsSeen = SignalFlag.hangupTimes
                    reloadAllowLists()
                }
                restartDue()
                checkReady()
                usleep(50_000)
            }
        }

        /// SIGHUP: each running service re-reads its allow-list (its own SIGHUP), so that a key added to or removed
        /// from DIR/keys/allow.txt takes effect without a restart.
        func reloadAllowLists() {
            let running = children.compactMap { child in child.pid.map { (child.name, $0) } }
            for (_, pid) in running { kill(pid, SIGHUP) }
            Console.out("reloading allow-lists (SIGHUP to \(running.map(\.0).joined(separator: ", ")))")
            log.info("reloading allow-lists", ["services": running.map(\.0).joined(separator: ",")])
        }

        /// Spawns child `index`; false if `posix_spawn` failed.
        mutating func start(_ index: Int) -> Bool {
            var child = children[index]
            let result = spawn(executable, child.arguments, environment: child.environment)
            switch result {
            case .failure(let message):
                log.error("cannot start service", ["service": child.name, "error": message])
                Console.err("roadsave up: cannot start \(child.name): \(message)")
                return false
            case .success(let pid):
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
            switch child.restarts.ended(exitCode: exitCode, ranFor: ranFor, starts: child.starts) {
            case .failedAtStart(let exitCode):
                log.error("service failed at start", ["service": child.name, "status": description])
                Console.err("roadsave up: \(child.name) failed at start (\(description)); see its log above")
                failure = exitCode == 2 ? 2 : 1
                return
            case .restart(after: let pause):
                child.restartAt = MonotonicClock.now() + pause
                log.error(
                    "service died; restarting",
                    [
                        "service": child.name, "status": description,
                        "in": JSONObjectWriter.number(pause, decimals: 1),
                    ])
                Console.out(
                    "\(child.name) ended unexpectedly (\(description)); restarting in \(JSONObjectWriter.number(pause, decimals: 1)) s"
                )
            }
        }

        mutating func restartDue() {
            let now = MonotonicClock.now()
            for index in children.indices {
                guard children[index].pid == nil, let due = children[index].restartAt, due <= now else { continue }
                if !start(index) { children[index].restartAt = now + children[index].restarts.spawnFailed() }
            }
        }

        /// "ready" once the four public endpoints listen: seen in the kernel's socket tables where it can be
        /// (`ListeningPorts`: no connection, so no service logs a failed handshake), else by connecting.
        mutating func checkReady() {
            guard !ready else { return }
            let ports = [options.gateways, options.control, options.subscribers, options.catchUp]
            let listening: Bool
            if let open = ListeningPorts.current() {
                listening = ports.allSatisfy(open.contains)
            } else if let probeHost = ListeningPorts.probeHost(options.bindHost) {
                listening = ports.allSatisfy { ListeningPorts.accepts(host: probeHost, port: $0) }
            } else {
                ready = true
                Console.out("ready")
                return
            }
            if listening {
                ready = true
                Console.out("ready")
                log.info(
                    "ready",
                    [
                        "gateways": options.connect(options.gateways),
                        "control": options.connect(options.control),
                        "subscribers": options.connect(options.subscribers),
                        "catchUp": options.connect(options.catchUp),
                    ])
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
    }
}
