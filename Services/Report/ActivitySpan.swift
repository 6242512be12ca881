import RoadSaveModel

/// What the device's motion classifier said from one activity record until the next one that said something else.
public struct ActivitySpan: Sendable, Equatable {
    public var start: Double
    public var end: Double
    public var activity: ActivityType
    public var confidence: ActivityConfidence

    public init(start: Double, end: Double, activity: ActivityType, confidence: ActivityConfidence) {
        self.start = start
        self.end = end
        self.activity = activity
        self.confidence = confidence
    }

    /// Spans from activity reports in time order: consecutive reports that say the same merge into one, and each
    /// span lasts until the next report (the last one until `end`).
    public static func spans(from reports: [(t: Double, observation: ActivityObservation)], until end: Double)
        -> [ActivitySpan]
    {
        var spans: [ActivitySpan] = []
        for report in reports {
            if let last = spans.last, last.activity == report.observation.activity,
                last.confidence == report.observation.confidence
            {
                continue
            }
            if !spans.isEmpty { spans[spans.count - 1].end = report.t }
            spans.append(
                ActivitySpan(
                    start: report.t, end: report.t, activity: report.observation.activity,
                    confidence: report.observation.confidence))
        }
        if !spans.isEmpty { spans[spans.count - 1].end = max(spans[spans.count - 1].start, end) }
        return spans
    }
}
