// enviroCar tracks (GeoJSON FeatureCollections downloaded from the enviroCar API) → records.
// One track is one car drive recorded by the enviroCar Android app connected to the car's OBD-II adapter: a Point
// feature per measurement (every 5 s, some tracks 2 s) with `properties.time` (UTC) and `properties.phenomenons`,
// each `{"unit", "value"}`: the phone's GPS Speed (km/h), GPS Accuracy, GPS Bearing, and the engine's OBD readings.
// The app interpolates every value to the measurement's time (its InterpolationMeasurementProvider), extrapolating at
// the edges of its window, which is where the few impossible values (a negative speed, bearings over 360°) come from.

import Foundation
import RecordCodecs
import RoadSaveModel

public enum EnvirocarConverter: RecordingBytesConverter {
    /// One measurement with a time and a position.
    public struct Point: Sendable, Equatable {
        public var t: Double
        public var lat: Double
        public var lon: Double
        /// GPS Speed as recorded, km/h.
        public var gpsSpeedKmh: Double?
        /// GPS Accuracy as recorded (metres, whatever the unit field says).
        public var gpsAccuracy: Double?
        /// GPS Bearing as recorded, degrees.
        public var gpsBearing: Double?
        /// The car's own speed from OBD-II (phenomenon "Speed"), km/h; read only to be reported as unused.
        public var obdSpeedKmh: Double?
    }

    public struct Track: Sendable, Equatable {
        /// properties.id of the track.
        public var id: String?
        /// The car (properties.sensor.properties): manufacturer, model, construction year, fuel type.
        public var vehicle: String?
        /// properties.length, km (the enviroCar server's figure).
        public var lengthKm: Double?
        /// Points in file order.
        public var points: [Point] = []
        public var featureCount = 0
        /// Features without properties.time, or without geometry coordinates: skipped.
        public var withoutTime = 0
        public var withoutCoordinates = 0
        /// Points whose time equals the previous point's (2 s sampling written in whole seconds).
        public var repeatedTimes = 0
        /// Points earlier than the previous point.
        public var outOfOrder = 0
        /// Phenomena the records have no field for, by name, with how many points carry each.
        public var otherPhenomena: [String: Int] = [:]
    }

    /// km/h → m/s.
    public static func metresPerSecond(kmh: Double) -> Double { kmh / 3.6 }

    /// Reads one track. Values of the wrong type, a time that is not ISO 8601, coordinates out of range and a GPS Speed
    /// in a unit other than km/h are errors naming the field; what a feature leaves out is skipped or left unknown.
    public static func parse(_ bytes: [UInt8], fileName: String) throws -> Track {
        let root = try JSONField.document(bytes, file: fileName)
        guard case .object = root.value else {
            throw root.mismatch(
                "expected a GeoJSON FeatureCollection (an object with \"features\"), found \(root.value.typeName)")
        }
        var track = Track()
        if let properties = try root.member("properties") {
            track.id = try properties.string("id")
            track.lengthKm = try properties.number("length")
            if let car = try properties.member("sensor")?.member("properties") {
                let parts =
                    try ["manufacturer", "model"].compactMap { try car.string($0) }
                    + [try car.number("constructionYear").map { decimal($0, 0) }, try car.string("fuelType")].compactMap
                { $0 }
                track.vehicle = parts.isEmpty ? nil : parts.joined(separator: " ")
            }
        }
        var previousT: Double?
        for feature in try root.required("features").elements() {
            track.featureCount += 1
            let properties = try feature.member("properties")
            guard let timeField = try properties?.member("time") else {
                track.withoutTime += 1
                continue
            }
            let timeText = try timeField.string()
            guard let t = ISO8601.seconds(from: timeText) else {
                throw timeField.mismatch("\"\(timeText)\" is not an ISO 8601 time")
            }
            guard let coordinates = try feature.member("geometry")?.member("coordinates") else {
                track.withoutCoordinates += 1
                continue
            }
            let position = try coordinates.elements()
            guard position.count >= 2 else { throw coordinates.mismatch("expected [longitude, latitude]") }
            let lon = try position[0].number()
            let lat = try position[1].number()
            guard (-180...180).contains(lon) else { throw position[0].mismatch("longitude \(lon) is outside -180…180") }
            guard (-90...90).contains(lat) else { throw position[1].mismatch("latitude \(lat) is outside -90…90") }

            var point = Point(t: t, lat: lat, lon: lon)
            if let phenomena = try properties?.member("phenomenons") {
                guard case .object(let members) = phenomena.value else {
                    throw phenomena.mismatch("expected an object, found \(phenomena.value.typeName)")
                }
                for (name, _) in members {
                    guard let phenomenon = try phenomena.member(name) else { continue }
                    let value = try phenomenon.number("value")
                    switch name {
                    case "GPS Speed":
                        // The conversion to m/s depends on the unit, so any other unit is refused rather than guessed.
                        if let unit = try phenomenon.string("unit"), unit != "km/h" {
                            throw try phenomenon.required("unit").mismatch("expected km/h, found \"\(unit)\"")
                        }
                        point.gpsSpeedKmh = value
                    case "GPS Accuracy": point.gpsAccuracy = value
                    case "GPS Bearing": point.gpsBearing = value
                    case "Speed": point.obdSpeedKmh = value
                    default: track.otherPhenomena[name, default: 0] += 1
                    }
                }
            }
            if let previousT {
                if t == previousT { track.repeatedTimes += 1 } else if t < previousT { track.outOfOrder += 1 }
            }
            previousT = t
            track.points.append(point)
        }
        return track
    }

