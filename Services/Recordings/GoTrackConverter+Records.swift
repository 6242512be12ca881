// The Go!Track phones as devices: which rides go on a phone's time line, a location per point of those, and a report
// that says what the recording lacks (no speed, accuracy, activity or steps) and what was left out.

import Foundation
import RoadSaveModel

extension GoTrackConverter {
    /// Each track's status, by id. A phone's tracks are taken in order of their first point (then id): a track whose
    /// points equal an earlier track's is a duplicate of it; one whose span overlaps a kept track's is left out (two
    /// rides cannot be under way on one phone at once, so its times are wrong); the others are kept.
    public static func statuses(_ tracks: [Track]) -> [Int: Status] {
        var result: [Int: Status] = [:]
        let withPoints = tracks.filter { !$0.points.isEmpty }
        for phoneTracks in Dictionary(grouping: withPoints, by: \.phone).values {
            var earlier: [Track] = []
            var kept: [Track] = []
            for track in phoneTracks.sorted(by: { ($0.start!, $0.id) < ($1.start!, $1.id) }) {
                if let original = earlier.first(where: { $0.points == track.points }) {
                    result[track.id] = .duplicate(of: original.id)
                } else if let other = kept.first(where: { $0.start! <= track.end! && track.start! <= $0.end! }) {
                    result[track.id] = .overlaps(other.id)
                } else {
                    result[track.id] = .kept
                    kept.append(track)
                }
                earlier.append(track)
            }
        }
        return result
    }

    /// One device per phone, in id_android order.
    public static func recordings(of contents: Contents, app: String = "recorded") -> [ConvertedRecording] {
        let status = statuses(contents.tracks)
        let byPhone = Dictionary(grouping: contents.tracks.filter { !$0.points.isEmpty }, by: \.phone)
        return byPhone.keys.sorted().map { phone in
            recording(of: byPhone[phone]!, status: status, phone: phone, app: app)
        }
    }

    /// A UTC time as the file's local time reads, for the report.
    static func local(_ t: Double) -> String {
        String(ISO8601.string(fromSeconds: t + Double(utcOffset)).prefix(19)).replacingOccurrences(of: "T", with: " ")
    }

    static func recording(of tracks: [Track], status: [Int: Status], phone: Int, app: String) -> ConvertedRecording {
        let device = DeviceID(app: app, user: user(phone))
        let kept = tracks.filter { status[$0.id] == .kept }.sorted { $0.start! < $1.start! }
        let points = kept.flatMap(\.points)
        var records: [SensorRecord] = []
        var derived: [String] = []
        var notes: [String] = []

        records.append(
            SensorRecord.capabilities(of: device, at: points.first!.t, activity: false, pedometer: false))
        derived.append(
            "capabilities: activityAvailable false, pedometerAvailable false (Go!Track records positions only), so "
                + "trips start on GPS alone")
        for point in points {
            records.append(
                SensorRecord(
                    device: device, t: point.t,
                    payload: .location(LocationFix(latitude: point.lat, longitude: point.lon))
                ))
        }
        derived.append(
            "location: one per point of the phone's rides kept (\(points.count)): latitude, longitude; no speed, "
                + "accuracy or course, which Go!Track did not record (none invented: the engines derive a speed from "
                + "the fixes' displacement)")
        derived.append(
            "times: the file's local times are Aracaju's (UTC-3, no summer time there in 2014–2016; SOURCE.txt), "
                + "written as UTC: 3 h later (this phone: \(ISO8601.string(fromSeconds: points.first!.t)) to "
                + "\(ISO8601.string(fromSeconds: points.last!.t)))")

        let modes = Dictionary(grouping: kept, by: \.mode).mapValues(\.count)
        notes.append(
            "phone \(phone): \(tracks.count) track\(tracks.count == 1 ? "" : "s"), \(kept.count) kept ("
                + modes.keys.sorted().map { "\(modes[$0]!) \($0)" }.joined(separator: ", ")
                + "), one after another in time order")
        for track in tracks.sorted(by: { $0.id < $1.id }) {
            switch status[track.id] {
            case .duplicate(let original):
                notes.append(
                    "track \(track.id) left out: every point (\(track.points.count)) identical to track \(original)'s, "
                        + "the same ride uploaded again")
            case .overlaps(let other):
                notes.append(
                    "track \(track.id) left out: its \(track.points.count) points from \(local(track.start!)) to "
                        + "\(local(track.end!)) local overlap track \(other)'s (\(local(tracks.first { $0.id == other }!.start!)) "
                        + "onwards): one phone cannot be on two rides at once, so its times cannot all be right, and "
                        + "the real ones are unknown")
            default:
                break
            }
            if track.repeatedPoints > 0 {
                notes.append(
                    "track \(track.id): \(track.repeatedPoints) point row\(track.repeatedPoints == 1 ? "" : "s") "
                        + "identical to the row before (time and position), the same reading written twice: dropped")
            }
            if track.outOfOrderPoints > 0 {
                notes.append("track \(track.id): \(track.outOfOrderPoints) points earlier than the one before: sorted")
            }
        }
        var intervals: [Double] = []
        for track in kept {
            intervals += zip(track.points.dropFirst(), track.points).map { $0.t - $1.t }
        }
        intervals.sort()
        if let longest = intervals.last {
            notes.append(
                "fix interval within a ride: median \(decimal(intervals[intervals.count / 2], 1)) s, longest "
                    + "\(decimal(longest, 0)) s")
        }
        let shared = Set(points.map(\.t)).count
        if shared < points.count {
            notes.append("\(points.count - shared) fixes share a time with another fix: kept as separate records")
        }
        notes.append("GPS Trajectories (Go!Track), UCI Machine Learning Repository, CC BY 4.0")

        return ConvertedRecording(
            dataset: .gotrack, sourceFile: "\(pointsFile) phone \(phone)", device: device, records: records,
            label: modes.keys.sorted().joined(separator: " and "), derived: derived, notes: notes)
    }
}
