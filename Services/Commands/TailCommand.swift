#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import RoadSaveModel
import ServiceKit
import Wire
import ZeroMQ

/// `roadsave tail`: subscribes to the notifier (CONTRACT §7, events: frames `[<event>.<app>.<user>, JSON]`) and
/// prints each event body as one NDJSON line. Synchronous on the calling thread: `zmq_poll` in steps of at most
/// 100 ms, between which the SIGINT/SIGTERM flag and the deadline are checked.
public enum TailCommand {
    /// The events the notifier publishes (CONTRACT §3).
    static let eventNames = ["tripDidStart", "tripDidEnd", "crashDetected"]

    public static let usage = """
        Usage: roadsave tail [options]

        Subscribes to the notifier's events (ZeroMQ SUB; topics <event>.<app>.<user>) and prints each event's JSON
        as one line on standard output, as it comes (NDJSON). Events published before tail connected are not seen.

        Options:
          --endpoint URL      the notifier's subscriber endpoint (default tcp://127.0.0.1:5554)
          --event NAME        only this event: tripDidStart, tripDidEnd or crashDetected; repeat it (or separate
                              names with commas) for several (default: every event)
          --app ID            only the devices of this application (a credential: never echoed)
          --user ID           only this clientUserID
          --topic PREFIX      subscribe to a raw topic prefix instead (not with --event, --app or --user)
          --count N           exit after N events
          --timeout S         exit (status 0) after S seconds
          --log-level L       debug, info, warning or error (default warning)
          -h, --help          this text

        SIGINT and SIGTERM end it cleanly (exit 0). Exit status 1 when the subscription fails, 2 for bad options.
        """

    public static func run(_ arguments: [String]) -> Int32 {
        let options: Options
        do {
            options = try Options(arguments)
        } catch {
            return Console.fail("tail", error)
        }
        if options.help {
            print(usage)
            return 0
        }
        SignalFlag.install()
        signal(SIGPIPE, SIG_IGN)
        let log = Log(category: "tail", minimumLevel: options.logLevel)
        do {
            try follow(options, log: log)
            return 0
        } catch {
            return Console.fail("tail", error)
        }
    }

    struct Options {
        var help = false
        var endpoint = "tcp://127.0.0.1:5554"
        var events: [String] = []
        var app: String?
        var user: String?
        var topic: String?
        var count: Int?
        var timeout: Double?
        var logLevel = Log.Level.warning

        init(_ arguments: [String]) throws(CommandExit) {
            // --event may be repeated, which the shared parser does not keep: take those out first.
            var rest: [String] = []
            var index = 0
            while index < arguments.count {
                let argument = arguments[index]
                index += 1
                if argument == "--" {
                    rest += arguments[(index - 1)...]
                    break
                }
                if argument == "--event" {
                    guard index < arguments.count else { throw .usage("--event needs a value") }
                    events += arguments[index].split(separator: ",").map(String.init)
                    index += 1
                } else if argument.hasPrefix("--event=") {
                    events += argument.dropFirst("--event=".count).split(separator: ",").map(String.init)
                } else {
                    rest.append(argument)
                }
            }
            do {
                let parsed = try CommandLineOptions(
                    rest, valued: ["--endpoint", "--app", "--user", "--topic", "--count", "--timeout", "--log-level"],
                    flags: ["--help", "-h"])
                if parsed.has("--help") || parsed.has("-h") {
                    help = true
                    return
                }
                guard parsed.positional.isEmpty else { throw CommandExit.usage("unexpected argument \"\(parsed.positional[0])\"") }
                if let text = parsed.string("--endpoint") {
                    endpoint = try validateConnectEndpoint(text, flag: "--endpoint")
                }
                for name in events where !TailCommand.eventNames.contains(name) {
                    throw CommandExit.usage("--event: unknown event \"\(name)\"; expected \(TailCommand.eventNames.joined(separator: ", "))")
                }
                app = parsed.string("--app")
                user = parsed.string("--user")
                if app?.isEmpty == true { throw CommandExit.usage("--app needs a non-empty ID") }
                if user?.isEmpty == true { throw CommandExit.usage("--user needs a non-empty ID") }
                topic = parsed.string("--topic")
                if topic != nil, !events.isEmpty || app != nil || user != nil {
                    throw CommandExit.usage("--topic is a raw prefix: use it instead of --event, --app and --user, not with them")
                }
                count = try parsed.integer("--count", range: 1...Int(Int32.max))
                timeout = try parsed.double("--timeout", range: 0.001...31_536_000)
                if let text = parsed.string("--log-level") { logLevel = try LogLevelSetting.parse(text) }
            } catch let error as CommandLineOptions.UsageError {
                throw .usage(error.message)
            } catch let error as CommandExit {
                throw error
            } catch {
                throw .usage("\(error)")
            }
        }

