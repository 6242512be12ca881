// `roadsave convert DATASET FILE [options]`: a real recording → records (NDJSON or MessagePack) on stdout (or --output), the conversion
// report on stderr. Exit 0 on success, 2 for bad options and for files that cannot be read or converted.

import Foundation
import RecordCodecs
import RoadSaveModel
import TerminalProgress
import Wire

public enum ConvertCommand {
    public static let usage = """
        Usage: roadsave convert DATASET FILE [options]

        Converts a real recording of one of the public datasets below into NDJSON sensor records
        (docs/PROTOCOL.md §2) that `roadsave replay` and `roadsave send` read. Records go to stdout (or
        --output); the report of what was read, skipped and derived goes to stderr. A file ending in .gz
        is read through gzip; any other is read as it is.

        DATASET and FILE (each dataset by its public name, where it is published, its licence):
          tmd          US-TransportationMode (TMD), Carpineti et al., University of Bologna;
                       github.com/vlomonaco/US-TransportationMode, MIT. FILE: one raw sensor log,
                       TransportationData/_RawDataOriginal/sensorfile_<user>_<Mode>_<startms>.csv
          cbs          CBS / Eurostat Smart Survey Implementation open geolocation dataset
                       (Netherlands, 2024); github.com/essnet-ssi/geoservice-ssi, EUPL-1.2. FILE: one
                       user-day, open_geo_data/split-by-day/ssi_open_geodata-<user>-<date>.csv
          phone-drops  "Air Resistance From the Acceleration of a Falling Smartphone" (F. Saliby,
                       arXiv:2410.14172); github.com/fsaliby/Air_Resistance_From_the_Acceleration_
                       of_a_Falling_Smartphone, CC0. FILE: its raw_data.tar.gz (every trial as its own
                       device, or one with --trial)
          escooter     AccidDetec-Accel e-scooter accelerometer data; github.com/Rc-W024/
                       AccidDetec-Accel, MIT. FILE: one of its data/<name>.tsv
          envirocar    enviroCar car tracks (enviroCar.org, the app's track export, GeoJSON); ODbL 1.0
                       ("Contains enviroCar data (enviroCar.org), ODbL"). FILE: one track,
                       <track>.json: one car drive
          emission     e-mission real phone-day traces (the e-mission-server repository's
                       emission/tests/data/real_examples; github.com/e-mission/e-mission-server),
                       BSD 3-Clause. FILE: one day's trace (not its .ground_truth file)
          mobilitynet  MobilityNet SF Bay Area evaluation (e-mission "emeval");
                       github.com/MobilityNet/mobilitynet-analysis-scripts, folder bin/data,
                       BSD 3-Clause ("MobilityNet / e-mission project, (c) 2019 e-mission"). FILE: that
                       folder, its readings gzip-compressed (<phone>/<spec>/background~location/
                       <file>.json.gz, and background~motion_activity), with two CSV files derived
                       from it: runs_DERIVED.csv (spec, run, phone, role, sensing_config, file: a row
                       per phone's run) and legs_DERIVED.csv (spec, run, trip_id, leg_id, leg_type,
                       mode, start_ts, end_ts: the legs of its evaluation transitions, as the
                       repository's emeval/input/phone_view.py computes them). One device per phone
                       and run, user <phone>.<run start> (ios-1.1564174916); --run and --phone choose
                       some, --legs writes their labelled legs
          aalto        Aalto TrafficSense public-transport dataset (Helsinki, 26 August 2016);
                       github.com/aalto-trafficsense/public-transport-dataset, CC BY 4.0 ("Aalto
                       TrafficSense public-transport dataset, Aalto University, CC BY 4.0"). FILE: the
                       repository's folder (or its csv/ folder) with csv/device_data.csv (each phone's
                       fused location and Google activity recognition's top three), csv/device_models.csv
                       and csv/manual_log.csv (the legs logged by hand). One device per phone, user
                       aalto-<device_id>; --legs writes the logged legs
          gotrack      Go!Track GPS trajectories (Aracaju, Brazil, 2014-2016): the UCI Machine Learning
                       Repository's "GPS Trajectories" (archive.ics.uci.edu), CC BY 4.0 ("GPS
                       Trajectories (Go!Track), UCI Machine Learning Repository, CC BY 4.0"). FILE: the
                       folder with go_track_tracks.csv (a row per ride: id, id_android, car_or_bus, linha)
                       and go_track_trackspoints.csv (latitude, longitude, track_id, time), either may be
                       gzip-compressed. One device per phone, user gotrack-<id_android>; --legs writes a
                       leg per ride

        Options:
          --app ID            applicationID written in every record (default: recorded)
          --user ID           clientUserID (default: from the file name or trial name; for phone-drops
                              without --trial it is a prefix: ID-fall_3, ID-fall_4, ...); not for
                              mobilitynet, aalto and gotrack, which name each phone's device
          --derive-activity   cbs only: add activity records derived from the travel-diary labels
          --trial NAME        phone-drops only: convert one trial, e.g. fall_3 or up_and_down_7
          --run NAME          mobilitynet only: one run (its name in runs_DERIVED.csv, e.g.
                              1564174916_1564183089)
          --phone NAME        mobilitynet only: one phone (ucb-sdb-ios-1 ... ucb-sdb-android-4)
          --legs FILE         mobilitynet, aalto and gotrack: write the labelled legs of the devices
                              converted as CSV. mobilitynet: user, os, role, config, spec, run, trip_id,
                              leg_id, leg_type, mode, start_ts, end_ts. aalto: user, mode (bus, tram,
                              metro, train, car), line_type, line_name, start_ts, end_ts, departure_stop,
                              arrival_stop, log_line. gotrack: user, mode (car, bus), start_ts, end_ts,
                              track_id, fixes, duration_s, line, status (kept, duplicate of N, overlaps N)
          --output FILE       write the records to FILE instead of stdout
          --output-format F   ndjson or msgpack (the records' MessagePack maps one after another, which
                              `roadsave replay` reads fastest); default: msgpack when FILE ends in .msgpack,
                              else ndjson
          --no-progress       no progress line on standard error (phone-drops: trials read, trials/s, percent,
                              time left; the single-file datasets take about a second and show none); it is
                              shown only when standard error is a terminal
          -h, --help          show this help

        Impacts are cut from every accelerometer stream with the gateway's trigger (|a| > 2 g, raw
        window -1 s..+2 s around the peak).

        envirocar: a location per point with a time and coordinates; speed = GPS Speed km/h / 3.6,
        hacc = GPS Accuracy (metres, though the track labels it %), course = GPS Bearing (a negative
        speed or a bearing outside 0..360, the app's interpolation overshooting, is left unknown).
        OBD-II Speed and the engine readings are not used. Capabilities: no activity classifier, no
        pedometer (the app records neither), so trips start on GPS alone.

        emission: a location per background/location entry (hacc = accuracy; speed = sensed_speed
        and course = heading, except iOS's -1 and Android's 0, which mean none: unknown); an
        activity per background/motion_activity reading: IN_VEHICLE and STOPPED_WHILE_IN_VEHICLE
        -> automotive, BICYCLING -> cycling, ON_FOOT and WALKING -> walking, RUNNING -> running,
        STILL -> stationary, UNKNOWN, TILTING, NONE and AIR_OR_HSR -> unknown; confidence: Android
        percent >= 75 high, >= 50 medium, else low; iOS its own low/medium/high. No pedometer.
        Readings uploaded twice are dropped.

        mobilitynet: each phone's run as an e-mission trace (above): its background~location and
        background~motion_activity files merged (a phone may lack either: duty-cycled and power-control
        phones); the course is the fixes' bearing. Phone runs with no readings at all are skipped and
        named. MobilityNet data (MobilityNet / e-mission project, (c) 2019 e-mission), BSD 3-Clause.

        aalto: a location per device_data.csv row (hacc = accuracy; no speed or course: the client
        recorded none) and an activity per row from activity_1 and activity_1_conf, Google's most
        probable activity, mapped as for tmd: IN_VEHICLE -> automotive, ON_BICYCLE -> cycling,
        ON_FOOT and WALKING -> walking, RUNNING -> running, STILL -> stationary, TILTING and
        UNKNOWN -> unknown; confidence >= 75 high, >= 50 medium, else low. Capabilities: activity,
        no pedometer. The files' times are local, EEST (UTC+3), and written as UTC. device_data.csv,
        not device_data_filtered.csv: the filtered file has the authors' after-the-fact activity
        and no accuracy. Rows that cannot be read are skipped and named by file and line.

        gotrack: a location per point (latitude, longitude; no speed, accuracy or course, none
        invented), each phone's rides one after another in time order. Capabilities: no activity
        classifier, no pedometer, so trips start on GPS alone. The file's times are local, UTC-3,
        and written as UTC. A ride whose points repeat an earlier ride's (uploaded twice), or whose
        times overlap a ride already kept on the same phone (its clock restarted), is left out of
        the records and marked in --legs. Rows that cannot be read are skipped and named by file
        and line.

        Exit status: 0 converted, 2 bad option, unreadable file or one not in its dataset's format
        (the message names the file and the field).
        """

