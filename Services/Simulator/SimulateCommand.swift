// `roadsave simulate`: parse the flags, run the simulation, write the records (NDJSON or MessagePack, stdout or a
// file) and the truth.
// Bad options are reported on stderr naming the option and the reason, with exit status 2.

import Foundation
import TerminalProgress

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

public enum SimulateCommand {
    public static let usage = """
        Usage: roadsave simulate [options]

        Writes realistic sensor-record streams (NDJSON, one record of docs/PROTOCOL.md §2 a line) for simulated
        devices: drives with red lights and bumps, walks, runs, bike and bus rides, parked phones, crashes, phone
        drops. The same options always give the same bytes.

        Options:
          --devices N        number of devices (default 3)
          --seed S           random seed, an unsigned 64-bit integer (default 1)
          --start TIME       start time, ISO 8601 (2026-03-02T06:30:00Z) or Unix seconds
                             (default 2026-03-02T06:30:00Z); devices start staggered within 3 minutes
          --duration MIN     minutes simulated (default 45)
          --scenario NAME    mix (default: devices cycle through every scenario but crash) or one of:
                             commute, walk, run, cycle, bus, parked, crash, phoneDrop, pothole, hardBrake,
                             noPedometer, noActivity
          --crashes K        the first K devices (user-001 …) run the crash scenario (default 0)
          --driving-style S  how the drivers drive: normal (default), calm, aggressive, or mixed (calm, normal,
                             aggressive device by device); a style changes only the driving, so the same seed
                             gives each device the same roads and story in every style. The truth lists each
                             car's true manoeuvres beyond −3.0 m/s² braking, +2.5 m/s² acceleration or 3.5 m/s²
                             lateral
          --app ID           applicationID of every record (default demo-app)
          --user-prefix P    users are P001, P002, … (default user-)
          --origin LAT,LON   centre of the simulated area (default -33.9249,18.4241, Cape Town)
          --disorder         emulate a gateway: records up to 3 s out of order, ~1% sent twice (same seq)
          --idle-devices N   also N mostly idle devices (idle-0000001 …), announced evenly over the run: each
                             sends a capabilities record and one parked fix, then nothing (default 0; not
                             with --disorder)
          --output FILE      write the records to FILE (default: stdout)
          --output-format F  ndjson or msgpack (the records' MessagePack maps one after another, which
                             `roadsave replay` reads fastest); default: msgpack when FILE ends in .msgpack,
                             else ndjson
          --truth FILE       write the ground truth (a JSON array, one object per device) to FILE
          --no-progress      no progress line on standard error (devices simulated, then records written:
                             count, rate, percent, time left); it is shown only when standard error is a
                             terminal and the records do not go to one
          -h, --help         show this help

        Exit status: 0 on success, 1 if writing failed, 2 for bad options.
        """

