// enviroCar tracks on small inline samples (run everywhere): km/h to m/s, what a point may leave out, and errors that
// name the file and the field.

import Foundation
import Recordings
import Testing

@Suite("enviroCar parsing")
struct EnvirocarParsingTests {
    /// One feature of a track, as the enviroCar API writes it; nil arguments leave the member out.
    static func feature(time: String?, lon: Double? = 7.0, lat: Double = 51.5, phenomena: String) -> String {
        let geometry =
            lon.map { #""geometry": {"type": "Point", "coordinates": [\#($0), \#(lat)]}"# }
            ?? #""geometry": null"#
        let timeMember = time.map { #""time": "\#($0)", "# } ?? ""
        return
            #"{"type": "Feature", \#(geometry), "properties": {\#(timeMember)"id": "p", "phenomenons": {\#(phenomena)}}}"#
    }

    static func track(_ features: [String]) -> String {
        """
        {"type": "FeatureCollection",
         "properties": {"id": "58db5ec7", "length": 0.12,
                        "sensor": {"type": "car", "properties": {"manufacturer": "Volkswagen", "model": "Golf",
                                   "constructionYear": 2016, "fuelType": "gasoline"}}},
         "features": [
        \(features.joined(separator: ",\n"))
         ]}
        """
    }

    static let sample = track([
        feature(
            time: "2017-03-28T13:59:09Z",
            phenomena:
                #""GPS Speed": {"unit": "km/h", "value": 36}, "GPS Accuracy": {"unit": "%", "value": 8}, "GPS Bearing": {"unit": "deg", "value": 90}, "Speed": {"unit": "km/h", "value": 37}, "Rpm": {"unit": "u/min", "value": 2000}"#
        ),
        feature(
            time: "2017-03-28T13:59:14Z", lon: 7.0002,
            phenomena: #""GPS Speed": {"unit": "km/h", "value": 54}, "GPS Accuracy": {"unit": "%", "value": 4.5}"#),
        feature(time: nil, phenomena: #""GPS Speed": {"unit": "km/h", "value": 50}"#),
        feature(time: "2017-03-28T13:59:16Z", lon: nil, phenomena: #""GPS Speed": {"unit": "km/h", "value": 50}"#),
        feature(
            time: "2017-03-28T13:59:19Z", lon: 7.0004,
            phenomena:
                #""GPS Speed": {"unit": "km/h", "value": -21.5}, "GPS Accuracy": {"unit": "%", "value": 48}, "GPS Bearing": {"unit": "deg", "value": 507.8}"#
        ),
        feature(time: "2017-03-28T13:59:19Z", lon: 7.0005, phenomena: #""Speed": {"unit": "km/h", "value": 0}"#),
    ])

    @Test func kilometresPerHourBecomeMetresPerSecond() {
        #expect(EnvirocarConverter.metresPerSecond(kmh: 36) == 10)
        #expect(EnvirocarConverter.metresPerSecond(kmh: 54) == 15)
        #expect(abs(EnvirocarConverter.metresPerSecond(kmh: 143.98793383611962) - 39.9966) < 0.0001)
    }

    @Test func pointsWithTheirReadingsAndWhatIsLeftOut() throws {
        let track = try EnvirocarConverter.parse(Array(Self.sample.utf8), fileName: "58db5ec7.json")
        #expect(track.id == "58db5ec7" && track.lengthKm == 0.12)
        #expect(track.vehicle == "Volkswagen Golf 2016 gasoline")
        #expect(track.featureCount == 6)
        #expect(track.withoutTime == 1 && track.withoutCoordinates == 1)
        #expect(track.points.count == 4)
        #expect(track.points.map(\.gpsSpeedKmh) == [36, 54, -21.5, nil])
        #expect(track.points.map(\.gpsBearing) == [90, nil, 507.8, nil])
        #expect(track.points.map(\.gpsAccuracy) == [8, 4.5, 48, nil])
        #expect(track.points.map(\.obdSpeedKmh) == [37, nil, nil, 0])
        #expect(track.points[0].t == 1_490_709_549 && track.points[0].lon == 7.0 && track.points[0].lat == 51.5)
        #expect(track.repeatedTimes == 1)
        #expect(track.otherPhenomena == ["Rpm": 1])
    }

    @Test func conversionWritesGPSOnlyLocations() throws {
        let recording = try EnvirocarConverter.convert(text: Self.sample, fileName: "58db5ec7.json.gz", app: "app-1")
        #expect(recording.user == "envirocar-58db5ec7")
        #expect(recording.label == "Volkswagen Golf 2016 gasoline")
        let objects = checkRecords(recording.lines, app: "app-1", user: "envirocar-58db5ec7")
        #expect(objects[0]["activityAvailable"] as? Bool == false && objects[0]["pedometerAvailable"] as? Bool == false)
        #expect(double(objects[0], "t") == 1_490_709_549)
        #expect(records(objects, kind: "activity").isEmpty && records(objects, kind: "steps").isEmpty)

        let locations = records(objects, kind: "location")
        #expect(locations.count == 4)
        #expect(locations.map { double($0, "speed") } == [10, 15, nil, nil])
        #expect(locations.map { double($0, "course") } == [90, nil, nil, nil])
        #expect(locations.map { double($0, "hacc") } == [8, 4.5, 48, nil])
        #expect(locations.map { double($0, "lon") } == [7.0, 7.0002, 7.0004, 7.0005])

        let report = recording.report
        #expect(report.derived.contains { $0.contains("GPS Speed (km/h) / 3.6") && $0.contains("(4 of 6)") })
        #expect(report.derived.contains { $0.contains("activityAvailable false, pedometerAvailable false") })
        #expect(report.notes.contains { $0.contains("OBD-II Speed") && $0.contains("not used") })
        #expect(report.notes.contains { $0.contains("1 points with a negative GPS Speed") })
        #expect(report.notes.contains { $0.contains("1 points with GPS Bearing outside 0…360°") })
        #expect(report.notes.contains { $0.contains("skipped 1 features without properties.time") })
        #expect(report.notes.contains { $0.contains("skipped 1 features without geometry coordinates") })
        #expect(report.notes.contains { $0.contains("Contains enviroCar data (enviroCar.org), ODbL") })
    }

    /// The error a conversion of `text` throws, as `roadsave convert` prints it.
    static func error(_ text: String, fileName: String = "track.json") -> String {
        do {
            _ = try EnvirocarConverter.convert(text: text, fileName: fileName)
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    @Test(arguments: [
        (#"{"features": [{"properties": {"time": "2017-03-28T13:59:09Z""#, "not valid JSON at line 1, column"),
        ("{\n  \"features\": [\n    {\"a\": tru}\n  ]\n}", "not valid JSON at line 3, column 11"),
        (#"[1, 2]"#, "the top level: expected a GeoJSON FeatureCollection"),
        (#"{"type": "FeatureCollection"}"#, "field features is missing"),
        (#"{"features": {}}"#, "field features: expected an array, found an object"),
        (
            track([feature(time: "2017-03-28T13:59:09Z", phenomena: #""GPS Speed": {"unit": "km/h", "value": "fast"}"#)]
            ),
            #"field features[0].properties.phenomenons."GPS Speed".value: expected a number, found a string"#
        ),
        (
            track([feature(time: "2017-03-28T13:59:09Z", phenomena: #""GPS Speed": {"unit": "mph", "value": 30}"#)]),
            #"field features[0].properties.phenomenons."GPS Speed".unit: expected km/h, found "mph""#
        ),
        (
            track([feature(time: "yesterday", phenomena: "")]),
            #"field features[0].properties.time: "yesterday" is not an ISO 8601 time"#
        ),
        (
            track([feature(time: "2017-03-28T13:59:09Z", lat: 91, phenomena: "")]),
            "field features[0].geometry.coordinates[1]: latitude 91.0 is outside -90…90"
        ),
        (
            track([feature(time: nil, phenomena: "")]),
            "no feature with geometry coordinates and properties.time (1 features)"
        ),
    ])
    func badInputNamesTheFileAndTheField(text: String, message: String) {
        let description = Self.error(text)
        #expect(description.hasPrefix("track.json is not in the expected format: "), "\(description)")
        #expect(description.contains(message), "\(description)")
    }
}
