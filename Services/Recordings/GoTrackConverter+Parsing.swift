// Reading the two Go!Track files: a header that lacks a column the converter needs stops the conversion; a row that
// cannot be read, or a point of a track go_track_tracks.csv does not have, is skipped and named by file and line.

import Foundation

extension GoTrackConverter {
    /// go_track_tracks.csv and go_track_trackspoints.csv as text.
    public static func parse(tracks tracksText: String, points pointsText: String) throws -> Contents {
        var contents = Contents()
        let tracks = try CSVTable(text: tracksText, file: tracksFile, required: ["id", "id_android", "car_or_bus"])
        let (idColumn, phoneColumn, modeColumn) = (
            tracks.index(of: "id")!, tracks.index(of: "id_android")!, tracks.index(of: "car_or_bus")!
        )
        let lineColumn = tracks.index(of: "linha")
        var byID: [Int: Int] = [:]
        for row in tracks.rows {
            guard row.fields.count == tracks.columns.count else {
                contents.skipped.add(
                    file: tracksFile, line: row.line,
                    "\(row.fields.count) fields, the header has \(tracks.columns.count)")
                continue
            }
            guard let id = Int(row.fields[idColumn]) else {
                contents.skipped.add(file: tracksFile, line: row.line, "id \"\(row.fields[idColumn])\" is not a number")
                continue
            }
            guard byID[id] == nil else {
                contents.skipped.add(file: tracksFile, line: row.line, "track \(id) is listed twice")
                continue
            }
            guard let phone = Int(row.fields[phoneColumn]), phone >= 0 else {
                contents.skipped.add(
                    file: tracksFile, line: row.line, "id_android \"\(row.fields[phoneColumn])\" is not a number")
                continue
            }
            let mode: String
            switch row.fields[modeColumn] {
            case "1": mode = "car"
            case "2": mode = "bus"
            default:
                contents.skipped.add(
                    file: tracksFile, line: row.line,
                    "car_or_bus \"\(row.fields[modeColumn])\" is neither 1 (car) nor 2 (bus)")
                continue
            }
            let line = lineColumn.map { row.fields[$0].trimmingCharacters(in: .whitespaces) } ?? ""
            byID[id] = contents.tracks.count
            contents.tracks.append(Track(id: id, phone: phone, mode: mode, line: line))
        }

        let points = try CSVTable(
            text: pointsText, file: pointsFile, required: ["latitude", "longitude", "track_id", "time"])
        let column = ["latitude", "longitude", "track_id", "time"].map { points.index(of: $0)! }
        for row in points.rows {
            guard row.fields.count == points.columns.count else {
                contents.skipped.add(
                    file: pointsFile, line: row.line,
                    "\(row.fields.count) fields, the header has \(points.columns.count)")
                continue
            }
            let value = { (index: Int) in row.fields[column[index]] }
            guard let lat = Double(value(0)), (-90...90).contains(lat) else {
                contents.skipped.add(file: pointsFile, line: row.line, "latitude \"\(value(0))\" is not -90…90")
                continue
            }
            guard let lon = Double(value(1)), (-180...180).contains(lon) else {
                contents.skipped.add(file: pointsFile, line: row.line, "longitude \"\(value(1))\" is not -180…180")
                continue
            }
            guard let id = Int(value(2)), let index = byID[id] else {
                contents.skipped.add(
                    file: pointsFile, line: row.line, "track_id \"\(value(2))\" is not a track of \(tracksFile)")
                continue
            }
            guard let t = RecordingTime.seconds(fromLocal: Substring(value(3)), utcOffset: utcOffset) else {
                contents.skipped.add(
                    file: pointsFile, line: row.line, "time \"\(value(3))\" is not a local time YYYY-MM-DD HH:MM:SS")
                continue
            }
            let point = Point(t: t, lat: lat, lon: lon)
            if let last = contents.tracks[index].points.last {
                // The same reading written twice (2 rows in the published file): one fix, not two.
                if last == point {
                    contents.tracks[index].repeatedPoints += 1
                    continue
                }
                if t < last.t { contents.tracks[index].outOfOrderPoints += 1 }
            }
            contents.tracks[index].points.append(point)
        }
        for index in contents.tracks.indices {
            contents.tracks[index].points.sort { $0.t < $1.t }
        }
        contents.tracks.sort { $0.id < $1.id }
        return contents
    }
}