        /// The subscription prefixes; ZeroMQ matches prefixes only, so `accepts` checks the whole topic.
        var prefixes: [String] {
            if let topic { return [topic] }
            let names = events.isEmpty ? TailCommand.eventNames : events
            return names.map { name in
                guard let app else { return name + "." }
                guard let user else { return "\(name).\(app)." }
                return "\(name).\(app).\(user)"
            }
        }

        /// Whether a received topic is one asked for (`app-1` must not take `app-10`, `user-9` not `user-90`).
        func accepts(_ topic: String) -> Bool {
            if let prefix = self.topic { return topic.hasPrefix(prefix) }
            let names = events.isEmpty ? TailCommand.eventNames : events
            return names.contains { name in
                switch (app, user) {
                case let (app?, user?): topic == "\(name).\(app).\(user)"
                case let (app?, nil): topic.hasPrefix("\(name).\(app).")
                case let (nil, user?): topic.hasPrefix(name + ".") && topic.hasSuffix("." + user)
                case (nil, nil): topic.hasPrefix(name + ".")
                }
            }
        }
    }

    static func follow(_ options: Options, log: Log) throws(CommandExit) {
        let context: ZMQContext
        let socket: ZMQSocket
        do {
            context = try ZMQContext()
            socket = try ZMQSocket(context, .sub, linger: 0)
            for prefix in options.prefixes { try socket.subscribe(prefix) }
            try socket.connect(options.endpoint)
        } catch {
            throw CommandExit(1, "cannot subscribe to \(options.endpoint): \(error)")
        }
        defer {
            socket.close()
            context.terminate()
        }
        log.info("subscribed", ["endpoint": options.endpoint,
                                "topics": options.topic == nil ? (options.events.isEmpty ? "every event" : options.events.joined(separator: ","))
                                    : "raw prefix",
                                "user": options.user ?? "any"])
        let deadline = options.timeout.map { MonotonicClock.now() + $0 }
        var printed = 0
        while true {
            if SignalFlag.signal != 0 {
                log.info("stopping", ["signal": SignalFlag.name(SignalFlag.signal), "events": String(printed)])
                return
            }
            var wait = 0.1
            if let deadline {
                let left = deadline - MonotonicClock.now()
                if left <= 0 {
                    if let count = options.count {
                        log.info("timeout before the count was reached", ["events": String(printed), "count": String(count)])
                    }
                    return
                }
                wait = min(wait, left)
            }
            let ready: [ZMQPollEvents]
            do {
                ready = try ZMQPoller.poll([ZMQPollItem(socket)], timeoutMilliseconds: max(1, Int((wait * 1000).rounded(.up))))
            } catch {
                throw CommandExit(1, "subscription to \(options.endpoint) failed: \(error)")
            }
            guard ready.first?.contains(.readable) == true else { continue }
            while let message = try receive(socket, endpoint: options.endpoint) {
                guard message.count >= 2 else {
                    log.warning("message that is not [topic, body] skipped", ["frames": String(message.count)])
                    continue
                }
                let topic = String(decoding: message[0], as: UTF8.self)
                guard options.accepts(topic) else { continue }
                guard Console.out(line(message[message.count - 1])) else {
                    // Standard output was closed (`tail | head -1`): nobody is reading any more.
                    return
                }
                printed += 1
                if let count = options.count, printed >= count { return }
            }
        }
    }

    private static func receive(_ socket: ZMQSocket, endpoint: String) throws(CommandExit) -> [[UInt8]]? {
        do {
            return try socket.receive(dontWait: true)
        } catch {
            throw CommandExit(1, "subscription to \(endpoint) failed: \(error)")
        }
    }

    /// The body as one NDJSON line: as published (compact JSON), or re-written compactly if it spans lines.
    static func line(_ body: [UInt8]) -> String {
        var bytes = body[...]
        while let last = bytes.last, last == 0x0A || last == 0x0D || last == 0x20 { bytes = bytes.dropLast() }
        if bytes.contains(0x0A) || bytes.contains(0x0D), let value = try? JSONParser.parse(Array(bytes)) {
            return JSONText.encode(value)
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
