#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import NotifierService
import RoadSaveModel
import ServiceKit
import SystemKit
import Wire
import ZeroMQ

/// `roadsave tail`: subscribes to the notifier (PROTOCOL §7, events: frames `[<event>.<app>.<user>, JSON, position]`)
/// and prints each event body as one NDJSON line. With `--since` it first catches up from the notifier's catch-up
/// endpoint (`CatchUpRequest`), having subscribed before, and drops live positions already printed: no gap, no
/// duplicate. Synchronous on the calling thread: `zmq_poll` in steps of at most 100 ms, between which the
/// SIGINT/SIGTERM flag and the deadline are checked.
public enum TailCommand {
    /// The events the notifier publishes (PROTOCOL §3).
    static let eventNames = ["tripDidStart", "tripDidEnd", "crashDetected"]

    public static let usage = """
        Usage: roadsave tail [options]

        Subscribes to the notifier's events (ZeroMQ SUB; topics <event>.<app>.<user>) and prints each event's JSON
        as one line on standard output, as it comes (NDJSON). Without --since, events published before tail
        connected are not seen. Each event carries its position in the notifier's stream; a position seen already
        (the notifier publishes again what it was not sure it had published before a crash) is not printed twice.

        Options:
          --endpoint URL      the notifier's subscriber endpoint (default tcp://127.0.0.1:5554)
          --since P|EVENTID   first print the events after position P (0: every event kept) or after the event with
                              this eventID, from the notifier's catch-up endpoint, then the live ones: no gap, no
                              duplicate. Without filters, a jump in the live positions (a notifier restart, a full
                              queue) is filled from the catch-up endpoint too. Events are kept --retention-age
                              (7 days by default) once delivered; older positions are an error
          --catch-up-endpoint URL
                              the notifier's catch-up endpoint (default tcp://127.0.0.1:5555)
          --via-catch-up      follow live from the catch-up endpoint alone, never subscribing: long-polls (waitMs)
                              from the position reached, from --since or else from the newest event now. Events in
                              order, no gap, no duplicate, each within a moment of the notifier storing it. What a
                              subscriber key limited to applications uses where the notifier's libzmq is older than
                              4.3.5 (its live socket refuses such keys); works with any key and any libzmq
          --show-position     print {"position":P,"event":{…}} per line instead of the bare event, so that a script
                              can resume with --since P (the last position it handled)
          --event NAME        only this event: tripDidStart, tripDidEnd or crashDetected; repeat it (or separate
                              names with commas) for several (default: every event)
          --app ID            only the devices of this application (a credential: never echoed)
          --user ID           only this clientUserID
          --topic PREFIX      subscribe to a raw topic prefix instead (not with --event, --app or --user)
          --count N           exit after N events
          --timeout S         exit (status 0) after S seconds
          --log-level L       debug, info, warning or error (default warning)
        \(ClientCurveKeys.help(service: "the notifier"))
                              (the same keys for the subscriber and the catch-up endpoint)
          -h, --help          this text

        SIGINT and SIGTERM end it cleanly (exit 0). Exit status 1 when the subscription or the catch-up fails (an
        unknown eventID, a position older than the retention window), 2 for bad options.
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
        } catch where error.status == 0 {
            return 0 // a signal during a catch-up request
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
        var since: CatchUpRequest.Start?
        var catchUpEndpoint = "tcp://127.0.0.1:5555"
        var showPosition = false
        var viaCatchUp = false
        var keys: ClientCurveKeys?

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
                    rest, valued: (["--endpoint", "--app", "--user", "--topic", "--count", "--timeout", "--log-level", "--since",
                                   "--catch-up-endpoint"] as Set<String>).union(ClientCurveKeys.flags),
                    flags: ["--help", "-h", "--show-position", "--via-catch-up"])
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
                if let text = parsed.string("--since") {
                    if let position = UInt64(text) {
                        since = .position(position)
                    } else if !text.isEmpty, text.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" }) {
                        since = .eventID(text)
                    } else {
                        throw CommandExit.usage("--since needs a position (a whole number) or an eventID, got \"\(text)\"")
                    }
                }
                if let text = parsed.string("--catch-up-endpoint") {
                    catchUpEndpoint = try validateConnectEndpoint(text, flag: "--catch-up-endpoint")
                }
                showPosition = parsed.has("--show-position")
                viaCatchUp = parsed.has("--via-catch-up")
                keys = try ClientCurveKeys.parse(parsed)
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

        /// Whether every event is asked for (then the live positions have no jumps unless something was missed).
        var takesEverything: Bool { topic == nil && events.isEmpty && app == nil && user == nil }

        /// The catch-up prefix: the subscription's, when there is one (other filters are applied by `accepts`).
        var catchUpPrefix: String? {
            prefixes.count == 1 ? prefixes[0] : nil
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
        if options.viaCatchUp { return try followViaCatchUp(options, log: log) }
        let context: ZMQContext
        let socket: ZMQSocket
        do {
            context = try ZMQContext()
            socket = try ZMQSocket(context, .sub, linger: 0)
            // While catching up, live events wait in the socket: none may be dropped for a full queue.
            if options.since != nil { try socket.setReceiveHighWaterMark(0) }
            for prefix in options.prefixes { try socket.subscribe(prefix) }
            try options.keys?.apply(to: socket)
            try socket.connect(options.endpoint)
        } catch {
            throw CommandExit(1, "cannot subscribe to \(options.endpoint): \(error)")
        }
        var catchUp: CatchUpClient?
        defer {
            catchUp?.close()
            socket.close()
            context.terminate()
        }
        log.info("subscribed", ["endpoint": options.endpoint,
                                "topics": options.topic == nil ? (options.events.isEmpty ? "every event" : options.events.joined(separator: ","))
                                    : "raw prefix",
                                "user": options.user ?? "any"])
        let deadline = options.timeout.map { MonotonicClock.now() + $0 }
        var printer = Printer(options: options)
        if let since = options.since {
            do {
                catchUp = try CatchUpClient(context: context, endpoint: options.catchUpEndpoint, keys: options.keys)
            } catch {
                throw CommandExit(1, "cannot connect to the catch-up endpoint \(options.catchUpEndpoint): \(error)")
            }
            // Subscribed first: whatever is published from now on waits in the socket while the past is read.
            guard try catchUp!.read(after: since, before: nil, into: &printer, options: options, log: log) else { return }
        }
        var firstLive = true
        while true {
            guard let wait = waitOrStop(upTo: 0.1, deadline: deadline, printer: printer, options: options, log: log) else {
                return
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
                let position = message.count >= 3 ? UInt64(String(decoding: message[2], as: UTF8.self)) : nil
                if let position {
                    if let seen = printer.seen, position <= seen { continue }
                    // A jump: events between may have been missed (published before the subscription took effect,
                    // or lost with a notifier that crashed): the catch-up endpoint has them.
                    if let catchUp, let seen = printer.seen, position > seen + 1, firstLive || options.takesEverything {
                        guard try catchUp.read(after: .position(seen), before: position, into: &printer, options: options,
                                               log: log) else { return }
                    }
                    firstLive = false
                }
                guard options.accepts(topic) else {
                    if let position { printer.skip(position) }
                    continue
                }
                guard printer.print(position: position, body: line(message[1])) else { return }
            }
        }
    }

    /// `--via-catch-up`: catch-up long-polls, one after the other, each from the position the last one reached.
    static func followViaCatchUp(_ options: Options, log: Log) throws(CommandExit) {
        let context: ZMQContext
        let catchUp: CatchUpClient
        do {
            context = try ZMQContext()
            catchUp = try CatchUpClient(context: context, endpoint: options.catchUpEndpoint, keys: options.keys)
        } catch {
            throw CommandExit(1, "cannot connect to the catch-up endpoint \(options.catchUpEndpoint): \(error)")
        }
        defer {
            catchUp.close()
            context.terminate()
        }
        let deadline = options.timeout.map { MonotonicClock.now() + $0 }
        var printer = Printer(options: options)
        var start: CatchUpRequest.Start
        if let since = options.since {
            start = since
        } else {
            // From now: nothing stored before tail started is printed.
            let head = try catchUp.head()
            printer.skip(head)
            start = .position(head)
        }
        log.info("following by catch-up", ["endpoint": options.catchUpEndpoint, "after": "\(start)"])
        while true {
            guard let wait = waitOrStop(upTo: Double(CatchUpClient.longPollMilliseconds) / 1000, deadline: deadline,
                                        printer: printer, options: options, log: log) else { return }
            guard try catchUp.read(after: start, before: nil, into: &printer, options: options, log: log,
                                   waitMilliseconds: max(1, Int((wait * 1000).rounded(.up)))) else { return }
            start = .position(printer.seen ?? 0)
        }
    }

    /// How long the next wait may be (`maximum`, less when the deadline is nearer), or nil when tail must stop: a
    /// signal came or the --timeout deadline has passed (each logged). Both ways of following ask it every round.
    static func waitOrStop(upTo maximum: Double, deadline: Double?, printer: Printer, options: Options,
                           log: Log) -> Double? {
        if SignalFlag.signal != 0 {
            log.info("stopping", ["signal": SignalFlag.name(SignalFlag.signal), "events": String(printer.printed)])
            return nil
        }
        guard let deadline else { return maximum }
        let left = deadline - MonotonicClock.now()
        if left <= 0 {
            if let count = options.count {
                log.info("timeout before the count was reached", ["events": String(printer.printed), "count": String(count)])
            }
            return nil
        }
        return min(maximum, left)
    }

    /// What has been printed: the count, and the highest position printed or passed over.
    struct Printer {
        let options: Options
        var printed = 0
        var seen: UInt64?

        /// Prints one event; false when tail should end (standard output closed, or the count reached).
        mutating func print(position: UInt64?, body: String) -> Bool {
            if let position { skip(position) }
            let text = options.showPosition ? "{\"position\":\(position.map(String.init) ?? "null"),\"event\":\(body)}" : body
            // Standard output closed (`tail | head -1`): nobody is reading any more.
            guard Console.out(text) else { return false }
            printed += 1
            if let count = options.count, printed >= count { return false }
            return true
        }

        mutating func skip(_ position: UInt64) {
            seen = max(seen ?? 0, position)
        }
    }

    /// A DEALER to the notifier's catch-up endpoint, one request at a time.
    final class CatchUpClient {
        let endpoint: String
        private let socket: ZMQSocket
        /// Seconds to wait for one answer (besides the long-poll's own wait).
        static let patience = 10.0
        /// The wait of each `--via-catch-up` long-poll.
        static let longPollMilliseconds = 25_000

        init(context: ZMQContext, endpoint: String, keys: ClientCurveKeys?) throws {
            self.endpoint = endpoint
            socket = try ZMQSocket(context, .dealer, linger: 0)
            try keys?.apply(to: socket)
            try socket.connect(endpoint)
        }

        func close() {
            socket.close()
        }

        /// Prints the events after `start` (and before `before`, when given), page by page, until the reply reaches
        /// the head (or `before`). False when tail should end (a signal, the count reached, standard output closed).
        /// With `waitMilliseconds`, each request is a long-poll: a reply with nothing new comes when the wait ends.
        func read(after start: CatchUpRequest.Start, before: UInt64?, into printer: inout Printer, options: Options,
                  log: Log, waitMilliseconds: Int? = nil) throws(CommandExit) -> Bool {
            var start = start
            while true {
                let reply = try request(CatchUpRequest(start: start, prefix: options.catchUpPrefix,
                                                       waitMilliseconds: waitMilliseconds))
                for entry in reply.events {
                    if let before, entry.position >= before { return true }
                    if let seen = printer.seen, entry.position <= seen { continue }
                    guard options.accepts(entry.topic) else {
                        printer.skip(entry.position)
                        continue
                    }
                    guard printer.print(position: entry.position, body: JSONText.encode(entry.event)) else { return false }
                }
                // Everything up to `next` was examined.
                if let before { printer.skip(min(reply.next, before - 1)) } else { printer.skip(reply.next) }
                log.debug("caught up", ["to": String(reply.next), "head": String(reply.head)])
                if reply.next >= reply.head || (before.map { reply.next >= $0 - 1 } ?? false) { return true }
                start = .position(reply.next)
                if SignalFlag.signal != 0 { return false }
            }
        }

        /// The newest position in the notifier's stream now.
        func head() throws(CommandExit) -> UInt64 {
            try request(CatchUpRequest(start: .position(0), max: 1)).head
        }

        private func request(_ request: CatchUpRequest) throws(CommandExit) -> CatchUpReply {
            do {
                // The empty delimiter, as a REQ socket sends it.
                _ = try socket.send([[], request.json()])
                let deadline = MonotonicClock.now() + Self.patience + Double(request.waitMilliseconds ?? 0) / 1000
                while MonotonicClock.now() < deadline {
                    if SignalFlag.signal != 0 { throw CommandExit(0, "") }
                    let ready = try ZMQPoller.poll([ZMQPollItem(socket)], timeoutMilliseconds: 100)
                    guard ready.first?.contains(.readable) == true, let frames = try socket.receive(dontWait: true),
                          let last = frames.last else { continue }
                    return try CatchUpReply(json: last)
                }
            } catch let exit as CommandExit {
                throw exit
            } catch let problem as CatchUpRequest.Problem {
                throw CommandExit(1, "catch-up from \(endpoint): \(problem.message)")
            } catch {
                throw CommandExit(1, "catch-up from \(endpoint) failed: \(error)")
            }
            throw CommandExit(1, "no answer from the catch-up endpoint \(endpoint) within "
                              + "\(Int(Self.patience) + (request.waitMilliseconds ?? 0) / 1000) s")
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
