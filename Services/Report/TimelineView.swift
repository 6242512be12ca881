import RecordCodecs
import RoadSaveModel

/// A device's timeline as SVG, over the time of its records: GPS speed (km/h) as a line, the trips as spans in their
/// map colours (shaded behind the speed and as a row of their own), the motion classifier's reports as a band
/// (colour: activity; strength: confidence), crashes and dismissed candidates as vertical marks. Times are UTC.
///
/// What tests and scripts can count: `.trip-span` (one per trip, `data-trip-id`), `.activity-span`
/// (`data-activity`, `data-confidence`), `.crash-tick` (one per crash), `.dismissed-tick`.
public struct TimelineView {
    public static let width = 960.0
    public static let height = 236.0
    static let left = 60.0
    static let right = 16.0
    static let speedTop = 12.0
    static let speedBottom = 148.0
    static let tripRow = (top: 156.0, height: 14.0)
    static let activityRow = (top: 176.0, height: 14.0)
    static let axisBaseline = 210.0
    /// Fixes further apart than this break the speed line (no data in between).
    static let gap = 60.0

    public let report: DeviceReport
    public let start: Double
    public let end: Double

    public init(_ report: DeviceReport) {
        self.report = report
        start = report.firstSeen
        end = report.lastSeen > report.firstSeen ? report.lastSeen : report.firstSeen + 60
        let fastest = report.track.lazy.compactMap(\.speed).max() ?? 0
        topSpeed = max(20, (fastest * 3.6 / 20).rounded(.up) * 20)
    }

    public func x(_ t: Double) -> Double {
        Self.left + (t - start) / (end - start) * (Self.width - Self.left - Self.right)
    }

    /// The top of the speed axis, km/h: a multiple of 20 at or above the fastest fix (at least 20).
    public let topSpeed: Double

    func y(speedKmh: Double) -> Double {
        Self.speedBottom - min(speedKmh, topSpeed) / topSpeed * (Self.speedBottom - Self.speedTop)
    }

    /// The speed line as path data: a run per stretch of fixes with speeds and no gap, each thinned.
    func speedPath() -> String {
        var path = ""
        var run: [(x: Double, y: Double)] = []
        var lastT = -Double.infinity
        func flush() {
            let points = PolylineThinning.thinned(run, tolerance: MapView.tolerance)
            if let first = points.first {
                path += "M" + Markup.number(first.x) + "," + Markup.number(first.y)
                if points.count == 1 { path += "h0" }
                for point in points.dropFirst() { path += "L" + Markup.number(point.x) + "," + Markup.number(point.y) }
            }
            run.removeAll(keepingCapacity: true)
        }
        for point in report.track {
            guard let speed = point.speed else {
                flush()
                continue
            }
            if point.t - lastT > Self.gap { flush() }
            lastT = point.t
            run.append((x(point.t), y(speedKmh: speed * 3.6)))
        }
        flush()
        return path
    }

