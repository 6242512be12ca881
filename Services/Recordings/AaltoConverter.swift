// Aalto TrafficSense public-transport dataset (aalto-trafficsense-helsinki/) → records: one device per phone.
// Eight researchers' Android phones in Helsinki between 09:00 and 16:00 local time on 26 August 2016, seven of them riding
// as many buses, trams, metros and trains as they could, some driving. `csv/device_data.csv` holds each phone's fused
// location with its accuracy and Google activity recognition's top three; `csv/manual_log.csv` the legs they logged by
// hand; `csv/device_models.csv` the phones. Times carry no zone: they are Helsinki's summer time, EEST (UTC+3).
//
// device_data.csv, not device_data_filtered.csv: the filtered file drops the periods the authors judged not moving and
// replaces the classifier's readings with the activity their filter decided afterwards, with the whole day in view,
// and it has no accuracy. A phone running RoadSave has the raw readings only, which is what is measured here.

import Foundation
import RoadSaveModel

public enum AaltoConverter {
    /// EEST, seconds east of UTC: the CSV times are local (SOURCE.txt; the README's "timestamp without timezone").
    public static let utcOffset = 3 * 3600

    /// One row of device_data.csv.
    public struct Sample: Sendable, Equatable {
        public var t: Double
        public var deviceID: Int
        public var lat: Double
        public var lon: Double
        /// The fused location's accuracy radius, metres (nil when the row has none).
        public var accuracy: Double?
        /// Google's top three, most confident first (fewer when the row leaves some out).
        public var activities: [Activity]
        /// The file's line, for the report.
        public var line: Int
    }

    /// One of a row's activities as Google wrote it: a DetectedActivity name and a confidence 0–100.
    public struct Activity: Sendable, Equatable {
        public var name: String
        public var percent: Int
    }

    /// One row of manual_log.csv: a ride in a vehicle, departure to arrival.
    public struct Leg: Sendable, Equatable {
        public var deviceID: Int
        /// manual_log.csv's line the row starts on.
        public var line: Int
        /// BUS, TRAM, SUBWAY, TRAIN or CAR.
        public var lineType: String
        public var lineName: String
        /// vehicle_dep_time and vehicle_arr_time, UTC seconds.
        public var start: Double
        public var end: Double
        public var departureStop: String
        public var arrivalStop: String

        /// The mode as the quality tool names modes across datasets: bus, tram, metro, train, car.
        public var mode: String { lineType == "SUBWAY" ? "metro" : lineType.lowercased() }
        public var user: String { AaltoConverter.user(deviceID) }
    }

    /// Everything the converter reads from the dataset's files.
    public struct Contents: Sendable, Equatable {
        public var samples: [Sample] = []
        /// device_models.csv: the phone's model by device_id.
        public var models: [Int: String] = [:]
        public var legs: [Leg] = []
        public var skipped = SkippedRows()

        public init() {}
    }

    static let samplesFile = "device_data.csv"
    static let modelsFile = "device_models.csv"
    static let legsFile = "manual_log.csv"
    static let lineTypes = ["BUS", "TRAM", "SUBWAY", "TRAIN", "CAR"]

    /// The device's clientUserID.
    public static func user(_ deviceID: Int) -> String { "aalto-\(deviceID)" }

    /// The folder holding the CSV files: the dataset's folder (its `csv/`) or that `csv/` folder itself.
    static func csvFolder(_ folder: URL) throws -> URL {
        for candidate in [folder.appendingPathComponent("csv"), folder]
        where FileManager.default.fileExists(atPath: candidate.appendingPathComponent(samplesFile).path) {
            return candidate
        }
        throw RecordingError.malformed(
            file: folder.path,
            reason: "no \(samplesFile) in it or in its csv/ folder "
                + "(aalto takes the dataset's folder, as github.com/aalto-trafficsense/public-transport-dataset has it)"
        )
    }

    /// Reads the three files of `folder` (device_models.csv may be absent: the phones are then unnamed).
    public static func read(folder: URL) throws -> Contents {
        let csv = try csvFolder(folder)
        func text(_ name: String) throws -> String { try RecordingFile.text(of: csv.appendingPathComponent(name)) }
        var contents = Contents()
        (contents.samples, contents.skipped) = try parseSamples(try text(samplesFile), file: samplesFile)
        if FileManager.default.fileExists(atPath: csv.appendingPathComponent(modelsFile).path) {
            let (models, skipped) = try parseModels(try text(modelsFile), file: modelsFile)
            contents.models = models
            contents.skipped.append(contentsOf: skipped)
        }
        let (legs, skipped) = try parseLegs(try text(legsFile), file: legsFile)
        contents.legs = legs
        contents.skipped.append(contentsOf: skipped)
        return contents
    }

    /// Every phone of `folder` as its own device (user `aalto-<device_id>`), with the rows skipped, named by file and
    /// line, and the logged legs as CSV for `--legs`.
    public static func convert(folder: URL, app: String = "recorded") throws
        -> (recordings: [ConvertedRecording], skipped: [String], legsCSV: String)
    {
        let contents = try read(folder: folder)
        guard !contents.samples.isEmpty else {
            throw RecordingError.malformed(file: samplesFile, reason: "no readable rows")
        }
        return (recordings(of: contents, app: app), contents.skipped.lines(), legsCSV(contents.legs))
    }

    /// The logged legs, one CSV line each (the header first), for `scripts/quality.py`: the device's user, the mode
    /// (SUBWAY as metro), the line type and name as logged, departure and arrival in UTC seconds, the stops, and the
    /// leg's line in manual_log.csv.
    public static func legsCSV(_ legs: [Leg]) -> String {
        var lines = ["user,mode,line_type,line_name,start_ts,end_ts,departure_stop,arrival_stop,log_line"]
        for leg in legs {
            lines.append(
                [
                    leg.user, leg.mode, leg.lineType, CSVTable.field(leg.lineName), String(format: "%.3f", leg.start),
                    String(format: "%.3f", leg.end), CSVTable.field(leg.departureStop),
                    CSVTable.field(leg.arrivalStop), String(leg.line),
                ]
                .joined(separator: ","))
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
