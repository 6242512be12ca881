import RoadSaveModel

/// The colours of the report: one per trip (cycling through ten that stay apart from each other and from the crash
/// red), one per activity, and the markers'.
public enum ReportPalette {
    static let trips = [
        "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#bcbd22",
        "#393b79", "#637939",
    ]
    public static let crash = "#d62728"
    public static let dismissed = "#7f7f7f"
    public static let outsideTrips = "#9a9a9a"

    /// The colour of a device's trip by its position among the device's trips.
    public static func trip(_ index: Int) -> String { trips[index % trips.count] }

    public static func activity(_ activity: ActivityType) -> String {
        switch activity {
        case .automotive: "#4e79a7"
        case .walking: "#59a14f"
        case .running: "#edc948"
        case .cycling: "#b07aa1"
        case .stationary: "#bab0ac"
        case .unknown: "#eeeeee"
        }
    }

    /// How strongly an activity's colour is drawn: the classifier's confidence.
    public static func opacity(_ confidence: ActivityConfidence) -> String {
        switch confidence {
        case .high: "1"
        case .medium: "0.6"
        case .low: "0.3"
        }
    }
}
