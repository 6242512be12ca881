import Logging
import NotifierService
import RecordCodecs
import RoadSaveModel
import ServiceKit
import SystemKit
import Wire
import ZeroMQ

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// `roadsave tail`: subscribes to the notifier (PROTOCOL §7, events: frames `[<event>.<app>.<user>, JSON, position]`)
/// and prints each event body as one NDJSON line. With `--since` it first catches up from the notifier's catch-up
/// endpoint (`CatchUpRequest`), having subscribed before, and drops live positions already printed: no gap, no
/// duplicate. On every reconnect it catches up the same way (`ReconnectCatchUp`). Synchronous on the calling
/// thread: `zmq_poll` in steps of at most 100 ms, between which the SIGINT/SIGTERM flag and the deadline are checked.
public enum TailCommand {
    /// The events the notifier publishes (PROTOCOL §3).
    static let eventNames = RoadSaveEvent.names

    public static let usage = """
        Usage: roadsave tail [options]

        Subscribes to the notifier's events (ZeroMQ SUB; topics <event>.<app>.<user>) and prints each event's JSON
        as one line on standard output, as it comes (NDJSON). Without --since, events published before tail
        connected are not seen. Each event carries its position in the notifier's stream; a position seen already
        (the notifier publishes again what it was not sure it had published before a crash) is not printed twice.
        Whenever the connection is renewed (a notifier restart, a network blip, a reload of subscriber keys), what
        was published meanwhile is read from the catch-up endpoint, so nothing is missed (a catch-up that fails is
        said once, and tail goes on live).

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
          --event NAME        only this event: tripDidStart, tripDidEnd, crashDetected, crashFollowUp or
                              tripBehaviour; repeat it (or separate names with commas) for several (default: every
                              event)
          --app ID            only the devices of this application (a credential: never echoed)
          --user ID           only this clientUserID
          --topic PREFIX      subscribe to a raw topic prefix instead (not with --event, --app or --user)
          --count N           exit after N events
          --timeout S         exit (status 0) after S seconds
          --log-level L       debug, info, warning or error (default warning)
        \(ClientCurveKeys.help(service: "the notifier"))
                              (the same keys for the subscriber and the catch-up endpoint)
        \(ClientLinkTimings.help)
          -h, --help          this text

        SIGINT and SIGTERM end it cleanly (exit 0). Exit status 1 when the subscription or the catch-up fails (an
        unknown eventID, a position older than the retention window), 2 for bad options.
        """

    public static func run(_ arguments: [String]) -> Int32 {
        ClientCommand.run("tail", usage: usage, options: { try Options(arguments) }) {
            (options: Options, log: Log) throws(CommandExit) -> Int32 in
            do throws(CommandExit) {
                try follow(options, log: log)
            } catch  where error.status == 0 {
                // a signal during a catch-up request
            }
            return 0
        }
    }

