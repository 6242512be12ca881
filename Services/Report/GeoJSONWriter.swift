import RecordCodecs
import RoadSaveModel

/// The trips and crashes as a GeoJSON FeatureCollection (RFC 7946), for QGIS, kepler.gl or geojson.io:
/// - a trip is a `LineString` of its recorded positions (every one, not thinned: this is data, not a drawing), its
///   properties the fields of its event (`tripDidEnd`, or `tripDidStart` while it is open) exactly as `roadsave
///   replay` writes them;
/// - a trip's driving event (from its `tripBehaviour`) is a `Point` where it began, its properties
///   `"kind": "drivingEvent"`, the trip's ID and the event's fields as the event writes them;
/// - a crash is a `Point`, its properties the `crashDetected` event's fields;
/// - a crash's follow-up is a `Point` where the device was last known, its properties the `crashFollowUp` event's;
/// - a dismissed crash candidate is a `Point` whose properties say `"kind": "dismissedCrash"` with its reason (it
///   has no `event`: it is not one).
/// Positions are `[longitude, latitude]` in WGS 84, to 7 decimals (about a centimetre). A trip with fewer than two
/// distinct positions, or a crash without a position, has a `null` geometry (RFC 7946 §3.2), so that each still
/// appears once. One feature a line, so that the file can be read (and diffed) as text.
public enum GeoJSONWriter {
    public static func featureCollection(_ reports: [DeviceReport]) -> String {
        var features: [String] = []
        for report in reports {
            for trip in report.trips {
                // Consecutive positions that are the same once written (a parked phone) are written once.
                var coordinates: [String] = []
                for point in report.track(of: trip) {
                    let text = position(latitude: point.latitude, longitude: point.longitude)
                    if coordinates.last != text { coordinates.append(text) }
                }
                let geometry =
                    coordinates.count >= 2
                    ? "{\"type\":\"LineString\",\"coordinates\":[" + coordinates.joined(separator: ",") + "]}"
                    : "null"
                features.append(feature(geometry: geometry, properties: trip.event.json(.current)))
                for event in trip.behaviour?.events ?? [] {
                    var properties = JSONObjectWriter()
                    properties.add("kind", "drivingEvent")
                    properties.add("app", report.device.app)
                    properties.add("user", report.device.user)
                    properties.add("tripID", trip.tripID)
                    event.write(to: &properties, kindKey: "eventKind")
                    features.append(
                        feature(
                            geometry: point(latitude: event.latitude, longitude: event.longitude),
                            properties: properties.finish()))
                }
            }
            for crash in report.crashes {
                let event = RoadSaveEvent(device: report.device, body: .crashDetected(crash))
                features.append(
                    feature(
                        geometry: point(latitude: crash.latitude, longitude: crash.longitude),
                        properties: event.json(.current)))
                if let followUp = report.followUps[crash.crashID] {
                    let event = RoadSaveEvent(device: report.device, body: .crashFollowUp(followUp))
                    features.append(
                        feature(
                            geometry: point(latitude: followUp.latitude, longitude: followUp.longitude),
                            properties: event.json(.current)))
                }
            }
            for dismissal in report.dismissals {
                var properties = JSONObjectWriter()
                properties.add("kind", "dismissedCrash")
                properties.add("app", report.device.app)
                properties.add("user", report.device.user)
                properties.add("crashID", dismissal.crashID)
                properties.add("time", ISO8601.string(fromSeconds: dismissal.time))
                properties.add("reason", dismissal.reason.rawValue)
                properties.add("peakG", dismissal.peakG, decimals: 2)
                properties.add("speedBefore", dismissal.speedBefore, decimals: 2)
                properties.add("speedAfter", dismissal.speedAfter, decimals: 2)
                features.append(
                    feature(
                        geometry: point(latitude: dismissal.latitude, longitude: dismissal.longitude),
                        properties: properties.finish()))
            }
        }
        return "{\"type\":\"FeatureCollection\",\"features\":[\n" + features.joined(separator: ",\n") + "\n]}\n"
    }

    static func feature(geometry: String, properties: String) -> String {
        "{\"type\":\"Feature\",\"geometry\":" + geometry + ",\"properties\":" + properties + "}"
    }

    static func point(latitude: Double?, longitude: Double?) -> String {
        guard let latitude, let longitude else { return "null" }
        return "{\"type\":\"Point\",\"coordinates\":" + position(latitude: latitude, longitude: longitude) + "}"
    }

    /// `[longitude,latitude]`: RFC 7946 puts longitude first.
    static func position(latitude: Double, longitude: Double) -> String {
        "[" + JSONObjectWriter.number(longitude, decimals: 7) + "," + JSONObjectWriter.number(latitude, decimals: 7)
            + "]"
    }
}
