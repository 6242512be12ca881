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
        var out = "", err = ""
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
        for option in ["--app", "--user", "--derive-activity", "--trial", "--output", "phone-drops", "escooter"] {
            #expect(ConvertCommand.usage.contains(option))
        }
    }

    @Test(arguments: [
        (["tmd"], "missing FILE"),
        ([], "missing DATASET"),
        (["gpx", "a.gpx"], "unknown DATASET 'gpx'"),
        (["tmd", "a.csv.gz", "--speed", "3"], "unknown option --speed"),
        (["tmd", "a.csv.gz", "--app"], "option --app needs a value"),
        (["tmd", "a.csv.gz", "--user="], "option --user needs a value"),
        (["tmd", "a.csv.gz", "--trial", "fall_3"], "--trial applies only to the phone-drops dataset"),
        (["escooter", "a.tsv.gz", "--derive-activity"], "--derive-activity applies only to the cbs dataset"),
        (["tmd", "a.csv.gz", "b.csv.gz"], "unexpected argument 'b.csv.gz'"),
        (["tmd", "/nonexistent/sensorfile_x_Car_1.csv.gz"], "/nonexistent/sensorfile_x_Car_1.csv.gz: no such file"),
        (["cbs", "/"], "/: it is a directory"),
    ])
    func badArgumentsExitTwoAndSayWhy(arguments: [String], message: String) {
        let result = Self.run(arguments)
        #expect(result.status == 2)
        #expect(result.err.contains(message), "stderr was: \(result.err)")
        #expect(result.out.isEmpty)
    }

    @Test func fileInTheWrongFormatExitsTwo() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("roadsave-convert-\(UUID().uuidString).tsv.gz")
        try Data("not gzip".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = Self.run(["escooter", file.path])
        #expect(result.status == 2)
        #expect(result.err.contains("gzip failed on \(file.path)"), "stderr was: \(result.err)")
    }

    @Test(.enabled(if: SharedData.isAvailable, sharedDataAbsent))
    func convertsToAFileWithTheReportOnStderr() throws {
        let input = try #require(sharedFile("us-transportation-mode/raw/sensorfile_Damiano_Car_1485092954647.csv.gz"))
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("roadsave-convert-\(UUID().uuidString).ndjson")
        defer { try? FileManager.default.removeItem(at: output) }
        let result = Self.run(["convert", "tmd", input.path, "--app", "app-1", "--user=driver-7", "--output", output.path])
        #expect(result.status == 0, "stderr was: \(result.err)")
        #expect(result.out.isEmpty)
        #expect(result.err.contains("tmd sensorfile_Damiano_Car_1485092954647.csv.gz -> app app-1, user driver-7 (label Car)"))
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
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("roadsave-convert-\(UUID().uuidString)")
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