    public static func run(_ arguments: [String]) -> Int32 {
        let parsed: Parsed
        switch parse(arguments) {
        case .success(let value): parsed = value
        case .failure(let error):
            printError("roadsave simulate: \(error.option): \(error.reason)\nTry 'roadsave simulate --help'.\n")
            return 2
        }
        if parsed.help {
            FileHandle.standardOutput.write(Data((usage + "\n").utf8))
            return 0
        }

        var fileDescriptor: Int32 = 1
        if let output = parsed.output, output != "-" {
            fileDescriptor = open(output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            if fileDescriptor < 0 {
                printError(
                    "roadsave simulate: --output: cannot open '\(output)': \(String(cString: strerror(errno)))\n")
                return 1
            }
        }
        defer { if fileDescriptor != 1 { close(fileDescriptor) } }
        var progress = ProgressMeter.standardError(
            label: "simulate", noun: "devices", turnedOff: !parsed.progress,
            writesStandardOutput: fileDescriptor == 1)
        do {
            let truth =
                parsed.idle.count > 0
                ? try simulate(
                    parsed.options, idle: parsed.idle, toFileDescriptor: fileDescriptor,
                    format: parsed.outputFormat, progress: &progress)
                : try simulate(
                    parsed.options, toFileDescriptor: fileDescriptor, format: parsed.outputFormat,
                    progress: &progress)
            progress.finish()
            if let truthPath = parsed.truth {
                try truthJSON(truth).write(to: URL(fileURLWithPath: truthPath))
            }
        } catch {
            progress.finish()
            printError("roadsave simulate: \(error)\n")
            return 1
        }
        return 0
    }

    struct Parsed {
        var options = SimulationOptions()
        var idle = IdleDeviceOptions()
        var output: String?
        var outputFormatOption: RecordOutputFormat?
        var truth: String?
        /// Off with --no-progress.
        var progress = true

        /// As asked, else from the output file's name.
        var outputFormat: RecordOutputFormat {
            outputFormatOption ?? (output?.lowercased().hasSuffix(".msgpack") == true ? .msgpack : .ndjson)
        }
        var help = false
    }

    static func parse(_ arguments: [String]) -> Result<Parsed, SimulationError> {
        var parsed = Parsed()
        var index = 0
        while index < arguments.count {
            var flag = arguments[index]
            var inlineValue: String?
            if flag.hasPrefix("--"), let equals = flag.firstIndex(of: "=") {
                inlineValue = String(flag[flag.index(after: equals)...])
                flag = String(flag[..<equals])
            }
            index += 1
            func value() -> Result<String, SimulationError> {
                if let inlineValue { return .success(inlineValue) }
                guard index < arguments.count else {
                    return .failure(SimulationError(option: flag, reason: "needs a value"))
                }
                index += 1
                return .success(arguments[index - 1])
            }
            func fail(_ reason: String) -> Result<Parsed, SimulationError> {
                .failure(SimulationError(option: flag, reason: reason))
            }
            switch flag {
            case "-h", "--help":
                parsed.help = true
            case "--disorder":
                parsed.options.disorder = true
            case ProgressMeter.flag:
                parsed.progress = false
            case "--devices", "--seed", "--start", "--duration", "--scenario", "--crashes", "--app", "--user-prefix",
                "--origin", "--output", "--output-format", "--truth", "--idle-devices", "--driving-style":
                let text: String
                switch value() {
                case .success(let found): text = found
                case .failure(let error): return .failure(error)
                }
                switch flag {
                case "--devices":
                    guard let number = Int(text) else { return fail("expected a whole number, got '\(text)'") }
                    parsed.options.devices = number
                case "--seed":
                    guard let number = UInt64(text) else { return fail("expected an unsigned integer, got '\(text)'") }
                    parsed.options.seed = number
                case "--start":
                    guard let time = parseTime(text) else {
                        return fail("expected ISO 8601 (2026-03-02T06:30:00Z) or Unix seconds, got '\(text)'")
                    }
                    parsed.options.start = time
                case "--duration":
                    guard let minutes = Double(text), minutes.isFinite else {
                        return fail("expected minutes, got '\(text)'")
                    }
                    parsed.options.durationMinutes = minutes
                case "--scenario":
                    parsed.options.scenario = text
                case "--driving-style":
                    parsed.options.drivingStyleName = text
                case "--idle-devices":
                    guard let number = Int(text) else { return fail("expected a whole number, got '\(text)'") }
                    parsed.idle.count = number
                case "--crashes":
                    guard let number = Int(text) else { return fail("expected a whole number, got '\(text)'") }
                    parsed.options.crashes = number
                case "--app":
                    parsed.options.app = text
                case "--user-prefix":
                    parsed.options.userPrefix = text
                case "--origin":
                    let parts = text.split(separator: ",", omittingEmptySubsequences: false)
                    guard parts.count == 2,
                        let latitude = Double(parts[0].trimmingCharacters(in: .whitespaces)),
                        let longitude = Double(parts[1].trimmingCharacters(in: .whitespaces))
                    else {
                        return fail("expected LAT,LON in degrees, got '\(text)'")
                    }
                    parsed.options.origin = Coordinate(latitude: latitude, longitude: longitude)
                case "--output":
                    guard !text.isEmpty else { return fail("expected a file name") }
                    parsed.output = text
                case "--output-format":
                    guard let format = RecordOutputFormat(rawValue: text.lowercased()) else {
                        return fail("expected ndjson or msgpack, got '\(text)'")
                    }
                    parsed.outputFormatOption = format
                default:
                    guard !text.isEmpty else { return fail("expected a file name") }
                    parsed.truth = text
                }
            default:
                return fail(flag.hasPrefix("-") ? "unknown option" : "unexpected argument")
            }
        }
        if !parsed.help,
            let error = parsed.options.validationError() ?? parsed.idle.validationError(active: parsed.options)
        {
            return .failure(error)
        }
        return .success(parsed)
    }

    /// Unix seconds, or an ISO 8601 date-time with a zone (fractional seconds allowed).
    static func parseTime(_ text: String) -> Double? {
        if let seconds = Double(text), seconds.isFinite { return seconds }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        if let date = formatter.date(from: text) { return date.timeIntervalSince1970 }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text)?.timeIntervalSince1970
    }

    private static func printError(_ message: String) {
        FileHandle.standardError.write(Data(message.utf8))
    }
}
