import CommandSettings
import DetectionEngine
import Foundation
import Logging
import PlatformHTTP
import Replay
import RoadSaveModel
import Wire

#if canImport(Glibc)
    import Glibc
#endif

/// `roadsave report RECORDS --output report.html [--geojson trips.geojson]`: the engines over a recording (the same
/// `Replayer` as `roadsave replay`), drawn: per device a map, a timeline and tables in one HTML page, and the trips
/// and crashes as GeoJSON.
public enum ReportCommand {
    public static let usage = """
        Usage: roadsave report RECORDS.ndjson|RECORDS.msgpack --output REPORT.html [options]

        Writes one self-contained HTML page (inline SVG and CSS; no script, nothing fetched: it opens offline in any
        browser) with, per device: a map of its track, each trip in its own colour with its start (○) and end (■),
        positions outside trips dashed grey, crashes (red, with their confidence), dismissed crash candidates (✕,
        with the reason) and the trips' driving events (◆: hard braking, acceleration, cornering, speeding; outlined
        black when severe); beneath it a timeline of GPS speed with the trips as spans and the motion classifier's
        reports as a band; then tables of the trips (each with its driving score, or why it has none), crashes and
        dismissed candidates. Times are UTC; applicationIDs
        are masked, as in the logs. Tracks are thinned for drawing (to half a pixel); starts, ends and markers sit at
        their exact positions. A crash without a position is listed and marked on the timeline, not on the map.

        Where trips and crashes come from:
          without --events  the engines over RECORDS, as `roadsave replay` runs them (the same platform and
                            ordering options): trips, crashes and the dismissed candidates with reasons
          --events FILE     trips and crashes from FILE (NDJSON events in the current format: what `roadsave
                            replay` prints, the notifier's NDJSON sink writes or `roadsave tail` prints, with or
                            without --show-position); the engines still run over RECORDS for the dismissed
                            candidates (not events, so never in FILE), and with their own platform, so those may
                            differ from what made FILE. RECORDS gives the tracks and the classifier band either way

        Options:
          --output FILE         the HTML page (- for standard output)
          --geojson FILE        also write the trips (LineString, with their event's fields as properties), crashes
                                (Point), driving events (Point, "kind": "drivingEvent", with the trip's ID) and
                                dismissed candidates (Point, "kind": "dismissedCrash") as a GeoJSON
                                FeatureCollection (RFC 7946: [longitude, latitude], WGS 84) for QGIS, kepler.gl or
                                geojson.io; - for standard output
          --events FILE         trips and crashes from this events file (above)
          --user ID             only this clientUserID's devices (repeat, or separate with commas, for several)
          --title TEXT          the page's title (default: "RoadSave report: " and the records file's name)
          --input-format F      ndjson or msgpack (default: msgpack for a RECORDS ending in .msgpack, else ndjson)
          --skip-invalid        report unreadable records on standard error and go on (default: the first one is an
                                error)
          \(ReplayCommand.settings.map { "\($0.flag) \($0.valueName)" }.joined(separator: ", "))
                                the platform and ordering of the engines, as for `roadsave replay` (default: the
                                embedded platform, the reorder window of `roadsave replay --help`)
          -h, --help            this text

        At least one of --output and --geojson is needed. Exit status: 0 when written, 1 when a file could not be
        written, 2 for bad options or input (a missing or unreadable file, an unreadable record or event: the
        message names the file, the line or record, and the field).
        """

