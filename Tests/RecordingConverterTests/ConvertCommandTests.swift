// `roadsave convert`: help, errors that name the option or file, and a real conversion to a file.

import Foundation
import Recordings
import Testing

@Suite("roadsave convert")
struct ConvertCommandTests {
    struct Run {
        var status: Int32
        var out: String
        var err: String
    }

    static func run(_ arguments: [String]) -> Run {
        var out = ""
        var err = ""
        let status = ConvertCommand.run(arguments, standardOutput: { out += $0 }, standardError: { err += $0 })
        return Run(status: status, out: out, err: err)
    }

    @Test func helpPrintsUsage() {
        for arguments in [["--help"], ["convert", "-h"], ["tmd", "x.csv.gz", "--help"]] {
            let result = Self.run(arguments)
            #expect(result.status == 0)
            #expect(result.out.contains("Usage: roadsave convert DATASET FILE"))
            #expect(result.err.isEmpty)
        }
        for option in [
            "--app", "--user", "--derive-activity", "--trial", "--output", "phone-drops", "escooter",
            "envirocar", "emission", "GPS Speed km/h / 3.6", "STOPPED_WHILE_IN_VEHICLE", "ODbL",
        ] {
            #expect(ConvertCommand.usage.contains(option), "\(option)")
        }
    }

    /// The help stands alone: a user has no folder of the project's test recordings, so each dataset is named by
    /// where it is published and its licence, and no path points into such a folder.
    @Test func helpNamesEachDatasetByItsPublicSourceAndLicence() {
        let usage = ConvertCommand.usage
        #expect(!usage.contains("shared/data") && !usage.contains("../shared"))
        for (dataset, source, licence) in [
            ("tmd", "github.com/vlomonaco/US-TransportationMode", "MIT"),
            ("cbs", "github.com/essnet-ssi/geoservice-ssi", "EUPL-1.2"),
            ("phone-drops", "arXiv:2410.14172", "CC0"),
            ("escooter", "AccidDetec-Accel", "MIT"),
            ("envirocar", "enviroCar.org", "ODbL 1.0"),
            ("emission", "github.com/e-mission/e-mission-server", "BSD 3-Clause"),
            ("mobilitynet", "github.com/MobilityNet/mobilitynet-analysis-scripts", "BSD 3-Clause"),
            ("aalto", "github.com/aalto-trafficsense/public-transport-dataset", "CC BY 4.0"),
            ("gotrack", "archive.ics.uci.edu", "CC BY 4.0"),
        ] {
            guard let entry = usage.range(of: "\n  \(dataset) ") else {
                Issue.record("\(dataset) is not in the help")
                continue
            }
            let following = usage[entry.upperBound...]
            let next = following.range(of: "\n  [a-z]", options: .regularExpression)?.lowerBound ?? following.endIndex
            let text = following[..<next]
            #expect(text.contains(source) && text.contains(licence) && text.contains("FILE:"), "\(dataset): \(text)")
        }
    }

