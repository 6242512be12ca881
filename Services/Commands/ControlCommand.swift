import CommandSettings
import Foundation
import Logging
import RecordCodecs
import RoadSaveModel
import ServiceKit
import Wire
import ZeroMQ

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// `roadsave ctl COMMAND`: one control command to detection (PROTOCOL §7, control: REQ → ROUTER, one JSON frame
/// each way). Synchronous: a REQ socket with send and receive timeouts and linger 0, closed on timeout (a REQ that
/// got no reply cannot send again).
public enum ControlCommand {
    enum Command: String, CaseIterable {
        case configure, startMonitoring, stopMonitoring, setAutoTripDetection, setDetectionMode, raiseTestCrash
        /// An operator command for the detection shard, not an application's devices: takes no --app or --user.
        case acknowledgeJournalGaps
    }

    public static let usage = """
        Usage: roadsave ctl COMMAND --app ID [--user ID] [options]
               roadsave ctl acknowledgeJournalGaps [options]

        Sends one control command to the detection service and prints its JSON reply on standard output.
        COMMAND is one of:
          configure              configure the device(s): --mode (default all), --auto-trips (default true)
          startMonitoring        start monitoring (fetches settings from the platform)
          stopMonitoring         stop monitoring (a trip in progress ends)
          setAutoTripDetection   --enabled true|false: resume or pause trip detection (false ends a trip in progress)
          setDetectionMode       --mode all|crashOnly|tripOnly|disabled
          raiseTestCrash         raise a test crash (crashDetected with isTest true) through the normal path;
                                 --follow-up asks for its crashFollowUp too (crashFollowUpDelay later)
          acknowledgeJournalGaps say that the journal gaps detection reported (records deleted by ingest's retention
                                 before it read them) are known: /readyz no longer fails for them. No --app; needs
                                 an operator key listed for every application

        Options:
          --app ID            applicationID (a credential: prefer the environment variable ROADSAVE_APP; never echoed)
          --user ID           clientUserID; without it the command addresses every known device of the application
          --mode M            all, crashOnly, tripOnly or disabled (configure, setDetectionMode)
          --auto-trips B      true or false: shouldAutoDetectTrips (configure)
          --enabled B         true or false (setAutoTripDetection)
          --follow-up         send the test crash's crashFollowUp as for a real crash (raiseTestCrash)
          --endpoint URL      detection's control endpoint (default tcp://127.0.0.1:5552)
          --timeout S         seconds to wait for the reply, 0.05 to 3600 (default 10)
          --log-level L       debug, info, warning or error (default warning)
        \(ClientCurveKeys.help(service: "detection"))
        \(ClientLinkTimings.help)
          -h, --help          this text

        Exit status: 0 when the reply says "ok": true, 1 when it says false (the error code is in the printed reply)
        or no reply came within the timeout, 2 for bad options.
        """