    static func follow(_ options: Options, log: Log) throws(CommandExit) {
        if options.viaCatchUp { return try followViaCatchUp(options, log: log) }
        let context: ZMQContext
        let socket: ZMQSocket
        let watch: ConnectionWatch
        do {
            context = try ZMQContext()
            socket = try ZMQSocket(context, .sub, linger: 0)
            // While catching up, live events wait in the socket: none may be dropped for a full queue.
            if options.since != nil { try socket.setReceiveHighWaterMark(0) }
            for prefix in options.prefixes { try socket.subscribe(prefix) }
            try options.keys?.apply(to: socket)
            // Heartbeats: a connection that went silent (a cut link, a NAT that forgot it) is dropped and made anew,
            // and what was published meanwhile is caught up (below), instead of waiting on a dead one.
            try socket.setLinkTimings(options.link)
            // Its handshakes: on each reconnect what was published meanwhile is read from the catch-up endpoint.
            watch = try ConnectionWatch(socket, context: context, name: "tail")
            try socket.connect(options.endpoint)
        } catch {
            throw CommandExit(1, "cannot subscribe to \(options.endpoint): \(error)")
        }
        var catchUp: CatchUpClient?
        defer {
            catchUp?.close()
            watch.close()
            socket.close()
            context.terminate()
        }
        log.info(
            "subscribed",
            [
                "endpoint": options.endpoint,
                "topics": options.topic == nil
                    ? (options.events.isEmpty ? "every event" : options.events.joined(separator: ","))
                    : "raw prefix",
                "user": options.user ?? "any",
            ])
        let deadline = options.timeout.map { MonotonicClock.now() + $0 }
        var printer = Printer(options: options)
        if let since = options.since {
            do {
                catchUp = try CatchUpClient(
                    context: context, endpoint: options.catchUpEndpoint, keys: options.keys, link: options.link)
            } catch {
                throw CommandExit(1, "cannot connect to the catch-up endpoint \(options.catchUpEndpoint): \(error)")
            }
            // Subscribed first: whatever is published from now on waits in the socket while the past is read.
            guard try catchUp!.read(after: since, before: nil, into: &printer, options: options, log: log) else {
                return
            }
        }
        var firstLive = true
        var reconnects = ReconnectCatchUp(known: options.since == nil ? nil : printer.seen)
        while true {
            guard let wait = waitOrStop(upTo: 0.1, deadline: deadline, printer: printer, options: options, log: log)
            else {
                return
            }
            let ready: [ZMQPollEvents]
            do {
                ready = try ZMQPoller.poll(
                    [ZMQPollItem(socket), ZMQPollItem(watch.reader)],
                    timeoutMilliseconds: max(1, Int((wait * 1000).rounded(.up))))
            } catch {
                throw CommandExit(1, "subscription to \(options.endpoint) failed: \(error)")
            }
            for change in watch.changes() where change == .established {
                reconnects.connected(at: MonotonicClock.now())
            }
            if let due = reconnects.due(at: MonotonicClock.now(), seen: printer.seen) {
                guard
                    try catchUpAfterReconnect(
                        due, client: &catchUp, context: context, reconnects: &reconnects,
                        printer: &printer, options: options, log: log)
                else { return }
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
                        guard
                            try catchUp.read(
                                after: .position(seen), before: position, into: &printer, options: options,
                                log: log)
                        else { return }
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

    /// What `ReconnectCatchUp` asked for: the head at the first connection, or what came after a position (a
    /// reconnect). A catch-up that fails (the endpoint does not answer, or refuses) is said once and not tried
    /// again: tail goes on live. False when tail should end.
    static func catchUpAfterReconnect(
        _ due: ReconnectCatchUp.Request, client: inout CatchUpClient?, context: ZMQContext,
        reconnects: inout ReconnectCatchUp, printer: inout Printer, options: Options,
        log: Log
    ) throws(CommandExit) -> Bool {
        do throws(CommandExit) {
            if client == nil {
                do {
                    client = try CatchUpClient(
                        context: context, endpoint: options.catchUpEndpoint, keys: options.keys, link: options.link)
                } catch {
                    throw CommandExit(1, "\(error)")
                }
            }
            switch due {
            case .head:
                reconnects.started(fromHead: try client!.head())
                return true
            case .after(let position):
                log.info("reconnected: catching up", ["after": String(position)])
                return try client!.read(
                    after: .position(position), before: nil, into: &printer, options: options, log: log)
            }
        } catch  where error.status == 0 {
            return false // a signal during the request
        } catch {
            log.warning(
                "catching up after a reconnect failed: events published while tail reconnects may be missed "
                    + "(not tried again)", ["endpoint": options.catchUpEndpoint, "error": error.message])
            reconnects.giveUp()
            return true
        }
    }

    /// `--via-catch-up`: catch-up long-polls, one after the other, each from the position the last one reached.
    static func followViaCatchUp(_ options: Options, log: Log) throws(CommandExit) {
        let context: ZMQContext
        let catchUp: CatchUpClient
        do {
            context = try ZMQContext()
            catchUp = try CatchUpClient(
                context: context, endpoint: options.catchUpEndpoint, keys: options.keys, link: options.link)
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
            guard
                let wait = waitOrStop(
                    upTo: Double(CatchUpClient.longPollMilliseconds) / 1000, deadline: deadline,
                    printer: printer, options: options, log: log)
            else { return }
            guard
                try catchUp.read(
                    after: start, before: nil, into: &printer, options: options, log: log,
                    waitMilliseconds: max(1, Int((wait * 1000).rounded(.up))))
            else { return }
            start = .position(printer.seen ?? 0)
        }
    }

    /// How long the next wait may be (`maximum`, less when the deadline is nearer), or nil when tail must stop: a
    /// signal came or the --timeout deadline has passed (each logged). Both ways of following ask it every round.
    static func waitOrStop(
        upTo maximum: Double, deadline: Double?, printer: Printer, options: Options,
        log: Log
    ) -> Double? {
        if SignalFlag.signal != 0 {
            log.info("stopping", ["signal": SignalFlag.name(SignalFlag.signal), "events": String(printer.printed)])
            return nil
        }
        guard let deadline else { return maximum }
        let left = deadline - MonotonicClock.now()
        if left <= 0 {
            if let count = options.count {
                log.info(
                    "timeout before the count was reached", ["events": String(printer.printed), "count": String(count)])
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
            let text =
                options.showPosition ? "{\"position\":\(position.map(String.init) ?? "null"),\"event\":\(body)}" : body
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
