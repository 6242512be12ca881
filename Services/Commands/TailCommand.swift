import Logging
import RoadSaveClient
import SystemKit
import Wire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// `roadsave tail`: subscribes to the notifier (PROTOCOL §7, events: frames `[<event>.<app>.<user>, JSON, position]`)
/// and prints each event body as one NDJSON line. The subscription is the client library's (`RoadSaveSubscriber`:
/// with `--since` it first catches up from the notifier's catch-up endpoint, having subscribed before, and drops live
/// positions already delivered; on every reconnect it catches up the same way); this command parses the options,
/// prints, logs the library's notices, and ends on SIGINT/SIGTERM, `--timeout` or `--count` (checked every 100 ms).
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
        was published meanwhile is read from the catch-up endpoint, so nothing is missed (one left unanswered is
        asked again, live events held meanwhile, for about a minute and a half; one that fails is said once, and tail
        goes on live).

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

    public static func run(_ arguments: [String]) async -> Int32 {
        await ClientCommand.run("tail", usage: usage, options: { try Options(arguments) }) {
            (options: Options, log: Log) async throws(CommandExit) -> Int32 in
            try await follow(options, log: log)
            return 0
        }
    }

    static func follow(_ options: Options, log: Log) async throws(CommandExit) {
        let subscriber: RoadSaveSubscriber
        do {
            subscriber = try RoadSaveSubscriber(options.configuration)
        } catch {
            throw CommandExit(1, "\(error)")
        }
        // A catch-up that fails after a reconnect (refused, or unanswered six times) is said once, and tail goes on
        // live (the library's own way is to end the subscription: a caller resumes from its position; a person
        // watching a terminal would rather not).
        let deliveries = subscriber.deliveries(
            from: options.since, reconnectCatchUpFailure: .goesOnLive,
            notices: { notice in Self.log(notice, options: options, log: log) })
        let printed = Locked(0)
        let printing = Task { () -> RoadSaveClientError? in
            var printer = Printer(options: options, printed: printed)
            do throws(RoadSaveClientError) {
                for try await delivery in deliveries {
                    guard printer.print(position: delivery.position, body: delivery.json) else { return nil }
                }
                return nil
            } catch {
                return error
            }
        }
        let done = Locked(false)
        Task {
            _ = await printing.value
            done.withLock { $0 = true }
        }
        let deadline = options.timeout.map { MonotonicClock.now() + $0 }
        while !done.withLock({ $0 }) {
            if SignalFlag.signal != 0 {
                log.info(
                    "stopping",
                    ["signal": SignalFlag.name(SignalFlag.signal), "events": String(printed.withLock { $0 })])
                printing.cancel()
                break
            }
            if let deadline, MonotonicClock.now() >= deadline {
                if let count = options.count {
                    log.info(
                        "timeout before the count was reached",
                        ["events": String(printed.withLock { $0 }), "count": String(count)])
                }
                printing.cancel()
                break
            }
            try? await Task.sleep(nanoseconds: 100_000_000)
        }
        if let error = await printing.value { throw CommandExit(1, "\(error)") }
    }

    /// The library's notices as tail's log lines.
    static func log(_ notice: SubscriberNotice, options: Options, log: Log) {
        switch notice {
        case .subscribed(let endpoint):
            log.info(
                "subscribed",
                [
                    "endpoint": endpoint,
                    "topics": options.topic == nil
                        ? (options.events.isEmpty ? "every event" : options.events.joined(separator: ","))
                        : "raw prefix",
                    "user": options.user ?? "any",
                ])
        case .followingByCatchUp(let endpoint, let after):
            log.info("following by catch-up", ["endpoint": endpoint, "after": "\(after)"])
        case .liveKeyRefused(let endpoint, let status):
            log.warning(
                "the live endpoint refused this key (a key limited to applications, where the notifier's libzmq is "
                    + "older than 4.3.5): following by catch-up instead", ["endpoint": endpoint, "status": "\(status)"])
        case .catchingUp(let after):
            log.info("reconnected: catching up", ["after": String(after)])
        case .caughtUp(let to, let head):
            log.debug("caught up", ["to": String(to), "head": String(head)])
        case .reconnectCatchUpUnanswered(let error, let retryCount):
            // Said once a run of them, then only every tenth: a notifier down for minutes is not a log flood.
            guard retryCount == 1 || retryCount % 10 == 0 else { return }
            log.warning(
                "catching up after a reconnect got no answer: asking again, live events held until it answers",
                ["endpoint": options.catchUpEndpoint, "error": "\(error)", "tries": String(retryCount)])
        case .reconnectCatchUpFailed(let error):
            log.warning(
                "catching up after a reconnect failed (refused, or no answer six times in a row): events published "
                    + "while tail reconnected may be missed (not tried again)",
                ["endpoint": options.catchUpEndpoint, "error": "\(error)"])
        case .skippedMessage(let frames):
            log.warning("message that is not [topic, body, position] skipped", ["frames": String(frames)])
        }
    }

    /// What has been printed: the count, shared with the loop that watches signals and the deadline.
    struct Printer {
        let options: Options
        let printed: Locked<Int>

        /// Prints one event; false when tail should end (standard output closed, or the count reached).
        mutating func print(position: UInt64, body: String) -> Bool {
            let text = options.showPosition ? "{\"position\":\(position),\"event\":\(body)}" : body
            // Standard output closed (`tail | head -1`): nobody is reading any more.
            guard Console.out(text) else { return false }
            let count = printed.withLock { count -> Int in
                count += 1
                return count
            }
            if let limit = options.count, count >= limit { return false }
            return true
        }
    }
}
