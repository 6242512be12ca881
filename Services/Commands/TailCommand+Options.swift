import CommandSettings
import Logging
import RoadSaveClient
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

extension TailCommand {
    struct Options: ClientCommandOptions {
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
        var link = LinkTimings.standard

        init(_ arguments: [String]) throws {
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
                    guard index < arguments.count else { throw CommandExit.usage("--event needs a value") }
                    events += arguments[index].split(separator: ",").map(String.init)
                    index += 1
                } else if argument.hasPrefix("--event=") {
                    events += argument.dropFirst("--event=".count).split(separator: ",").map(String.init)
                } else {
                    rest.append(argument)
                }
            }
            let parsed = try CommandLineOptions(
                rest,
                valued: ([
                    "--endpoint", "--app", "--user", "--topic", "--count", "--timeout", "--log-level", "--since",
                    "--catch-up-endpoint",
                ] as Set<String>).union(ClientCurveKeys.flags).union(ClientLinkTimings.flags),
                flags: CommandLineOptions.helpSwitches.union(["--show-position", "--via-catch-up"]))
            if parsed.asksForHelp {
                help = true
                return
            }
            guard parsed.positional.isEmpty else {
                throw CommandExit.usage("unexpected argument \"\(parsed.positional[0])\"")
            }
            if let text = parsed.string("--endpoint") {
                endpoint = try validateConnectEndpoint(text, flag: "--endpoint")
            }
            for name in events where !TailCommand.eventNames.contains(name) {
                throw CommandExit.usage(
                    "--event: unknown event \"\(name)\"; expected \(TailCommand.eventNames.joined(separator: ", "))")
            }
            app = parsed.string("--app")
            user = parsed.string("--user")
            if app?.isEmpty == true { throw CommandExit.usage("--app needs a non-empty ID") }
            if user?.isEmpty == true { throw CommandExit.usage("--user needs a non-empty ID") }
            topic = parsed.string("--topic")
            if topic != nil, !events.isEmpty || app != nil || user != nil {
                throw CommandExit.usage(
                    "--topic is a raw prefix: use it instead of --event, --app and --user, not with them")
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
            link = try ClientLinkTimings.parse(parsed)
        }

        /// The filter of the options (`--topic`, or `--event`, `--app`, `--user`), checked by the library too.
        var filter: RoadSaveSubscriber.Filter {
            if let topic { return .topicPrefix(topic) }
            return RoadSaveSubscriber.Filter(
                events: Set(events.compactMap(RoadSaveSubscriber.EventKind.init(rawValue:))), application: app,
                user: user)
        }

        /// What the subscriber is made with.
        var configuration: RoadSaveSubscriber.Configuration {
            RoadSaveSubscriber.Configuration(
                endpoint: endpoint, catchUpEndpoint: catchUpEndpoint, keys: keys?.files, filter: filter,
                link: RoadSaveLinkTimings(link), followsByCatchUpOnly: viaCatchUp)
        }
    }
}
