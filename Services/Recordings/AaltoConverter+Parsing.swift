// Reading the Aalto TrafficSense CSV files: a header that lacks a column the converter needs stops the conversion; a
// row that cannot be read is skipped and named by file and line.

import Foundation

extension AaltoConverter {
    static let sampleColumns = [
        "time", "device_id", "lat", "lng", "accuracy", "activity_1", "activity_1_conf", "activity_2",
        "activity_2_conf", "activity_3", "activity_3_conf",
    ]
    static let legColumns = [
        "device_id", "line_type", "line_name", "vehicle_dep_time", "vehicle_dep_stop", "vehicle_arr_time",
        "vehicle_arr_stop",
    ]

    /// The rows of device_data.csv in file order.
    public static func parseSamples(_ text: String, file: String) throws -> (samples: [Sample], skipped: SkippedRows) {
        let table = try CSVTable(text: text, file: file, required: sampleColumns)
        let column = sampleColumns.map { table.index(of: $0)! }
        var samples: [Sample] = []
        var skipped = SkippedRows()
        rows: for row in table.rows {
            guard row.fields.count == table.columns.count else {
                skipped.add(
                    file: file, line: row.line, "\(row.fields.count) fields, the header has \(table.columns.count)")
                continue
            }
            let value = { (index: Int) in row.fields[column[index]] }
            guard let t = localTime(value(0)) else {
                skipped.add(file: file, line: row.line, "time \"\(value(0))\" is not a local time YYYY-MM-DD HH:MM:SS")
                continue
            }
            guard let device = Int(value(1)), device >= 0 else {
                skipped.add(file: file, line: row.line, "device_id \"\(value(1))\" is not a whole number")
                continue
            }
            guard let lat = Double(value(2)), (-90...90).contains(lat) else {
                skipped.add(file: file, line: row.line, "lat \"\(value(2))\" is not a latitude -90…90")
                continue
            }
            guard let lon = Double(value(3)), (-180...180).contains(lon) else {
                skipped.add(file: file, line: row.line, "lng \"\(value(3))\" is not a longitude -180…180")
                continue
            }
            var accuracy: Double?
            if !value(4).isEmpty {
                guard let radius = Double(value(4)), radius.isFinite, radius >= 0 else {
                    skipped.add(file: file, line: row.line, "accuracy \"\(value(4))\" is not a radius in metres")
                    continue
                }
                accuracy = radius
            }
            var activities: [Activity] = []
            for rank in 0..<3 {
                let name = value(5 + 2 * rank)
                let confidence = value(6 + 2 * rank)
                // A rank the row leaves empty (name and confidence) is no reading; half of one is a bad row.
                if name.isEmpty && confidence.isEmpty { continue }
                guard !name.isEmpty, let percent = Int(confidence), (0...100).contains(percent) else {
                    skipped.add(
                        file: file, line: row.line,
                        "activity_\(rank + 1) \"\(name)\" with activity_\(rank + 1)_conf \"\(confidence)\": "
                            + "expected an activity and a percentage 0–100")
                    continue rows
                }
                activities.append(Activity(name: name, percent: percent))
            }
            samples.append(
                Sample(
                    t: t, deviceID: device, lat: lat, lon: lon, accuracy: accuracy, activities: activities,
                    line: row.line))
        }
        return (samples, skipped)
    }

    /// device_models.csv: the phone's model by device_id.
    public static func parseModels(_ text: String, file: String) throws -> (models: [Int: String], skipped: SkippedRows)
    {
        let table = try CSVTable(text: text, file: file, required: ["device_id", "model"])
        let (deviceColumn, modelColumn) = (table.index(of: "device_id")!, table.index(of: "model")!)
        var models: [Int: String] = [:]
        var skipped = SkippedRows()
        for row in table.rows {
            guard row.fields.count == table.columns.count, let device = Int(row.fields[deviceColumn]) else {
                skipped.add(file: file, line: row.line, "expected a device_id and a model")
                continue
            }
            models[device] = row.fields[modelColumn]
        }
        return (models, skipped)
    }

    /// manual_log.csv: one leg per row, in file order.
    public static func parseLegs(_ text: String, file: String) throws -> (legs: [Leg], skipped: SkippedRows) {
        let table = try CSVTable(text: text, file: file, required: legColumns)
        let column = legColumns.map { table.index(of: $0)! }
        var legs: [Leg] = []
        var skipped = SkippedRows()
        for row in table.rows {
            guard row.fields.count == table.columns.count else {
                skipped.add(
                    file: file, line: row.line, "\(row.fields.count) fields, the header has \(table.columns.count)")
                continue
            }
            let value = { (index: Int) in row.fields[column[index]] }
            guard let device = Int(value(0)), device >= 0 else {
                skipped.add(file: file, line: row.line, "device_id \"\(value(0))\" is not a whole number")
                continue
            }
            let lineType = value(1).trimmingCharacters(in: .whitespaces).uppercased()
            guard lineTypes.contains(lineType) else {
                skipped.add(
                    file: file, line: row.line,
                    "line_type \"\(value(1))\" is not one of " + lineTypes.joined(separator: ", "))
                continue
            }
            guard let start = localTime(value(3)), let end = localTime(value(5)) else {
                skipped.add(
                    file: file, line: row.line,
                    "vehicle_dep_time \"\(value(3))\" and vehicle_arr_time \"\(value(5))\" must be local times "
                        + "YYYY-MM-DD HH:MM:SS")
                continue
            }
            guard end >= start else {
                skipped.add(file: file, line: row.line, "vehicle_arr_time \(value(5)) is before vehicle_dep_time")
                continue
            }
            legs.append(
                Leg(
                    deviceID: device, line: row.line, lineType: lineType,
                    lineName: value(2).trimmingCharacters(in: .whitespaces), start: start, end: end,
                    departureStop: value(4).trimmingCharacters(in: .whitespaces),
                    arrivalStop: value(6).trimmingCharacters(in: .whitespaces)))
        }
        return (legs, skipped)
    }

    /// A local (EEST) time of the files as UTC seconds.
    static func localTime(_ text: String) -> Double? {
        RecordingTime.seconds(fromLocal: Substring(text), utcOffset: utcOffset)
    }
}