    public static func run(_ arguments: [String]) async -> Int32 {
        let options: CommandLineOptions
        let path: String
        switch RecordFileArguments.read(
            arguments, valued: ["--output", "--geojson", "--events", "--user", "--title", "--input-format"],
            flags: ["--skip-invalid"], verb: "reported")
        {
        case .help:
            print(usage)
            return 0
        case .problem(let message): return fail(message)
        case .file(let parsed, let file): (options, path) = (parsed, file)
        }
        let output = options.string("--output")
        let geojson = options.string("--geojson")
        guard output != nil || geojson != nil else {
            return fail("--output FILE or --geojson FILE (or both) is needed")
        }
        guard !(output == "-" && geojson == "-") else {
            return fail("--output and --geojson cannot both be standard output")
        }
        var users: Set<String>?
        if options.string("--user") != nil {
            // CommandLineOptions keeps the last value of a repeated option: take every occurrence from the arguments.
            users = Set(values(of: "--user", in: arguments).flatMap { $0.split(separator: ",").map(String.init) })
        }

        // The events first: a bad events file should fail before the engines run over a long recording.
        let events: [RoadSaveEvent]?
        if let eventsPath = options.string("--events") {
            do {
                events = try EventFileReader.read(path: eventsPath)
            } catch {
                return fail("\(error)")
            }
        } else {
            events = nil
        }
        let engineEventsShown = events == nil
        let platform: any Platform
        var fleetOptions = DeviceFleet.Options()
        let reader: RecordFileReader
        do {
            // The engines as `roadsave replay` runs them: the same settings, read the same way.
            let values = SettingValues(ReplayCommand.settings, options: options)
            try OrderingSettings.apply(values, to: &fleetOptions)
            platform = try PlatformSettings.platform(values)
            let inputFormat = try RecordFileFormat(option: options.string("--input-format"), path: path)
            reader = try RecordFileReader(path: path, format: inputFormat)
        } catch let error as CommandLineOptions.UsageError {
            return fail(error.message)
        } catch let error as RecordFileFormat.UnknownFormat {
            return fail("--input-format: \(error)")
        } catch {
            return fail("\(error)")
        }

        let collector = ReportCollector(users: users)
        let log = Log(category: "report", minimumLevel: .warning)
        let replayer = Replayer(platform: platform, options: fleetOptions, log: log) { event in
            if engineEventsShown { collector.add(event) }
        }
        replayer.numberName = reader.numberName
        replayer.dismissed = { device, candidate, reason in
            collector.addDismissal(device: device, candidate: candidate, reason: reason)
        }
        let skipInvalid = options.has("--skip-invalid")
        while let (number, item) = reader.next() {
            switch item {
            case .record(let record):
                collector.add(record)
                if !replayer.feedNow(record, number: number) { await replayer.settle() }
            case .invalid(let error):
                guard skipInvalid else {
                    return fail(
                        ReportInputError(
                            path: path, numberName: reader.numberName, number: number,
                            field: error.field, reason: error.reason
                        ).description
                            + " (--skip-invalid goes on without it)")
                }
                replayer.reject(error, number: number)
            }
        }
        if let failure = reader.failure { return fail(failure.description) }
        await replayer.finish()
        for event in events ?? [] { collector.add(event) }

        let reports = collector.reports()
        let engines = options.string("--platform").map { "platform \($0)" } ?? "the embedded platform"
        let sources = ReportPage.Sources(
            records: (path as NSString).lastPathComponent,
            events: options.string("--events").map { ($0 as NSString).lastPathComponent },
            engines: engines)
        var written: [String] = []
        if let output {
            let page = ReportPage(reports: reports, sources: sources, title: options.string("--title")).html()
            if let problem = write(page, to: output) { return writeFailure("--output", problem) }
            written.append("\(output) (\(page.utf8.count) bytes)")
        }
        if let geojson {
            let collection = GeoJSONWriter.featureCollection(reports)
            if let problem = write(collection, to: geojson) { return writeFailure("--geojson", problem) }
            written.append("\(geojson) (\(collection.utf8.count) bytes)")
        }
        let trips = reports.reduce(0) { $0 + $1.trips.count }
        let crashes = reports.reduce(0) { $0 + $1.crashes.count }
        let dismissed = reports.reduce(0) { $0 + $1.dismissals.count }
        Log(category: "report").info(
            "report written",
            [
                "devices": String(reports.count), "trips": String(trips), "crashes": String(crashes),
                "dismissed": String(dismissed), "invalid": String(replayer.summary.invalid),
                "wrote": written.joined(separator: ", "),
            ])
        return 0
    }

    /// Every value given to a repeated option.
    static func values(of name: String, in arguments: [String]) -> [String] {
        var found: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--" { break }
            if argument == name, index + 1 < arguments.count {
                found.append(arguments[index + 1])
                index += 1
            } else if argument.hasPrefix(name + "=") {
                found.append(String(argument.dropFirst(name.count + 1)))
            }
            index += 1
        }
        return found
    }

    /// Writes the whole text: to standard output, or to a file through a temporary file beside it renamed into
    /// place (a reader never sees half a page). The reason when it could not.
    static func write(_ text: String, to path: String) -> String? {
        let bytes = Array(text.utf8)
        if path == "-" { return writeAll(bytes, to: 1) == nil ? nil : "cannot write to standard output" }
        let temporary = path + ".tmp-\(getpid())"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard descriptor >= 0 else { return "cannot write \(path): \(String(cString: strerror(errno)))" }
        let failure = writeAll(bytes, to: descriptor)
        close(descriptor)
        if let failure {
            unlink(temporary)
            return "cannot write \(path): \(String(cString: strerror(failure)))"
        }
        guard rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            return "cannot write \(path): \(reason)"
        }
        return nil
    }

    /// The errno of a failed write, or nil.
    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32) -> Int32? {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                return errno
            }
            offset += written
        }
        return nil
    }

    private static func writeFailure(_ option: String, _ problem: String) -> Int32 {
        FileHandle.standardError.write(Data("roadsave report: \(option): \(problem)\n".utf8))
        return 1
    }

    private static func fail(_ message: String) -> Int32 {
        FileHandle.standardError.write(
            Data("roadsave report: \(message)\nRun 'roadsave report --help' for usage.\n".utf8))
        return 2
    }
}
