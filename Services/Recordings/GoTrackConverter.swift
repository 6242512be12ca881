// Go!Track GPS trajectories (gotrack-aracaju/; the UCI Machine Learning Repository's "GPS Trajectories") → records: one
// device per phone. 163 rides recorded by the Go!Track Android app on 28 phones in Aracaju, Brazil, 2014–2016, each
// started and stopped by its rider: `go_track_tracks.csv` has a row per ride (id, id_android: the phone, car_or_bus:
// 1 car, 2 bus, linha: the bus line where given), `go_track_trackspoints.csv` its positions (latitude, longitude,
// track_id, time in local time, UTC-3). Positions only: no speed, accuracy, course, activity or steps.
//
// A phone's rides are one device, in time order, so the same phone's car and bus rides meet the engines as one
// phone's days. Some rides cannot be put on a phone's time line as they are: 17 are another ride uploaded again
// (every point identical), and 13 restart their clock at an earlier ride's first time although they continue where
// that ride ends (the app's segments of one journey): their times cannot be right, and interleaving them with the
// other ride would teleport the phone every few seconds. Both are left out of the records (not repaired: the real
// times are unknown) and marked in the legs, so the quality tool scores only rides that are on the phone's time line.

import Foundation
import RoadSaveModel

public enum GoTrackConverter {
    /// Aracaju's time, seconds east of UTC: UTC-3, with no summer time in Sergipe in 2014–2016 (SOURCE.txt).
    public static let utcOffset = -3 * 3600

    /// One row of go_track_trackspoints.csv.
    public struct Point: Sendable, Equatable, Hashable {
        public var t: Double
        public var lat: Double
        public var lon: Double
    }

    /// One row of go_track_tracks.csv with its points.
    public struct Track: Sendable, Equatable {
        public var id: Int
        /// id_android: the phone.
        public var phone: Int
        /// car or bus (car_or_bus 1 or 2).
        public var mode: String
        /// linha: the bus line where the rider gave one ("carro" on some car rides).
        public var line: String
        /// In time order; a row identical to the one before it in the file is one point (see `repeatedPoints`).
        public var points: [Point] = []
        /// Point rows identical to the one before them (time and position): the same reading written twice, dropped.
        public var repeatedPoints = 0
        /// Point rows earlier than the one before them: sorted.
        public var outOfOrderPoints = 0

        public var user: String { GoTrackConverter.user(phone) }
        public var start: Double? { points.map(\.t).min() }
        public var end: Double? { points.map(\.t).max() }
    }

    /// Whether a track's points are in its phone's records.
    public enum Status: Sendable, Equatable, CustomStringConvertible {
        case kept
        /// Every point identical to an earlier track's: the same ride uploaded again.
        case duplicate(of: Int)
        /// Its time span overlaps a track of the same phone already kept, with other points.
        case overlaps(Int)

        public var description: String {
            switch self {
            case .kept: return "kept"
            case .duplicate(let other): return "duplicate of \(other)"
            case .overlaps(let other): return "overlaps \(other)"
            }
        }
    }

    /// Everything the converter reads from the dataset's two files.
    public struct Contents: Sendable, Equatable {
        /// By id order.
        public var tracks: [Track] = []
        public var skipped = SkippedRows()
    }

    static let pointsFile = "go_track_trackspoints.csv"
    static let tracksFile = "go_track_tracks.csv"

    /// The device's clientUserID.
    public static func user(_ phone: Int) -> String { "gotrack-\(phone)" }

    /// `name` or `name.gz` in `folder`, whichever is there.
    static func file(_ name: String, in folder: URL) throws -> URL {
        for candidate in [name, name + ".gz"].map({ folder.appendingPathComponent($0) })
        where FileManager.default.fileExists(atPath: candidate.path) {
            return candidate
        }
        throw RecordingError.malformed(
            file: folder.path, reason: "no \(name) (or \(name).gz) in it: gotrack takes the folder of the two files")
    }

    public static func read(folder: URL) throws -> Contents {
        let tracks = try RecordingFile.text(of: try file(tracksFile, in: folder))
        let points = try RecordingFile.text(of: try file(pointsFile, in: folder))
        return try parse(tracks: tracks, points: points)
    }

    /// Every phone of `folder` as its own device (user `gotrack-<id_android>`), with the rows skipped, named by file
    /// and line, and a leg per track as CSV for `--legs`.
    public static func convert(folder: URL, app: String = "recorded") throws
        -> (recordings: [ConvertedRecording], skipped: [String], legsCSV: String)
    {
        let contents = try read(folder: folder)
        guard contents.tracks.contains(where: { !$0.points.isEmpty }) else {
            throw RecordingError.malformed(file: pointsFile, reason: "no readable point of a known track")
        }
        return (recordings(of: contents, app: app), contents.skipped.lines(), legsCSV(contents))
    }

    /// One leg per track with points, in id order, for `scripts/quality.py`: the phone's user, car or bus, the first
    /// and last point's time (UTC seconds), the track, its number of distinct fixes, its duration, the bus line as
    /// given, and whether its points are in the records (kept, duplicate of N, overlaps N).
    public static func legsCSV(_ contents: Contents) -> String {
        let status = statuses(contents.tracks)
        var lines = ["user,mode,start_ts,end_ts,track_id,fixes,duration_s,line,status"]
        for track in contents.tracks {
            guard let start = track.start, let end = track.end else { continue }
            lines.append(
                [
                    track.user, track.mode, String(format: "%.3f", start), String(format: "%.3f", end),
                    String(track.id), String(track.points.count), String(format: "%.0f", end - start),
                    CSVTable.field(track.line), status[track.id]?.description ?? "",
                ]
                .joined(separator: ","))
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