    public static func convert(bytes: [UInt8], fileName: String, app: String = "recorded", user: String? = nil) throws
        -> ConvertedRecording
    {
        let track = try parse(bytes, fileName: fileName)
        guard let first = track.points.min(by: { $0.t < $1.t }), let last = track.points.max(by: { $0.t < $1.t }) else {
            throw RecordingError.malformed(
                file: fileName,
                reason: "no feature with geometry coordinates and properties.time "
                    + "(\(track.featureCount) features)")
        }
        let device = DeviceID(app: app, user: user ?? userID(from: "envirocar-" + fileStem(fileName)))
        var records: [SensorRecord] = []
        var derived: [String] = []
        var notes: [String] = []

        records.append(
            SensorRecord.capabilities(of: device, at: first.t, activity: false, pedometer: false))
        derived.append(
            "capabilities: activityAvailable false, pedometerAvailable false (the enviroCar app records no "
                + "activity classifier output and no steps), so trips start on GPS alone")

        var negativeSpeeds = 0
        var withoutSpeed = 0
        var withoutAccuracy = 0
        var withoutBearing = 0
        var bearingsOutOfRange = 0
        var withOBDSpeed = 0
        for point in track.points {
            // Negative speed is the record's "unknown" (PROTOCOL §2), and so is a bearing outside 0…360: both are the
            // app's extrapolation, not readings, so neither is repaired.
            var speed: Double?
            if let kmh = point.gpsSpeedKmh {
                if kmh < 0 { negativeSpeeds += 1 } else { speed = metresPerSecond(kmh: kmh) }
            } else {
                withoutSpeed += 1
            }
            var course: Double?
            if let bearing = point.gpsBearing {
                if (0...360).contains(bearing) { course = bearing } else { bearingsOutOfRange += 1 }
            } else {
                withoutBearing += 1
            }
            if point.gpsAccuracy == nil { withoutAccuracy += 1 }
            if point.obdSpeedKmh != nil { withOBDSpeed += 1 }
            records.append(
                SensorRecord(
                    device: device, t: point.t,
                    payload: .location(
                        LocationFix(
                            latitude: point.lat, longitude: point.lon, speed: speed, course: course,
                            horizontalAccuracy: point.gpsAccuracy))))
        }
        derived.append(
            "location: one per feature with geometry coordinates and properties.time (\(track.points.count) "
                + "of \(track.featureCount)): lat/lon from the Point's [longitude, latitude], t from properties.time (UTC); "
                + "speed = GPS Speed (km/h) / 3.6 in m/s; hacc = GPS Accuracy as metres (the app stores the Android fix's "
                + "accuracy radius in metres although the track labels its unit \"%\"); course = GPS Bearing (degrees)")
        notes.append(
            "OBD-II Speed (the car's own speed, in \(withOBDSpeed) points) not used: a phone running RoadSave "
                + "has its GPS speed only")
        if withoutBearing > 0 {
            notes.append(
                "\(withoutBearing) points without GPS Bearing (the app writes one only when the fix has a bearing, "
                    + "which a phone standing still mostly has not): no course")
        }
        if bearingsOutOfRange > 0 {
            notes.append(
                "\(bearingsOutOfRange) points with GPS Bearing outside 0…360° (the app's interpolation "
                    + "overshooting): no course")
        }
        if negativeSpeeds > 0 {
            notes.append(
                "\(negativeSpeeds) points with a negative GPS Speed (the app's interpolation overshooting): "
                    + "speed unknown")
        }
        if withoutSpeed > 0 { notes.append("\(withoutSpeed) points without GPS Speed: speed unknown") }
        if withoutAccuracy > 0 { notes.append("\(withoutAccuracy) points without GPS Accuracy: no hacc") }
        if track.withoutTime > 0 { notes.append("skipped \(track.withoutTime) features without properties.time") }
        if track.withoutCoordinates > 0 {
            notes.append("skipped \(track.withoutCoordinates) features without geometry coordinates")
        }
        if track.repeatedTimes > 0 {
            notes.append(
                "\(track.repeatedTimes) points repeat the previous point's time (times are whole seconds): "
                    + "kept as separate records")
        }
        if track.outOfOrder > 0 {
            notes.append("\(track.outOfOrder) points earlier than the point before: sorted by time")
        }

        let times = track.points.map(\.t).sorted()
        let intervals = zip(times.dropFirst(), times).map { $0 - $1 }.sorted()
        let median = intervals.isEmpty ? 0 : intervals[intervals.count / 2]
        notes.append(
            "track \(track.id ?? "without an id")" + (track.vehicle.map { ", car \($0)" } ?? "")
                + (track.lengthKm.map { ", \(decimal($0, 2)) km by enviroCar's figure" } ?? "")
                + ": \(decimal((last.t - first.t) / 60, 1)) min from \(ISO8601.string(fromSeconds: first.t)), "
                + "median interval \(decimal(median, 1)) s (longest \(decimal(intervals.last ?? 0, 0)) s)")
        if !track.otherPhenomena.isEmpty {
            notes.append(
                "ignored engine and GPS readings the records do not carry: "
                    + track.otherPhenomena.keys.sorted().joined(separator: ", "))
        }
        notes.append("Contains enviroCar data (enviroCar.org), ODbL")

        return ConvertedRecording(
            dataset: .envirocar, sourceFile: fileName, device: device, records: records,
            label: track.vehicle, derived: derived, notes: notes)
    }
}