    public func svg() -> String {
        let w = Markup.number(Self.width)
        let h = Markup.number(Self.height)
        var svg =
            "<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 \(w) \(h)\" width=\"\(w)\" "
            + "height=\"\(h)\" role=\"img\" aria-label=\"Timeline of \(Markup.escape(ReportPage.name(of: report.device)))\">\n"
        let plotLeft = Markup.number(Self.left)
        let plotWidth = Markup.number(Self.width - Self.left - Self.right)

        // Trips shaded behind the speed, and as a row.
        for (index, trip) in report.trips.enumerated() {
            let from = x(trip.startDate)
            let to = max(x(trip.endDate(lastSeen: report.lastSeen)), from + 1)
            let colour = ReportPalette.trip(index)
            let id = Markup.escape(trip.tripID)
            svg +=
                "<rect class=\"trip-shade\" x=\"\(Markup.number(from))\" y=\"\(Markup.number(Self.speedTop))\" "
                + "width=\"\(Markup.number(to - from))\" height=\"\(Markup.number(Self.speedBottom - Self.speedTop))\" fill=\"\(colour)\"/>\n"
            svg +=
                "<rect class=\"trip-span\" data-trip-id=\"\(id)\" x=\"\(Markup.number(from))\" "
                + "y=\"\(Markup.number(Self.tripRow.top))\" width=\"\(Markup.number(to - from))\" "
                + "height=\"\(Markup.number(Self.tripRow.height))\" fill=\"\(colour)\">"
                + "<title>\(Markup.escape(ReportPage.tripTitle(trip, number: index + 1)))</title></rect>\n"
        }

        // Speed axis: gridlines every 20 km/h (every 40 above 100).
        let top = topSpeed
        let step = top > 100 ? 40.0 : 20.0
        var speed = 0.0
        while speed <= top {
            let yy = Markup.number(y(speedKmh: speed))
            svg +=
                "<path class=\"grid\" d=\"M\(plotLeft),\(yy)h\(plotWidth)\"/>"
                + "<text class=\"axis\" x=\"\(Markup.number(Self.left - 6))\" y=\"\(Markup.number(y(speedKmh: speed) + 4))\" "
                + "text-anchor=\"end\">\(JSONObjectWriter.number(speed, decimals: 0))</text>\n"
            speed += step
        }
        svg += "<text class=\"axis\" x=\"4\" y=\"\(Markup.number(Self.speedTop + 4))\">km/h</text>\n"
        svg += "<text class=\"axis\" x=\"4\" y=\"\(Markup.number(Self.tripRow.top + 11))\">trips</text>\n"
        svg += "<text class=\"axis\" x=\"4\" y=\"\(Markup.number(Self.activityRow.top + 11))\">activity</text>\n"

        let path = speedPath()
        if !path.isEmpty { svg += "<path class=\"speed\" d=\"\(path)\"/>\n" }

        // The classifier's band.
        for span in report.activities {
            let from = x(span.start)
            let to = max(x(span.end), from + 0.5)
            svg +=
                "<rect class=\"activity-span\" data-activity=\"\(span.activity.rawValue)\" "
                + "data-confidence=\"\(span.confidence.rawValue)\" x=\"\(Markup.number(from))\" "
                + "y=\"\(Markup.number(Self.activityRow.top))\" width=\"\(Markup.number(to - from))\" "
                + "height=\"\(Markup.number(Self.activityRow.height))\" fill=\"\(ReportPalette.activity(span.activity))\" "
                + "fill-opacity=\"\(ReportPalette.opacity(span.confidence))\"><title>\(span.activity.rawValue) "
                + "(\(span.confidence.rawValue)) \(Markup.clock(span.start, seconds: true))–\(Markup.clock(span.end, seconds: true))</title></rect>\n"
        }

        // Crashes and dismissals: marks across the speed plot and the rows.
        let markTop = Markup.number(Self.speedTop)
        let markHeight = Markup.number(Self.activityRow.top + Self.activityRow.height - Self.speedTop)
        for dismissal in report.dismissals {
            svg +=
                "<path class=\"dismissed-tick\" data-reason=\"\(dismissal.reason.rawValue)\" "
                + "d=\"M\(Markup.number(x(dismissal.time))),\(markTop)v\(markHeight)\" stroke=\"\(ReportPalette.dismissed)\">"
                + "<title>Dismissed at \(Markup.clock(dismissal.time, seconds: true)): \(dismissal.reason.rawValue)</title></path>\n"
        }
        for crash in report.crashes {
            svg +=
                "<path class=\"crash-tick\" data-confidence=\"\(crash.confidence.rawValue)\" "
                + "d=\"M\(Markup.number(x(crash.detectedAt))),\(markTop)v\(markHeight)\" stroke=\"\(ReportPalette.crash)\">"
                + "<title>Crash at \(Markup.clock(crash.detectedAt, seconds: true)), confidence \(crash.confidence.rawValue)</title></path>\n"
        }

        // Time axis.
        let tickStep = Self.tickStep(span: end - start)
        var tick = (start / tickStep).rounded(.up) * tickStep
        while tick <= end {
            let xx = x(tick)
            svg +=
                "<path class=\"tick\" d=\"M\(Markup.number(xx)),\(Markup.number(Self.activityRow.top + Self.activityRow.height))v5\"/>"
                + "<text class=\"axis\" x=\"\(Markup.number(xx))\" y=\"\(Markup.number(Self.axisBaseline))\" "
                + "text-anchor=\"middle\">\(Markup.clock(tick, seconds: tickStep < 60))</text>\n"
            tick += tickStep
        }
        svg +=
            "<text class=\"axis\" x=\"\(Markup.number(Self.width - Self.right))\" y=\"\(Markup.number(Self.axisBaseline + 18))\" "
            + "text-anchor=\"end\">UTC, \(String(ISO8601.string(fromSeconds: start).prefix(10)))</text>\n"
        svg += "</svg>"
        return svg
    }

    /// Seconds between time labels: the first round step that gives at most 10 of them.
    static func tickStep(span: Double) -> Double {
        let steps: [Double] = [10, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400]
        return steps.first { span / $0 <= 10 } ?? (span / 10 / 86400).rounded(.up) * 86400
    }
}