    @Test(arguments: [
        (["tmd"], "missing FILE"),
        ([], "missing DATASET"),
        (
            ["gpx", "a.gpx"],
            "unknown DATASET 'gpx': expected tmd, cbs, phone-drops, escooter, envirocar, emission, mobilitynet, aalto "
                + "or gotrack"
        ),
        (["tmd", "a.csv.gz", "--speed", "3"], "unknown option --speed"),
        (["tmd", "a.csv.gz", "--app"], "option --app needs a value"),
        (["tmd", "a.csv.gz", "--user="], "option --user needs a value"),
        (["tmd", "a.csv.gz", "--trial", "fall_3"], "--trial applies only to the phone-drops dataset"),
        (["escooter", "a.tsv.gz", "--derive-activity"], "--derive-activity applies only to the cbs dataset"),
        (["tmd", "a.csv.gz", "b.csv.gz"], "unexpected argument 'b.csv.gz'"),
        (["tmd", "/nonexistent/sensorfile_x_Car_1.csv.gz"], "/nonexistent/sensorfile_x_Car_1.csv.gz: no such file"),
        (["cbs", "/"], "/: it is a directory"),
        (["envirocar", "/nonexistent/58db5ec7.json.gz"], "/nonexistent/58db5ec7.json.gz: no such file"),
        (["emission", "/nonexistent/day.json"], "/nonexistent/day.json: no such file"),
        (["emission", "day.json", "--trial", "x"], "--trial applies only to the phone-drops dataset"),
        (
            ["tmd", "a.csv.gz", "--legs", "legs.csv"],
            "--legs applies only to the mobilitynet, aalto and gotrack datasets"
        ),
        (["aalto", "/", "--run", "x"], "--run applies only to the mobilitynet dataset"),
        (
            ["aalto", "/", "--user", "u"],
            "--user does not apply to aalto: each phone is its own device (aalto-<device_id>)"
        ),
        (["gotrack", "/", "--user", "u"], "--user does not apply to gotrack"),
        (["aalto", "/nonexistent"], "aalto takes the dataset's folder (aalto-trafficsense-helsinki/)"),
        (["gotrack", "/nonexistent/go_track_tracks.csv"], "gotrack takes the dataset's folder (gotrack-aracaju/)"),
        (["aalto", "/"], "no device_data.csv in it or in its csv/ folder"),
        (["gotrack", "/"], "no go_track_tracks.csv (or go_track_tracks.csv.gz) in it"),
        (["cbs", "a.csv.gz", "--phone", "ucb-sdb-ios-1"], "--phone applies only to the mobilitynet dataset"),
        (["mobilitynet", "/", "--user", "u"], "--user does not apply to mobilitynet"),
        (["mobilitynet", "/nonexistent"], "mobilitynet takes the dataset's folder"),
        (["mobilitynet", "/", "--run", "x"], "runs_DERIVED.csv"),
    ])
    func badArgumentsExitTwoAndSayWhy(arguments: [String], message: String) {
        let result = Self.run(arguments)
        #expect(result.status == 2)
        #expect(result.err.contains(message), "stderr was: \(result.err)")
        #expect(result.out.isEmpty)
    }

    @Test func fileInTheWrongFormatExitsTwo() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(
            "roadsave-convert-\(UUID().uuidString).tsv.gz")
        try Data("not gzip".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = Self.run(["escooter", file.path])
        #expect(result.status == 2)
        #expect(result.err.contains("gzip failed on \(file.path)"), "stderr was: \(result.err)")
    }

