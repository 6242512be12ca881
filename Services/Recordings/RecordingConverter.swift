// One entry point per dataset of ../shared/data. Each returns the device's NDJSON lines and a report of what was derived;
// the per-dataset enums (TMDConverter, CBSConverter, PhoneDropConverter, EscooterConverter, EnvirocarConverter,
// EmissionConverter, MobilityNetConverter, AaltoConverter, GoTrackConverter) hold the parsing.

import Foundation

public enum RecordingConverter {
    /// us-transportation-mode/raw/sensorfile_<user>_<Mode>_<startms>.csv.gz; user defaults to `<user>_<Mode>_<startms>`.
    public static func tmd(_ file: URL, app: String = "recorded", user: String? = nil) throws -> ConvertedRecording {
        try TMDConverter.convert(file: file, app: app, user: user)
    }

    /// cbs-smart-survey-gps/split-by-day/ssi_open_geodata-<user>-<date>.csv.gz; user defaults to `<user>-<date>`.
    public static func cbs(_ file: URL, app: String = "recorded", user: String? = nil, deriveActivity: Bool = false)
        throws
        -> ConvertedRecording
    {
        try CBSConverter.convert(file: file, app: app, user: user, deriveActivity: deriveActivity)
    }

    /// phone-drops/raw_data.tar.gz: every trial (or the one named) as its own device; user defaults to the trial name,
    /// a given user becomes a prefix (`<user>-fall_3`) when several trials are converted. `trialRead(done, total)`
    /// is called with 0 done before the first trial and after each trial read from the archive.
    public static func phoneDrops(
        _ archive: URL, app: String = "recorded", user: String? = nil, trial: String? = nil,
        trialRead: (_ done: Int, _ total: Int) -> Void = { _, _ in }
    ) throws
        -> [ConvertedRecording]
    {
        try PhoneDropConverter.convert(archive: archive, app: app, user: user, trial: trial, trialRead: trialRead)
    }

    /// escooter-impacts/data/<name>.tsv.gz; user defaults to `escooter-<name>`.
    public static func escooter(_ file: URL, app: String = "recorded", user: String? = nil) throws -> ConvertedRecording
    {
        try EscooterConverter.convert(file: file, app: app, user: user)
    }

    /// envirocar-car-tracks/<source>/<track>.json.gz (one enviroCar track, .json or .json.gz); user defaults to
    /// `envirocar-<track>`.
    public static func envirocar(_ file: URL, app: String = "recorded", user: String? = nil) throws
        -> ConvertedRecording
    {
        try EnvirocarConverter.convert(file: file, app: app, user: user)
    }

    /// emission-activity-traces/<day>.json.gz (one e-mission day, .json or .json.gz); user defaults to `emission-<day>`.
    public static func emission(_ file: URL, app: String = "recorded", user: String? = nil) throws -> ConvertedRecording
    {
        try EmissionConverter.convert(file: file, app: app, user: user)
    }

    /// mobilitynet-whole-journeys/ (the folder): every phone's run (or those of `run` and `phone`) as its own device,
    /// user `<phone>.<run start>`; the phone runs with no readings are named in `skipped`. `phoneRead(done, total)` is
    /// called with 0 done before the first and after each phone run read.
    public static func mobilitynet(
        _ folder: URL, app: String = "recorded", run: String? = nil, phone: String? = nil,
        phoneRead: (_ done: Int, _ total: Int) -> Void = { _, _ in }
    ) throws
        -> (recordings: [ConvertedRecording], skipped: [String])
    {
        try MobilityNetConverter.convert(folder: folder, app: app, run: run, phone: phone, phoneRead: phoneRead)
    }

    /// aalto-trafficsense-helsinki/ (the folder, or its csv/ folder): every phone as its own device, user
    /// `aalto-<device_id>`; the rows that cannot be read, by file and line, in `skipped`; manual_log.csv's legs as CSV
    /// in `legsCSV` (for `--legs`).
    public static func aalto(_ folder: URL, app: String = "recorded") throws
        -> (recordings: [ConvertedRecording], skipped: [String], legsCSV: String)
    {
        try AaltoConverter.convert(folder: folder, app: app)
    }

    /// gotrack-aracaju/ (the folder of go_track_tracks.csv and go_track_trackspoints.csv, either gzip-compressed or
    /// not): every phone as its own device, user `gotrack-<id_android>`, its rides in time order; the rows that cannot
    /// be read, by file and line, in `skipped`; a leg per track as CSV in `legsCSV` (for `--legs`).
    public static func gotrack(_ folder: URL, app: String = "recorded") throws
        -> (recordings: [ConvertedRecording], skipped: [String], legsCSV: String)
    {
        try GoTrackConverter.convert(folder: folder, app: app)
    }
}
