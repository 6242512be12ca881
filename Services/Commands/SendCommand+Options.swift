import CommandSettings
import GatewayKit
import Logging
import RoadSaveClient
import ServiceKit
import TerminalProgress
import Wire
import ZeroMQ

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

extension SendCommand {
    struct Options: ClientCommandOptions {
        var help = false
        var path = ""
        /// The ingests, in the order given: a device's records go to `route.index(of:)` (one endpoint: all of them).
        var endpoints = ["tcp://127.0.0.1:5550"]
        var route = IngestRoute(endpoint: "tcp://127.0.0.1:5550")
        var format = ContentType.msgpack
        var inputFormat = RecordFileFormat.ndjson
        /// What a record's number counts in messages: a line of NDJSON, a record of MessagePack.
        var numberName: String { inputFormat == .msgpack ? "record" : "line" }
        var batch = 500
        var window = 8
        var timeout = 10.0
        var timeoutMilliseconds: Int32 = 10_000
        var attempts = 5
        var rate: Double?
        var realtime = false
        var logLevel = Log.Level.warning
        var keys: ClientCurveKeys?
        var link = LinkTimings.standard
        /// Off with --no-progress.
        var progress = true
        /// Headers with watermarks (off with --no-watermark), their disorder bound, stream name and end.
        var watermarks = true
        var maximumDisorder = 10.0
        var gatewayName: String?
        var end = true

        init(_ arguments: [String]) throws {
            let parsed = try CommandLineOptions(
                arguments,
                valued: Set([
                    "--endpoint", "--format", "--input-format", "--batch", "--window", "--timeout",
                    "--attempts", "--rate", "--log-level", "--max-disorder", "--gateway",
                ])
                .union(ClientCurveKeys.flags).union(ClientLinkTimings.flags),
                flags: CommandLineOptions.helpSwitches.union([
                    "--realtime", ProgressMeter.flag, "--no-end", "--no-watermark",
                ]))
            if parsed.asksForHelp {
                help = true
                return
            }
            guard let file = parsed.positional.first else {
                throw CommandExit.usage("FILE missing (- reads standard input)")
            }
            guard parsed.positional.count == 1 else {
                throw CommandExit.usage("unexpected argument \"\(parsed.positional[1])\" (one file at a time)")
            }
            path = file
            let given = parsed.strings("--endpoint")
            if !given.isEmpty {
                endpoints = try given.map { text throws(CommandExit) in
                    try validateConnectEndpoint(text, flag: "--endpoint")
                }
                do {
                    route = try IngestRoute(endpoints: endpoints)
                } catch {
                    throw CommandExit.usage("--endpoint: \(error)")
                }
            }
            if let text = parsed.string("--format") {
                switch text.lowercased() {
                case "msgpack", "application/msgpack": format = .msgpack
                case "json", "application/json": format = .json
                default: throw CommandExit.usage("--format must be msgpack or json, got \"\(text)\"")
                }
            }
            do {
                inputFormat = try RecordFileFormat(option: parsed.string("--input-format"), path: file)
            } catch {
                throw CommandExit.usage("--input-format: \(error)")
            }
            batch = try parsed.integer("--batch", range: 1...RecordBatch.maximumRecords) ?? 500
            window = try parsed.integer("--window", range: 1...1000) ?? 8
            (timeout, timeoutMilliseconds) = try parsed.milliseconds("--timeout", default: 10, range: 0.05...3600)
            attempts = try parsed.integer("--attempts", range: 1...100) ?? 5
            rate = try parsed.double("--rate", range: 0.001...10_000_000)
            realtime = parsed.has("--realtime")
            progress = !parsed.has(ProgressMeter.flag)
            watermarks = !parsed.has("--no-watermark")
            end = !parsed.has("--no-end")
            maximumDisorder = try parsed.double("--max-disorder", range: 0...3600) ?? 10
            if let name = parsed.string("--gateway") {
                guard !name.isEmpty, name.utf8.count <= GatewayBatchHeader.maximumGatewayBytes else {
                    throw CommandExit.usage("--gateway must be 1 to \(GatewayBatchHeader.maximumGatewayBytes) bytes")
                }
                gatewayName = name
            }
            if !watermarks, parsed.has("--no-end") || parsed.string("--max-disorder") != nil || gatewayName != nil {
                throw CommandExit.usage(
                    "--no-watermark sends no header: --no-end, --max-disorder and --gateway need one")
            }
            if rate != nil, realtime {
                throw CommandExit.usage("--rate and --realtime exclude each other: pick one pace")
            }
            if let text = parsed.string("--log-level") { logLevel = try LogLevelSetting.parse(text) }
            keys = try ClientCurveKeys.parse(parsed)
            link = try ClientLinkTimings.parse(parsed)
        }

        /// What the gateway is made with.
        var configuration: RoadSaveGateway.Configuration {
            RoadSaveGateway.Configuration(
                endpoints: endpoints, keys: keys?.files, format: format == .json ? .json : .messagePack,
                batchSize: batch, window: window, timeout: timeout, attempts: attempts,
                watermarks: watermarks
                    ? RoadSaveGateway.Watermarks(
                        maximumDisorder: maximumDisorder, streamName: gatewayName, endsStream: end) : nil,
                pace: realtime ? .recordTimes : rate.map { .recordsPerSecond($0) }, link: RoadSaveLinkTimings(link))
        }

        /// The lines (or records) of the numbers `first…last`, as the messages name them.
        func lineRange(_ numbers: ClosedRange<Int>?) -> String {
            guard let numbers else { return "no \(numberName)s" }
            return numbers.count == 1
                ? "\(numberName) \(numbers.lowerBound)" : "\(numberName)s \(numbers.lowerBound)–\(numbers.upperBound)"
        }
    }
}
