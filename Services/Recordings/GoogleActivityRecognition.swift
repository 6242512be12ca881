// Google Play Services' activity recognition (DetectedActivity) as the records' activities. Every Android converter
// that reads it by name (TMD's logger, Aalto TrafficSense's client) and by percentage (the e-mission and MobilityNet
// Android phones) maps it here, so one reading gives the same record whichever dataset it comes from.

import RoadSaveModel

public enum GoogleActivityRecognition {
    /// A DetectedActivity name, as Google writes it (IN_VEHICLE, ON_BICYCLE, ON_FOOT, RUNNING, STILL, TILTING,
    /// UNKNOWN, WALKING) or as TMD's logger shortens it (vehicle, bicycle, foot), in any case. Nil for a name Google
    /// does not define: the converter writes it as unknown and says so.
    public static func activity(forName name: String) -> ActivityType? {
        switch name.lowercased() {
        case "in_vehicle", "vehicle": return .automotive
        case "on_foot", "foot", "walking": return .walking
        case "running": return .running
        case "on_bicycle", "bicycle": return .cycling
        case "still": return .stationary
        // TILTING is the phone's angle changing (picked up, put down), not a way of moving.
        case "tilting", "unknown": return .unknown
        default: return nil
        }
    }

    /// Google's confidence (0–100) as the record's three levels: ≥ 75 high, ≥ 50 medium, else low (the thresholds
    /// the TMD converter set first; one place, so that no dataset's phones are judged by other ones).
    public static func confidence(forPercent percent: Double) -> ActivityConfidence {
        percent >= 75 ? .high : percent >= 50 ? .medium : .low
    }
}