    /// A scratch file holding `text`, removed by the caller.
    static func temporaryFile(_ name: String, _ text: String) throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "roadsave-convert-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent(name)
        try Data(text.utf8).write(to: file)
        return file
    }

    @Test func envirocarTrackToStdoutWithItsReport() throws {
        let file = try Self.temporaryFile("58db5ec7.json", EnvirocarParsingTests.sample)
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let result = Self.run(["envirocar", file.path, "--app", "app-1"])
        #expect(result.status == 0, "stderr was: \(result.err)")
        let lines = result.out.split(separator: "\n").map(String.init)
        #expect(lines == (try RecordingConverter.envirocar(file, app: "app-1")).lines)
        checkRecords(lines, app: "app-1", user: "envirocar-58db5ec7")
        #expect(
            result.err.contains(
                "envirocar 58db5ec7.json -> app app-1, user envirocar-58db5ec7 (label Volkswagen Golf 2016 gasoline)"))
        #expect(result.err.contains("records: 1 capabilities, 4 location, 0 activity, 0 steps, 0 impact; 5 in all"))
        #expect(result.err.contains("derived: location: one per feature") && result.err.contains("OBD-II Speed"))
    }

    @Test func emissionDayToMessagePack() throws {
        let file = try Self.temporaryFile("iphone_2016-02-22.json", EmissionParsingTests.iosDay)
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let output = file.deletingLastPathComponent().appendingPathComponent("day.msgpack")
        let result = Self.run(["emission", file.path, "--output", output.path])
        #expect(result.status == 0, "stderr was: \(result.err)")
        #expect(result.err.contains("derived: activity: one per background/motion_activity reading (5:"))
        // The records as MessagePack maps (a fixmap starts with 0x8N), not NDJSON.
        let bytes = try Data(contentsOf: output)
        #expect(
            bytes.first.map { $0 & 0xF0 == 0x80 } == true,
            "first byte \(bytes.first.map { String($0, radix: 16) } ?? "none")")
    }

    @Test func badJSONExitsTwoNamingTheFileAndTheField() throws {
        let text = EnvirocarParsingTests.track([
            EnvirocarParsingTests.feature(
                time: "2017-03-28T13:59:09Z", phenomena: #""GPS Speed": {"unit": "km/h", "value": "fast"}"#)
        ])
        let file = try Self.temporaryFile("bad.json", text)
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let result = Self.run(["envirocar", file.path])
        #expect(result.status == 2)
        #expect(result.out.isEmpty)
        #expect(
            result.err.contains(
                "roadsave convert: bad.json is not in the expected format: field "
                    + #"features[0].properties.phenomenons."GPS Speed".value: expected a number, found a string"#),
            "\(result.err)")

        let day = try Self.temporaryFile("day.json", "[{\"metadata\": {\"key\": 3}}]")
        defer { try? FileManager.default.removeItem(at: day.deletingLastPathComponent()) }
        let dayResult = Self.run(["emission", day.path])
        #expect(dayResult.status == 2)
        #expect(
            dayResult.err.contains(
                "day.json is not in the expected format: field [0].metadata.key: expected a string, found a number"),
            "\(dayResult.err)")
    }

    @Test(.enabled(if: SharedData.isAvailable, sharedDataAbsent))
    func convertsToAFileWithTheReportOnStderr() throws {
        let input = try #require(sharedFile("us-transportation-mode/raw/sensorfile_Damiano_Car_1485092954647.csv.gz"))
        let output = FileManager.default.temporaryDirectory.appendingPathComponent(
            "roadsave-convert-\(UUID().uuidString).ndjson")
        defer { try? FileManager.default.removeItem(at: output) }
        let result = Self.run([
            "convert", "tmd", input.path, "--app", "app-1", "--user=driver-7", "--output", output.path,
        ])
        #expect(result.status == 0, "stderr was: \(result.err)")
        #expect(result.out.isEmpty)
        #expect(
            result.err.contains(
                "tmd sensorfile_Damiano_Car_1485092954647.csv.gz -> app app-1, user driver-7 (label Car)"))
        #expect(result.err.contains("derived: positions integrated from GPS speed"))
        let lines = try String(contentsOf: output, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(lines == (try RecordingConverter.tmd(input, app: "app-1", user: "driver-7")).lines)
        checkRecords(lines, app: "app-1", user: "driver-7")
    }

    @Test(.enabled(if: SharedData.isAvailable, sharedDataAbsent))
    func outputIsWrittenInPlaceNotReplaced() throws {
        // An atomic write (a temporary file renamed over the target) once replaced /dev/null with a plain file.
        // Writing through a symbolic link shows the difference safely: the link must survive, its target filled.
        let input = try #require(sharedFile("us-transportation-mode/raw/sensorfile_Damiano_Car_1485092954647.csv.gz"))
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "roadsave-convert-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let target = folder.appendingPathComponent("target.ndjson")
        try Data("old content that is longer than nothing\n".utf8).write(to: target)
        let link = folder.appendingPathComponent("link.ndjson")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)
        let result = Self.run(["tmd", input.path, "--output", link.path])
        #expect(result.status == 0, "stderr was: \(result.err)")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == target.path)
        let lines = try String(contentsOf: target, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == (try RecordingConverter.tmd(input)).lines.count)
    }

    @Test(.enabled(if: SharedData.isAvailable, sharedDataAbsent))
    func phoneDropTrialToStdout() throws {
        let archive = try #require(sharedFile("phone-drops/raw_data.tar.gz"))
        let result = Self.run(["phone-drops", archive.path, "--trial", "fall_3"])
        #expect(result.status == 0, "stderr was: \(result.err)")
        let lines = result.out.split(separator: "\n").map(String.init)
        checkRecords(lines, app: "recorded", user: "fall_3")
        #expect(result.err.contains("spliced into a chosen non-driving context"))

        let missing = Self.run(["phone-drops", archive.path, "--trial", "fall_99"])
        #expect(missing.status == 2)
        #expect(missing.err.contains("option --trial: no trial named fall_99"))
    }
}