    /// The datasets converted from a folder rather than a file; these also write their labelled legs (--legs).
    static let folderDatasets: Set<Dataset> = [.mobilitynet, .aalto, .gotrack]

    /// "tmd, cbs, phone-drops, escooter, envirocar, emission, mobilitynet, aalto or gotrack", for the errors.
    static let datasetNames =
        Dataset.allCases.dropLast().map(\.rawValue).joined(separator: ", ")
        + " or " + Dataset.allCases.last!.rawValue

    /// `arguments` are those after `convert` (a leading "convert" is skipped). Writes to the process's stdout/stderr.
    public static func run(_ arguments: [String]) -> Int32 {
        run(
            arguments, standardOutput: { FileHandle.standardOutput.write(Data($0.utf8)) },
            standardError: { FileHandle.standardError.write(Data($0.utf8)) })
    }

    /// The same, with the two output streams supplied by the caller (for tests).
    public static func run(_ arguments: [String], standardOutput: (String) -> Void, standardError: (String) -> Void)
        -> Int32
    {
        func fail(_ message: String) -> Int32 {
            standardError("roadsave convert: \(message)\nRun 'roadsave convert --help' for usage.\n")
            return 2
        }
        var arguments = arguments[...]
        if arguments.first == "convert" { arguments = arguments.dropFirst() }
        if arguments.contains("--help") || arguments.contains("-h") {
            standardOutput(usage + "\n")
            return 0
        }

        var positional: [String] = []
        var app = "recorded"
        var user: String?
        var trial: String?
        var output: String?
        var deriveActivity = false
        var run: String?
        var phone: String?
        var legsOutput: String?
        var outputFormatOption: String?
        var showProgress = true
        var index = arguments.startIndex
        while index < arguments.endIndex {
            var argument = arguments[index]
            index += 1
            guard argument.hasPrefix("-"), argument != "-" else {
                positional.append(argument)
                continue
            }
            // `--name value` and `--name=value` are both accepted.
            var inlineValue: String?
            if let equals = argument.firstIndex(of: "="), argument.hasPrefix("--") {
                inlineValue = String(argument[argument.index(after: equals)...])
                argument = String(argument[..<equals])
            }
            func value() -> String? {
                if let inlineValue { return inlineValue }
                guard index < arguments.endIndex else { return nil }
                defer { index += 1 }
                return arguments[index]
            }
            switch argument {
            case "--app", "--user", "--trial", "--output", "--output-format", "--run", "--phone", "--legs":
                guard let given = value(), !given.isEmpty else { return fail("option \(argument) needs a value") }
                switch argument {
                case "--app": app = given
                case "--user": user = given
                case "--trial": trial = given
                case "--output-format": outputFormatOption = given
                case "--run": run = given
                case "--phone": phone = given
                case "--legs": legsOutput = given
                default: output = given
                }
            case "--derive-activity":
                guard inlineValue == nil else { return fail("option --derive-activity takes no value") }
                deriveActivity = true
            case ProgressMeter.flag:
                guard inlineValue == nil else { return fail("option \(ProgressMeter.flag) takes no value") }
                showProgress = false
            default:
                return fail("unknown option \(argument)")
            }
        }

        guard let datasetName = positional.first else { return fail("missing DATASET (\(datasetNames))") }
        guard let dataset = Dataset(rawValue: datasetName) else {
            return fail("unknown DATASET '\(datasetName)': expected \(datasetNames)")
        }
        guard positional.count >= 2 else { return fail("missing FILE for dataset \(datasetName)") }
        guard positional.count == 2 else { return fail("unexpected argument '\(positional[2])'") }
        if deriveActivity, dataset != .cbs { return fail("option --derive-activity applies only to the cbs dataset") }
        if trial != nil, dataset != .phoneDrops {
            return fail("option --trial applies only to the phone-drops dataset")
        }
        for (option, given) in [("--run", run), ("--phone", phone)] where given != nil && dataset != .mobilitynet {
            return fail("option \(option) applies only to the mobilitynet dataset")
        }
        if legsOutput != nil, !Self.folderDatasets.contains(dataset) {
            return fail("option --legs applies only to the mobilitynet, aalto and gotrack datasets")
        }
        if user != nil, dataset == .mobilitynet {
            return fail(
                "option --user does not apply to mobilitynet: each phone's run is its own device (<phone>.<run>)")
        }
        if user != nil, dataset == .aalto || dataset == .gotrack {
            return fail(
                "option --user does not apply to \(dataset.rawValue): each phone is its own device "
                    + "(\(dataset == .aalto ? "aalto-<device_id>" : "gotrack-<id_android>"))")
        }

        let outputFormat: RecordFileFormat
        do {
            outputFormat = try RecordFileFormat(option: outputFormatOption, path: output)
        } catch {
            return fail("option --output-format: \(error)")
        }

        let file = URL(fileURLWithPath: positional[1])
        let recordings: [ConvertedRecording]
        // Written to the terminal's status line directly; cleared before any output or report.
        var progress = ProgressMeter.standardError(
            label: "convert", noun: "trials", turnedOff: !showProgress,
            writesStandardOutput: false)
        var skipped: [String] = []
        var legsText = ""
        do {
            if Self.folderDatasets.contains(dataset) {
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: file.path, isDirectory: &isDirectory),
                    isDirectory.boolValue
                else {
                    return fail("\(file.path): \(dataset.rawValue) takes the dataset's folder (\(dataset.folder)/)")
                }
            } else {
                try RecordingFile.checkReadable(file)
            }
            switch dataset {
            case .tmd: recordings = [try RecordingConverter.tmd(file, app: app, user: user)]
            case .cbs:
                recordings = [try RecordingConverter.cbs(file, app: app, user: user, deriveActivity: deriveActivity)]
            case .phoneDrops:
                recordings = try RecordingConverter.phoneDrops(file, app: app, user: user, trial: trial) {
                    done, total in
                    if done == 0 { progress.startPhase(noun: "trials", total: total) } else { progress.advance() }
                }
            case .escooter: recordings = [try RecordingConverter.escooter(file, app: app, user: user)]
            case .envirocar: recordings = [try RecordingConverter.envirocar(file, app: app, user: user)]
            case .emission: recordings = [try RecordingConverter.emission(file, app: app, user: user)]
            case .mobilitynet:
                (recordings, skipped) = try RecordingConverter.mobilitynet(file, app: app, run: run, phone: phone) {
                    done, total in
                    if done == 0 { progress.startPhase(noun: "phone runs", total: total) } else { progress.advance() }
                }
                if legsOutput != nil {
                    let converted = Set(recordings.map(\.user))
                    let phoneRuns = try MobilityNetConverter.phoneRuns(in: file).filter { converted.contains($0.user) }
                    legsText = MobilityNetConverter.legsCSV(try MobilityNetConverter.legs(in: file), for: phoneRuns)
                }
            case .aalto: (recordings, skipped, legsText) = try RecordingConverter.aalto(file, app: app)
            case .gotrack: (recordings, skipped, legsText) = try RecordingConverter.gotrack(file, app: app)
            }
            if let legsOutput {
                do {
                    try legsText.write(toFile: legsOutput, atomically: false, encoding: .utf8)
                } catch {
                    return fail("option --legs: cannot write \(legsOutput): \(error.localizedDescription)")
                }
            }
            progress.finish()
        } catch let error as RecordingError {
            progress.finish()
            if case .unknownTrial = error { return fail("option --trial: \(error)") }
            return fail("\(error)")
        } catch {
            progress.finish()
            return fail("\(file.path): \(error)")
        }

