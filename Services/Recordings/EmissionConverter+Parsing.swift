// Reading an e-mission day file: which entries become readings, which are skipped, counted or refused (naming the
// field), and the three shapes an activity entry comes in.

import Foundation
import RecordCodecs

extension EmissionConverter {
    /// Reads one day. An entry that is not an object, a value of the wrong type, a position out of range or an unknown
    /// platform is an error naming the field; a location without a time or a position is skipped and counted.
    public static func parse(_ bytes: [UInt8], fileName: String) throws -> Day {
        let root = try JSONField.document(bytes, file: fileName)
        guard case .array = root.value else {
            var reason = "expected a list of entries {\"metadata\", \"data\"}, found \(root.value.typeName)"
            if root.value["metadata"] != nil || fileName.contains("ground_truth") {
                reason += " (a .ground_truth file holds the e-mission pipeline's expected trips, not the phone's trace)"
            }
            throw root.mismatch(reason)
        }
        var day = Day()
        var seenFixes = Set<Fix>()
        var seenActivities = Set<MotionReading>()
        var platformCounts: [Platform: Int] = [:]
        var lastFixT = -Double.infinity
        var lastActivityT = -Double.infinity
        for entry in try root.elements() {
            day.entryCount += 1
            let metadata = try entry.required("metadata")
            let key = try metadata.required("key").string()
            if day.timeZone == nil { day.timeZone = try metadata.string("time_zone") }
            guard key == "background/location" || key == "background/motion_activity" else {
                day.otherKeys[key, default: 0] += 1
                continue
            }
            let platformField = try metadata.required("platform")
            let platformName = try platformField.string()
            guard let platform = Platform(rawValue: platformName.lowercased()) else {
                throw platformField.mismatch("expected ios or android, found \"\(platformName)\"")
            }
            platformCounts[platform, default: 0] += 1
            let data = try entry.required("data")

            if key == "background/location" {
                guard let t = try data.number("ts") else {
                    day.fixesWithoutTime += 1
                    continue
                }
                var lat = try data.number("latitude")
                var lon = try data.number("longitude")
                if lat == nil || lon == nil, let coordinates = try data.member("loc")?.member("coordinates") {
                    // The GeoJSON copy of the position, [longitude, latitude].
                    let position = try coordinates.elements()
                    if position.count >= 2 {
                        lon = try position[0].number()
                        lat = try position[1].number()
                    }
                }
                guard let lat, let lon else {
                    day.fixesWithoutPosition += 1
                    continue
                }
                guard (-90...90).contains(lat) else {
                    throw try data.required("latitude").mismatch("\(lat) is outside -90…90")
                }
                guard (-180...180).contains(lon) else {
                    throw try data.required("longitude").mismatch("\(lon) is outside -180…180")
                }
                // The course: `heading` in the e-mission days, `bearing` in the MobilityNet dumps.
                let heading = try data.number("heading") ?? data.number("bearing")
                let fix = Fix(
                    t: t, lat: lat, lon: lon, sensedSpeed: try data.number("sensed_speed"),
                    heading: heading, accuracy: try data.number("accuracy"), platform: platform)
                guard seenFixes.insert(fix).inserted else {
                    day.repeatedFixes += 1
                    continue
                }
                if t < lastFixT { day.outOfOrderFixes += 1 }
                lastFixT = t
                day.fixes.append(fix)
            } else {
                let fields = try activityFields(data, platform: platform)
                let t = fields.t
                let reading = MotionReading(
                    t: t, type: fields.type, confidence: fields.confidence,
                    confidenceLevel: fields.confidenceLevel, platform: platform)
                guard confidence(of: reading) != nil else {
                    // The field to blame: the iOS level if there is one, else the number, else the missing number.
                    if platform == .ios, let level = try data.member("confidence_level") {
                        throw level.mismatch("expected low, medium or high")
                    }
                    throw try data.required("confidence").mismatch(
                        platform == .ios
                            ? "an iOS confidence without confidence_level is 50, 75 or 100 (or 0, 1, 2)"
                            : "expected a percentage")
                }
                guard seenActivities.insert(reading).inserted else {
                    day.repeatedActivities += 1
                    continue
                }
                if t < lastActivityT { day.outOfOrderActivities += 1 }
                lastActivityT = t
                day.activities.append(reading)
            }
        }
        day.platform = platformCounts.max { $0.value < $1.value }?.key
        return day
    }

    /// An activity entry's time, MotionType and confidence, in the three shapes the app wrote: `{ts, type,
    /// confidence[, confidence_level]}` (the e-mission days); on Android in the MobilityNet dumps Google's
    /// DetectedActivity with its obfuscated member names, `{zzbhB: type, zzbhC: percent}`, timed by `write_ts` (the
    /// app writes each detection as it comes); on iOS there the CMMotionActivity flags `{automotive, cycling,
    /// running, walking, stationary, unknown, confidence: "high"}`.
    static func activityFields(_ data: JSONField, platform: Platform) throws
        -> (t: Double, type: Int, confidence: Double?, confidenceLevel: String?)
    {
        func code(_ field: JSONField) throws -> Int {
            let value = try field.number()
            guard value == value.rounded(), abs(value) < 1000 else {
                throw field.mismatch("\(value) is not a MotionType code")
            }
            return Int(value)
        }
        if let type = try data.member("type") {
            return (
                try data.required("ts").number(), try code(type), try data.number("confidence"),
                try data.string("confidence_level")
            )
        }
        if let type = try data.member("zzbhB") {
            let t = try data.number("ts") ?? data.required("write_ts").number()
            return (t, try code(type), try data.required("zzbhC").number(), nil)
        }
        guard try data.member("automotive") != nil else {
            throw RecordingError.malformed(
                file: data.file,
                reason: "\(data.name): an activity with neither type, "
                    + "zzbhB (Android's DetectedActivity) nor the CMMotionActivity flags (automotive, walking, …)")
        }
        func flag(_ name: String) throws -> Bool {
            guard let field = try data.member(name) else { return false }
            guard case .bool(let value) = field.value else { throw field.mismatch("expected true or false") }
            return value
        }
        // As e-mission's iOS app maps the flags to a MotionType (automotive with stationary: stopped in a vehicle).
        let type: Int
        if try flag("automotive") {
            type = try flag("stationary") ? 10 : 0
        } else if try flag("cycling") {
            type = 1
        } else if try flag("running") {
            type = 8
        } else if try flag("walking") {
            type = 7
        } else if try flag("stationary") {
            type = 3
        } else if try flag("unknown") {
            type = 4
        } else {
            type = 9
        }
        let level = try data.required("confidence")
        guard case .string(let text) = level.value else {
            throw level.mismatch("expected low, medium or high, found \(level.value.typeName)")
        }
        return (try data.required("ts").number(), type, nil, text)
    }
}
