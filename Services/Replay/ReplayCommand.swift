import CommandSettings
import DetectionEngine
import Foundation
import Logging
import PlatformHTTP
import RecordCodecs
import TerminalProgress
import Wire

/// `roadsave replay FILE.ndjson`: the engines over a recording, events as NDJSON on standard output.
public enum ReplayCommand {
    /// The settings replay shares with the detection service (and `roadsave report`): the same flags, defaults and
    /// checks. Replay reads them from its flags only, not from the environment.
    public static let settings: [any AnySetting] = PlatformSettings.all + OrderingSettings.all

    public static let usage = """
        Usage: roadsave replay FILE.ndjson|FILE.msgpack [options]

        Runs the trip and crash engines over recorded sensor records (docs/PROTOCOL.md §2: NDJSON, one JSON object
        a line, or MessagePack, the records' maps one after another, as `simulate` and `convert` write with
        --output-format msgpack; - reads standard input) and prints the events as NDJSON on standard output. This is the detection service's
        per-device core (DeviceFleet), with time taken from the records only. Each device met is configured with
        its app and user (mode all, automatic trips on) and monitored from its first record with its application's
        settings; when the platform cannot give them, that application's new devices are not monitored
        (offlineLimitExceeded) and it is asked again after \(Int(DeviceFleet.Options().settingsRetry)) s of record time. Records are applied
        per device in event-time order; at the end of the input time runs on, so pending timers fire. Bad records
        are reported on standard error (line or record number, field, reason) and skipped; a summary ends the run.
        The input is read in chunks: memory does not grow with the file.

        Options:
          --input-format F      ndjson or msgpack (default: msgpack for a FILE ending in .msgpack, else ndjson)
          --format FORMAT       current (default) or legacy (the 3.x keys)
        \(SettingHelp.command(settings))
          --quiet               no log lines but errors
          --no-progress         no progress line (records, records/s, percent and time left) on standard error;
                                it is shown only when standard error is a terminal and standard output is not
          -h, --help            this text

        Exit status: 0 when the file was replayed (even with bad records), 1 when a MessagePack input ended inside a
        record or held bytes that start none (what came before is replayed), 2 when it could not run at all.
        """

    public static func run(_ arguments: [String]) async -> Int32 {
        let options: CommandLineOptions
        let path: String
        switch RecordFileArguments.read(
            arguments, valued: ["--input-format", "--format"], flags: ["--quiet", ProgressMeter.flag],
            verb: "replayed")
        {
        case .help:
            print(usage)
            return 0
        case .problem(let message): return fail(message)
        case .file(let parsed, let file): (options, path) = (parsed, file)
        }
        let platform: any Platform
        let format: EventFormat
        var fleetOptions = DeviceFleet.Options()
        do {
            format = try options.choice("--format", EventFormat.self) ?? .current
            let values = SettingValues(settings, options: options)
            try OrderingSettings.apply(values, to: &fleetOptions)
            platform = try PlatformSettings.platform(values)
        } catch let error as CommandLineOptions.UsageError {
            return fail(error.message)
        } catch {
            return fail("\(error)")
        }
        let reader: RecordFileReader
        do {
            let inputFormat = try RecordFileFormat(option: options.string("--input-format"), path: path)
            reader = try RecordFileReader(path: path, format: inputFormat)
        } catch let error as RecordFileFormat.UnknownFormat {
            return fail("--input-format: \(error)")
        } catch {
            return fail("\(error)")
        }

        let log = Log(category: "replay", minimumLevel: options.has("--quiet") ? .error : .info)
        let output = LineWriter()
        let replayer = Replayer(platform: platform, options: fleetOptions, log: log) { event in
            output.write(line: event.json(format))
        }
        replayer.numberName = reader.numberName
        var progress = ProgressMeter.standardError(
            label: "replay", total: reader.size,
            turnedOff: options.has(ProgressMeter.flag), writesStandardOutput: true)
        await replay(reader, into: replayer, progress: &progress)
        await replayer.finish()
        progress.finish()
        output.flush()
        if let failure = reader.failure { log.error("input ended early", ["reason": failure.description]) }
        let s = replayer.summary
        log.info(
            "replay finished",
            [
                "lines": String(s.lines), "applied": String(s.applied), "invalid": String(s.invalid),
                "duplicates": String(s.duplicates), "late": String(s.late), "farInFuture": String(s.farInFuture),
                "notMonitored": String(s.notMonitored), "devices": String(s.devices), "events": String(s.events),
                "crashesDismissed": String(s.crashesDismissed),
            ])
        return reader.failure == nil ? 0 : 1
    }

    /// The replay loop: records go to the fleet synchronously; only a platform call suspends it.
    public static func replay(_ reader: RecordFileReader, into replayer: Replayer) async {
        var progress = ProgressMeter.off()
        await replay(reader, into: replayer, progress: &progress)
    }

    /// The same, counting on `progress` each record read and the bytes of the file it has reached.
    public static func replay(_ reader: RecordFileReader, into replayer: Replayer, progress: inout ProgressMeter) async
    {
        while let (number, item) = reader.next() {
            progress.advance(at: reader.position)
            switch item {
            case .record(let record):
                if !replayer.feedNow(record, number: number) { await replayer.settle() }
            case .invalid(let error):
                replayer.reject(error, number: number)
            }
        }
    }

    private static func fail(_ message: String) -> Int32 {
        FileHandle.standardError.write(
            Data("roadsave replay: \(message)\nRun 'roadsave replay --help' for usage.\n".utf8))
        return 2
    }
}