    public static func run(
        _ arguments: [String],
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> Int32 {
        // No signal flag: ctl waits in one receive with a timeout, and SIGINT or SIGTERM ends it at once, as by default.
        ClientCommand.run(
            "ctl", usage: usage, signals: nil, options: { try Options(arguments, environment: environment) }
        ) {
            (options: Options, log: Log) throws(CommandExit) -> Int32 in
            try answer(exchange(options.request, options: options, log: log), options: options, log: log)
        }
    }

    /// Prints the reply; its "ok" is the exit status (a refusal is also named on standard error).
    static func answer(_ reply: [UInt8], options: Options, log: Log) -> Int32 {
        var text = String(decoding: reply, as: UTF8.self)
        while text.last?.isNewline == true { text.removeLast() }
        Console.out(text)
        guard let value = try? JSONParser.parse(reply), case .object = value else {
            return Console.fail("ctl", CommandExit(1, "the reply is not a JSON object"))
        }
        if case .bool(true)? = value["ok"] {
            log.info(
                "done",
                ["command": options.command.rawValue, "app": options.app.isEmpty ? "*" : Secret.mask(options.app)])
            return 0
        }
        var error = "unknown error"
        if case .string(let code)? = value["error"] { error = code }
        var message = ""
        if case .string(let text)? = value["message"] {
            // Detection's messages may start with the code already ("notConfigured: call configure …").
            message =
                ": "
                + (text.hasPrefix(error + ":")
                    ? String(text.dropFirst(error.count + 1)).trimmingCharacters(in: .whitespaces) : text)
        }
        Console.err("roadsave ctl: \(options.command.rawValue) refused: \(error)\(message)")
        return 1
    }

    struct Options: ClientCommandOptions {
        var help = false
        var command = Command.configure
        var app = ""
        var user: String?
        var mode: String?
        var autoTrips: Bool?
        var enabled: Bool?
        var followUp = false
        var endpoint = "tcp://127.0.0.1:5552"
        var timeout = 10.0
        var timeoutMilliseconds: Int32 = 10_000
        var logLevel = Log.Level.warning
        var keys: ClientCurveKeys?
        var link = LinkTimings.standard

        init(_ arguments: [String], environment: [String: String]) throws {
            let parsed = try CommandLineOptions(
                arguments,
                valued: ([
                    "--app", "--user", "--mode", "--auto-trips", "--enabled", "--endpoint", "--timeout",
                    "--log-level",
                ] as Set<String>).union(ClientCurveKeys.flags).union(ClientLinkTimings.flags),
                flags: CommandLineOptions.helpSwitches.union(["--follow-up"]))
            if parsed.asksForHelp {
                help = true
                return
            }
            let names = Command.allCases.map(\.rawValue).joined(separator: ", ")
            guard let name = parsed.positional.first else {
                throw CommandExit.usage("COMMAND missing; one of \(names)")
            }
            guard let command = Command(rawValue: name) else {
                throw CommandExit.usage("unknown command \"\(name)\"; expected one of \(names)")
            }
            guard parsed.positional.count == 1 else {
                throw CommandExit.usage("unexpected argument \"\(parsed.positional[1])\" (one command at a time)")
            }
            self.command = command
            if command == .acknowledgeJournalGaps {
                // Of the shard, not of an application (ROADSAVE_APP, set for other commands, is not an error).
                for flag in ["--app", "--user", "--mode", "--auto-trips", "--enabled"] where parsed.string(flag) != nil
                {
                    throw CommandExit.usage(
                        "\(flag) does not apply to acknowledgeJournalGaps (it concerns every application)")
                }
            } else {
                guard let app = parsed.string("--app") ?? environment["ROADSAVE_APP"], !app.isEmpty else {
                    throw CommandExit.usage("--app missing: the applicationID (or set ROADSAVE_APP)")
                }
                self.app = app
            }
            user = parsed.string("--user")
            if user?.isEmpty == true { throw CommandExit.usage("--user needs a non-empty ID") }
            if let text = parsed.string("--mode") {
                guard CrashDetectionMode(rawValue: text) != nil else {
                    throw CommandExit.usage(
                        "--mode must be one of \(CrashDetectionMode.allCases.map(\.rawValue).joined(separator: ", ")), got \"\(text)\""
                    )
                }
                guard command == .configure || command == .setDetectionMode else {
                    throw CommandExit.usage("--mode applies to configure and setDetectionMode, not \(command.rawValue)")
                }
                mode = text
            }
            if let text = parsed.string("--auto-trips") {
                guard command == .configure else {
                    throw CommandExit.usage("--auto-trips applies to configure, not \(command.rawValue)")
                }
                autoTrips = try Self.bool(text, flag: "--auto-trips")
            }
            if let text = parsed.string("--enabled") {
                guard command == .setAutoTripDetection else {
                    throw CommandExit.usage("--enabled applies to setAutoTripDetection, not \(command.rawValue)")
                }
                enabled = try Self.bool(text, flag: "--enabled")
            }
            if parsed.has("--follow-up") {
                guard command == .raiseTestCrash else {
                    throw CommandExit.usage("--follow-up applies to raiseTestCrash, not \(command.rawValue)")
                }
                followUp = true
            }
            if command == .setDetectionMode, mode == nil {
                throw CommandExit.usage("setDetectionMode needs --mode all|crashOnly|tripOnly|disabled")
            }
            if command == .setAutoTripDetection, enabled == nil {
                throw CommandExit.usage("setAutoTripDetection needs --enabled true|false")
            }
            if let text = parsed.string("--endpoint") {
                endpoint = try validateConnectEndpoint(text, flag: "--endpoint")
            }
            (timeout, timeoutMilliseconds) = try parsed.milliseconds("--timeout", default: 10, range: 0.05...3600)
            if let text = parsed.string("--log-level") { logLevel = try LogLevelSetting.parse(text) }
            keys = try ClientCurveKeys.parse(parsed)
            link = try ClientLinkTimings.parse(parsed)
        }

        static func bool(_ text: String, flag: String) throws(CommandExit) -> Bool {
            switch text.lowercased() {
            case "true", "1", "yes", "on": return true
            case "false", "0", "no", "off": return false
            default: throw .usage("\(flag) must be true or false, got \"\(text)\"")
            }
        }

        /// The PROTOCOL §7 request: `{"command", "app", "user", …}`.
        var request: String {
            var writer = JSONObjectWriter()
            writer.add("command", command.rawValue)
            guard command != .acknowledgeJournalGaps else { return writer.finish() }
            writer.add("app", app)
            if let user { writer.add("user", user) }
            switch command {
            case .configure:
                writer.add("detectionMode", mode ?? CrashDetectionMode.all.rawValue)
                writer.add("shouldAutoDetectTrips", autoTrips ?? true)
            case .setDetectionMode:
                writer.add("mode", mode ?? CrashDetectionMode.all.rawValue)
            case .setAutoTripDetection:
                writer.add("enabled", enabled ?? true)
            case .raiseTestCrash:
                if followUp { writer.add("followUp", true) }
            case .startMonitoring, .stopMonitoring, .acknowledgeJournalGaps:
                break
            }
            return writer.finish()
        }
    }

    /// Sends the request and waits for the reply; the REQ socket is closed either way.
    static func exchange(_ request: String, options: Options, log: Log) throws(CommandExit) -> [UInt8] {
        let context: ZMQContext
        do {
            context = try ZMQContext()
        } catch {
            throw CommandExit(1, "\(error)")
        }
        defer { context.terminate() }
        let socket: ZMQSocket
        do {
            socket = try ZMQSocket(context, .req, linger: 0, sendTimeout: options.timeoutMilliseconds)
            try socket.setReceiveTimeout(milliseconds: options.timeoutMilliseconds)
            try options.keys?.apply(to: socket)
            try socket.setLinkTimings(options.link)
            try socket.connect(options.endpoint)
        } catch {
            throw CommandExit(1, "cannot connect to detection at \(options.endpoint): \(error)")
        }
        defer { socket.close() }
        log.debug(
            "request",
            [
                "command": options.command.rawValue, "app": options.app.isEmpty ? "*" : Secret.mask(options.app),
                "user": options.user ?? "(every device)", "endpoint": options.endpoint,
            ])
        let noReply = CommandExit(
            1, "no reply from detection at \(options.endpoint) within \(JSONText.number(options.timeout)) s")
        do {
            guard try socket.send([Array(request.utf8)]) else { throw noReply }
            guard let reply = try socket.receive() else { throw noReply }
            guard let body = reply.last else {
                throw CommandExit(1, "empty reply from detection at \(options.endpoint)")
            }
            return body
        } catch let error as CommandExit {
            throw error
        } catch {
            throw CommandExit(1, "control exchange with \(options.endpoint) failed: \(error)")
        }
    }
}
