// Every enviroCar track of ../shared/data converted, checked against the track read independently (Foundation's
// JSONSerialization) and against tracks_summary_DERIVED.csv made beside the data.
// Contains enviroCar data (enviroCar.org), ODbL.

import Foundation
import Recordings
import RoadSaveModel
import Testing

@Suite("enviroCar recordings", .enabled(if: SharedData.has(.envirocar), datasetAbsent(.envirocar)))
struct EnvirocarRecordingTests {
    static let folder = "envirocar-car-tracks"

    static var files: [URL] {
        ["tarun215_EnviroCar_c1", "zembrzuski_envirocar_data_input"].flatMap {
            SharedData.files(in: "\(folder)/\($0)", suffix: ".json.gz")
        }
    }

    /// Points per track in tracks_summary_DERIVED.csv (source_file → n).
    static func summaryCounts() throws -> [String: Int] {
        let url = try #require(sharedFile("\(folder)/tracks_summary_DERIVED.csv"))
        let lines = try String(contentsOf: url, encoding: .utf8).split(separator: "\n")
        let header = lines[0].split(separator: ",").map(String.init)
        let file = try #require(header.firstIndex(of: "source_file"))
        let n = try #require(header.firstIndex(of: "n"))
        var counts: [String: Int] = [:]
        for line in lines.dropFirst() {
            let fields = Self.csvFields(line)
            counts[fields[file]] = Int(fields[n])
        }
        return counts
    }

    /// One CSV line's fields; the vehicle column is quoted when it holds a comma ("VW Golf  1,6l 2000 diesel").
    static func csvFields(_ line: Substring) -> [String] {
        var fields: [String] = []
        var field = ""
        var quoted = false
        for character in line {
            switch character {
            case "\"": quoted.toggle()
            case "," where !quoted:
                fields.append(field)
                field = ""
            default: field.append(character)
            }
        }
        return fields + [field]
    }

    /// The features of a track that have a time and coordinates, with their GPS Speed (km/h), Accuracy and Bearing.
    static func referencePoints(_ file: URL) throws -> [(speed: Double?, accuracy: Double?, bearing: Double?)] {
        let object = try JSONSerialization.jsonObject(with: try RecordingFile.data(of: file)) as? [String: Any]
        let features = try #require(object?["features"] as? [[String: Any]])
        return features.compactMap { feature in
            let properties = feature["properties"] as? [String: Any]
            let geometry = feature["geometry"] as? [String: Any]
            guard properties?["time"] is String, (geometry?["coordinates"] as? [Any])?.count == 2 else { return nil }
            let phenomena = properties?["phenomenons"] as? [String: [String: Any]] ?? [:]
            func value(_ name: String) -> Double? { (phenomena[name]?["value"] as? NSNumber)?.doubleValue }
            return (value("GPS Speed"), value("GPS Accuracy"), value("GPS Bearing"))
        }
    }

    @Test func everyTrackConvertsWithAPositionPerPoint() throws {
        let files = Self.files
        #expect(files.count == 112)
        let summary = try Self.summaryCounts()
        var total = 0
        var negativeSpeeds = 0
        var bearingsOutOfRange = 0
        for file in files {
            let recording = try RecordingConverter.envirocar(file)
            let name = file.deletingLastPathComponent().lastPathComponent + "/" + file.lastPathComponent
            let user = "envirocar-" + file.lastPathComponent.replacingOccurrences(of: ".json.gz", with: "")
            #expect(recording.user == user)
            let objects = checkRecords(recording.lines, app: "recorded", user: user)
            #expect(
                objects[0]["activityAvailable"] as? Bool == false && objects[0]["pedometerAvailable"] as? Bool == false)
            #expect(records(objects, kind: "activity").isEmpty && records(objects, kind: "steps").isEmpty)
            #expect(records(objects, kind: "impact").isEmpty)

            // Positions: one per point with a time and coordinates, in the file's order (every track is in time order).
            let reference = try Self.referencePoints(file)
            let locations = records(objects, kind: "location")
            #expect(locations.count == reference.count, "\(name)")
            #expect(locations.count == summary[name], "\(name): tracks_summary_DERIVED.csv says \(summary[name] ?? -1)")
            total += locations.count
            for (location, point) in zip(locations, reference) {
                // The record keeps speed to 0.01 m/s, course and hacc to 0.1.
                if let kmh = point.speed, kmh >= 0 {
                    #expect(abs((double(location, "speed") ?? -1) - kmh / 3.6) <= 0.0051, "\(name): speed")
                } else {
                    #expect(location["speed"] == nil, "\(name): a missing or negative GPS Speed is unknown")
                    if point.speed != nil { negativeSpeeds += 1 }
                }
                if let bearing = point.bearing, (0...360).contains(bearing) {
                    #expect(abs((double(location, "course") ?? -1) - bearing) <= 0.051, "\(name): course")
                } else {
                    #expect(location["course"] == nil, "\(name): course")
                    if point.bearing != nil { bearingsOutOfRange += 1 }
                }
                #expect(abs((double(location, "hacc") ?? -1) - (point.accuracy ?? -2)) <= 0.051, "\(name): hacc")
            }
            #expect(recording.report.notes.contains { $0.contains("OBD-II Speed") && $0.contains("not used") })
            #expect(recording.report.notes.contains("Contains enviroCar data (enviroCar.org), ODbL"))
        }
        // SOURCE.txt: 45,430 points in all; one negative GPS Speed and four bearings over 360° (the app's interpolation).
        #expect(total == 45_430)
        #expect(negativeSpeeds == 1)
        #expect(bearingsOutOfRange == 4)
    }

    @Test func aTrackOfTwoSecondSamplingKeepsItsRepeatedSeconds() throws {
        let file = try #require(
            sharedFile("\(Self.folder)/zembrzuski_envirocar_data_input/58f99cd7268d1b08a4496ad7.json.gz"))
        let recording = try RecordingConverter.envirocar(file, app: "app-1", user: "volvo")
        #expect(recording.label == "Volvo V40 2003 gasoline")
        #expect(recording.count(of: .location) == 198)
        #expect(recording.report.notes.contains { $0.contains("7 points repeat the previous point's time") })
        #expect(
            recording.report.notes.contains {
                $0.contains("track 58f99cd7268d1b08a4496ad7") && $0.contains("median interval 2 s")
            })
    }
}
