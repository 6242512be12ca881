// The order records are sent in: one device's records in device order (numbered by `ConvertedRecording`), and several
// converted devices merged into one stream by time. The lines themselves are `SensorRecord.json()` (RecordCodecs).

import RoadSaveModel

public enum RecordOrder {
    /// One device's records in the order they are sent: the capabilities record first, then by time (stable, so
    /// records with equal times keep the order the converter produced them in). `seq` is the index in this order.
    public static func deviceOrder(_ records: [SensorRecord]) -> [SensorRecord] {
        let indexed = records.enumerated().map { (offset: $0.offset, record: $0.element) }
        return indexed.sorted { a, b in
            let aFirst = a.record.kind == .capabilities
            let bFirst = b.record.kind == .capabilities
            if aFirst != bFirst { return aFirst }
            if a.record.t != b.record.t { return a.record.t < b.record.t }
            return a.offset < b.offset
        }.map(\.record)
    }

    /// Several devices in one stream, merged by time (each device keeps its own seq numbering and order).
    public static func merged(_ recordings: [ConvertedRecording]) -> [String] {
        var entries: [(t: Double, device: Int, index: Int, line: String)] = []
        for (device, recording) in recordings.enumerated() {
            for (index, record) in recording.records.enumerated() {
                entries.append((record.t, device, index, recording.lines[index]))
            }
        }
        entries.sort { a, b in
            if a.t != b.t { return a.t < b.t }
            if a.device != b.device { return a.device < b.device }
            return a.index < b.index
        }
        return entries.map(\.line)
    }
}