        let lines = recordings.count == 1 ? recordings[0].lines : RecordOrder.merged(recordings)
        let text = lines.joined(separator: "\n") + (lines.isEmpty ? "" : "\n")
        var bytes = Data(text.utf8)
        if outputFormat == .msgpack {
            // The lines as the records they are, each as its MessagePack map (every value exact as float64).
            var packed: [UInt8] = []
            for (index, line) in lines.enumerated() {
                do throws(RecordError) {
                    packed += MessagePack.encode(record: try RecordDecoding.record(fromJSON: Array(line.utf8)))
                } catch {
                    return fail("record \(index + 1) of the conversion is not a valid record (\(error))")
                }
            }
            bytes = Data(packed)
        }
        if let output {
            // Written in place with open(2), never by renaming a temporary file over the target: --output may be
            // /dev/null, a FIFO or /dev/stdout, which an atomic replace would destroy.
            let descriptor = open(output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            guard descriptor >= 0 else {
                return fail("option --output: cannot write \(output): \(String(cString: strerror(errno)))")
            }
            let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
            do {
                try handle.write(contentsOf: bytes)
                try handle.close()
            } catch {
                return fail("option --output: cannot write \(output): \(error.localizedDescription)")
            }
        } else if outputFormat == .msgpack {
            FileHandle.standardOutput.write(bytes)
        } else {
            standardOutput(text)
        }
        for recording in recordings { standardError(recording.report.text + "\n") }
        for line in skipped { standardError("skipped: \(line)\n") }
        if recordings.count > 1 {
            standardError("\(recordings.count) devices, \(lines.count) records in all, merged in time order\n")
        }
        return 0
    }
}
