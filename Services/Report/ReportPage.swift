import RecordCodecs
import RoadSaveModel

/// The report as one self-contained HTML page: inline CSS and SVG, no script, nothing fetched (its
/// Content-Security-Policy forbids both, so a mistake would show as a console error, not as a request). Per device: a
/// map, a timeline, and tables of trips, crashes and dismissed candidates. The same input gives the same bytes (no
/// time of writing in the page).
///
/// The applicationID is a credential: the page shows it masked, as the logs do (`DeviceID.description`). Everything
/// from the input is escaped (`Markup.escape`).
public struct ReportPage {
    /// Where the trips and crashes came from, and the dismissals.
    public struct Sources: Sendable, Equatable {
        public var records: String
        /// The events file, when trips and crashes came from one.
        public var events: String?
        /// How the engines ran (the platform).
        public var engines: String

        public init(records: String, events: String? = nil, engines: String) {
            self.records = records
            self.events = events
            self.engines = engines
        }
    }

    public var reports: [DeviceReport]
    public var sources: Sources
    public var title: String

    public init(reports: [DeviceReport], sources: Sources, title: String? = nil) {
        self.reports = reports
        self.sources = sources
        self.title = title ?? "RoadSave report: " + sources.records
    }

    /// A device as the page names it: the masked application and the user.
    public static func name(of device: DeviceID) -> String { device.description }

    static func tripTitle(_ trip: ReportTrip, number: Int) -> String {
        var text = "Trip \(number) (\(trip.tripID)): \(Markup.dateTime(trip.startDate))"
        if let info = trip.info {
            text +=
                " – \(Markup.clock(info.endDate, seconds: true)) UTC, "
                + "\(JSONObjectWriter.fixedNumber(info.distanceMetres / 1000, decimals: 2)) km, \(info.endReason.rawValue)"
        } else {
            text += " UTC, still open"
        }
        return text
    }

    static let style = """
        body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#222;background:#fff;max-width:1000px}
        h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:32px 0 8px;border-top:1px solid #ccc;padding-top:16px}
        h3{font-size:15px;margin:16px 0 4px}p{margin:4px 0}.muted{color:#666}
        svg{display:block;max-width:100%;height:auto}svg text{font:12px system-ui,sans-serif}
        .map-background{fill:#f4f6f8;stroke:#d0d7de}.map-empty{fill:#888}
        .track-outside{fill:none;stroke-width:1.5;stroke-dasharray:3 3}
        .trip-track{fill:none;stroke-width:3;stroke-linejoin:round;stroke-linecap:round}
        .trip-start{fill:#fff;stroke-width:2.5}.trip-end{stroke:#fff;stroke-width:1}
        .crash-marker circle{stroke:#fff;stroke-width:2}.crash-marker text{fill:#d62728;font-weight:600}
        .dismissed-marker path{stroke-width:2.5;fill:none}.dismissed-marker text{fill:#555}
        .scale-bar path{stroke:#333;stroke-width:1.5;fill:none}.scale-bar text{fill:#333}
        .trip-shade{fill-opacity:.12}.speed{fill:none;stroke:#222;stroke-width:1.2;stroke-linejoin:round}
        .grid{stroke:#e6e6e6}.tick{stroke:#444}.axis{fill:#555;font-size:11px}
        .crash-tick{stroke-width:2}.dismissed-tick{stroke-width:1.5;stroke-dasharray:4 3}
        table{border-collapse:collapse;margin:4px 0 12px;font-size:12.5px}
        th,td{border-bottom:1px solid #e2e2e2;padding:3px 7px;text-align:left;font-variant-numeric:tabular-nums;vertical-align:top}
        code{font-size:11.5px}
        th{background:#f6f6f6}td.n{text-align:right}
        .swatch{display:inline-block;width:12px;height:12px;border-radius:2px;vertical-align:-1px;margin-right:4px}
        .legend{font-size:12px;color:#444;margin:2px 0 8px}.legend span{margin-right:12px;white-space:nowrap}
        nav a{margin-right:10px}
        """

    public func html() -> String {
        let trips = reports.reduce(0) { $0 + $1.trips.count }
        let crashes = reports.reduce(0) { $0 + $1.crashes.count }
        let dismissed = reports.reduce(0) { $0 + $1.dismissals.count }
        var page = """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <link rel="icon" href="data:,">
            <title>\(Markup.escape(title))</title>
            <style>
            \(Self.style)
            </style>
            </head>
            <body>
            <header>
            <h1>\(Markup.escape(title))</h1>
            <p class="summary" data-devices="\(reports.count)" data-trips="\(trips)" data-crashes="\(crashes)" data-dismissed="\(dismissed)">\(reports.count) \(reports.count == 1 ? "device" : "devices"), \(trips) \(trips == 1 ? "trip" : "trips"), \(crashes) \(crashes == 1 ? "crash" : "crashes"), \(dismissed) dismissed crash \(dismissed == 1 ? "candidate" : "candidates").</p>

            """
        page += "<p class=\"muted\">Records: \(Markup.escape(sources.records)). "
        if let events = sources.events {
            page +=
                "Trips and crashes: the events in \(Markup.escape(events)). Dismissed candidates: the engines over the records "
                + "(\(Markup.escape(sources.engines))), which may differ from what made those events."
        } else {
            page +=
                "Trips, crashes and dismissed candidates: the engines over the records (\(Markup.escape(sources.engines)))."
        }
        page += " Times are UTC; applicationIDs are masked.</p>\n"
        if reports.count > 1 {
            page +=
                "<nav>"
                + reports.enumerated().map { index, report in
                    "<a href=\"#device-\(index + 1)\">\(Markup.escape(report.device.user))</a>"
                }.joined(separator: " ") + "</nav>\n"
        }
        page += "</header>\n"
        for (index, report) in reports.enumerated() { page += section(report, number: index + 1) }
        page +=
            "<footer class=\"muted\"><p>Made by <code>roadsave report</code>. Map: equirectangular, north up; "
            + "tracks drawn within half a pixel of every recorded position; markers at their exact positions.</p></footer>\n"
        page += "</body>\n</html>\n"
        return page
    }

    func section(_ report: DeviceReport, number: Int) -> String {
        var html =
            "<section class=\"device\" id=\"device-\(number)\" data-user=\"\(Markup.escape(report.device.user))\">\n"
        html += "<h2>\(Markup.escape(Self.name(of: report.device)))</h2>\n"
        html +=
            "<p class=\"muted\">\(report.records) records, \(report.track.count) positions, "
            + "\(Markup.dateTime(report.firstSeen)) – \(Markup.dateTime(report.lastSeen)) UTC; "
            + "\(report.trips.count) \(report.trips.count == 1 ? "trip" : "trips"), \(report.crashes.count) "
            + "\(report.crashes.count == 1 ? "crash" : "crashes"), \(report.dismissals.count) dismissed.</p>\n"
        html += MapView(report).svg() + "\n"
        html +=
            "<p class=\"legend\"><span>○ trip start</span><span>■ trip end</span>"
            + "<span><span class=\"swatch\" style=\"background:\(ReportPalette.crash)\"></span>crash (confidence)</span>"
            + "<span>✕ dismissed candidate (reason)</span><span>- - - positions outside trips</span></p>\n"
        html += TimelineView(report).svg() + "\n"
        html +=
            "<p class=\"legend\">Activity (the classifier's reports; paler: lower confidence): "
            + ActivityType.allCases.map {
                "<span><span class=\"swatch\" style=\"background:\(ReportPalette.activity($0))\"></span>\($0.rawValue)</span>"
            }.joined() + "</p>\n"
        html += tripTable(report) + crashTable(report) + dismissalTable(report)
        html += "</section>\n"
        return html
    }

    func tripTable(_ report: DeviceReport) -> String {
        guard !report.trips.isEmpty else { return "<h3>Trips</h3>\n<p class=\"muted\">No trips.</p>\n" }
        var html =
            "<h3>Trips</h3>\n<table class=\"trips\"><thead><tr><th>#</th><th>trip ID</th><th>start (UTC)</th><th>end</th>"
            + "<th>duration</th><th>distance (km)</th><th>average (km/h)</th><th>max (km/h)</th><th>from → to</th><th>end reason</th>"
            + "<th>transport</th><th>driving</th></tr></thead><tbody>\n"
        for (index, trip) in report.trips.enumerated() {
            html +=
                "<tr data-trip-id=\"\(Markup.escape(trip.tripID))\"><td><span class=\"swatch\" "
                + "style=\"background:\(ReportPalette.trip(index))\"></span>\(index + 1)</td>"
                + "<td><code>\(Markup.escape(trip.tripID))</code></td><td>\(Markup.dateTime(trip.startDate))</td>"
            if let info = trip.info {
                html +=
                    "<td>\(Markup.clock(info.endDate, seconds: true))</td><td>\(Markup.duration(info.duration))</td>"
                    + "<td class=\"n\">\(JSONObjectWriter.fixedNumber(info.distanceMetres / 1000, decimals: 2))</td>"
                    + "<td class=\"n\">\(JSONObjectWriter.fixedNumber(info.averageSpeed * 3.6, decimals: 1))</td>"
                    + "<td class=\"n\">\(info.maxSpeed.map { JSONObjectWriter.fixedNumber($0 * 3.6, decimals: 1) } ?? "")</td>"
                    + "<td>\(Self.fromTo(info))</td>"
                    + "<td>\(info.endReason.rawValue)</td><td>\(info.transportMode.rawValue) (\(info.transportReason.rawValue))"
                    + (info.transportSigns.contains { $0 != info.transportReason }
                        ? "; signs: " + info.transportSigns.map(\.rawValue).joined(separator: ", ") : "") + "</td>"
                    + Self.drivingCell(trip.behaviour)
            } else {
                html += "<td>open</td><td></td><td></td><td></td><td></td><td></td><td></td><td></td><td></td>"
            }
            html += "</tr>\n"
        }
        return html + "</tbody></table>\n"
    }

    /// The trip's `tripBehaviour`: its score and events per kind, or why it was not scored.
    static func drivingCell(_ behaviour: TripBehaviour?) -> String {
        guard let behaviour else { return "<td class=\"driving muted\">–</td>" }
        guard let score = behaviour.score else {
            let reason = behaviour.unscored?.rawValue ?? "unscored"
            return "<td class=\"driving\" data-unscored=\"\(reason)\">unscored: \(reason)</td>"
        }
        let counts = DrivingEventKind.allCases.compactMap { kind -> String? in
            let count = behaviour.count(of: kind)
            guard count > 0 else { return nil }
            let severe = behaviour.count(of: kind, severity: .severe)
            return "\(count) \(kind.rawValue)" + (severe > 0 ? " (\(severe) severe)" : "")
        }
        return "<td class=\"driving\" data-score=\"\(JSONObjectWriter.fixedNumber(score, decimals: 0))\"><strong>"
            + JSONObjectWriter.fixedNumber(score, decimals: 0) + "</strong>"
            + (counts.isEmpty ? "; no events" : "; " + counts.joined(separator: ", ")) + "</td>"
    }

    /// Where a trip began and ended, as the event gives them (empty for events written before they were kept).
    static func fromTo(_ info: TripInfo) -> String {
        func place(_ latitude: Double?, _ longitude: Double?) -> String? {
            guard let latitude, let longitude else { return nil }
            return JSONObjectWriter.fixedNumber(latitude, decimals: 5) + ", "
                + JSONObjectWriter.fixedNumber(longitude, decimals: 5)
        }
        guard let from = place(info.startLatitude, info.startLongitude),
            let to = place(info.endLatitude, info.endLongitude)
        else { return "" }
        return "\(from) → \(to)"
    }

    func crashTable(_ report: DeviceReport) -> String {
        guard !report.crashes.isEmpty else { return "<h3>Crashes</h3>\n<p class=\"muted\">No crashes.</p>\n" }
        var html =
            "<h3>Crashes</h3>\n<table class=\"crashes\"><thead><tr><th>crash ID</th><th>detected (UTC)</th>"
            + "<th>confidence</th><th>latitude</th><th>longitude</th><th>position</th><th>speed before (km/h)</th>"
            + "<th>peak (g)</th><th>test</th><th>after</th></tr></thead><tbody>\n"
        for crash in report.crashes {
            let details = crash.details
            html +=
                "<tr data-crash-id=\"\(Markup.escape(crash.crashID))\"><td><code>\(Markup.escape(crash.crashID))</code></td>"
                + "<td>\(Markup.dateTime(crash.detectedAt))</td><td>\(crash.confidence.rawValue)</td>"
                + "<td class=\"n\">\(Self.coordinate(crash.latitude))</td><td class=\"n\">\(Self.coordinate(crash.longitude))</td>"
                + "<td>\(details.map(Self.positionQuality) ?? "–")</td>"
                + "<td class=\"n\">\(details?.speedBeforeImpact.map { JSONObjectWriter.fixedNumber($0 * 3.6, decimals: 1) } ?? "–")</td>"
                + "<td class=\"n\">\(details.map { JSONObjectWriter.fixedNumber($0.peakG, decimals: 1) } ?? "–")</td>"
                + "<td>\(crash.isTest ? "yes" : "no")</td>"
                + Self.followUpCell(report.followUps[crash.crashID]) + "</tr>\n"
        }
        return html + "</tbody></table>\n"
    }

    /// "trusted, 0.4 s old, ±5 m", or why not.
    static func positionQuality(_ details: CrashDetails) -> String {
        guard let age = details.positionAge, let accuracy = details.positionAccuracy else { return "none" }
        return (details.positionTrusted ? "trusted" : "not trusted") + ", "
            + JSONObjectWriter.fixedNumber(age, decimals: 1) + " s old, ±"
            + JSONObjectWriter.fixedNumber(accuracy, decimals: 0) + " m"
    }

    /// The crash's follow-up: its outcome, the end of its watch and the evidence ("personWalking (…): 118 records
    /// in 118 s, 212 steps, moved 150 m").
    static func followUpCell(_ followUp: CrashFollowUpInfo?) -> String {
        guard let followUp else { return "<td class=\"follow-up muted\">–</td>" }
        var evidence = [
            "\(followUp.records) \(followUp.records == 1 ? "record" : "records") in "
                + JSONObjectWriter.fixedNumber(followUp.secondsOfData, decimals: 0) + " s"
        ]
        if followUp.steps > 0 { evidence.append("\(followUp.steps) steps") }
        if let moved = followUp.distanceMoved {
            evidence.append("moved " + JSONObjectWriter.fixedNumber(moved, decimals: 0) + " m")
        }
        if let speed = followUp.maxSpeedAfter {
            evidence.append("up to " + JSONObjectWriter.fixedNumber(speed * 3.6, decimals: 0) + " km/h")
        }
        return
            "<td class=\"follow-up\" data-outcome=\"\(followUp.outcome.rawValue)\"><strong>\(followUp.outcome.rawValue)</strong>"
            + " (\(Markup.dateTime(followUp.observedUntil))): " + evidence.joined(separator: ", ") + "</td>"
    }

    func dismissalTable(_ report: DeviceReport) -> String {
        guard !report.dismissals.isEmpty else {
            return "<h3>Dismissed crash candidates</h3>\n<p class=\"muted\">None.</p>\n"
        }
        var html =
            "<h3>Dismissed crash candidates</h3>\n<table class=\"dismissed\"><thead><tr><th>candidate ID</th>"
            + "<th>impact (UTC)</th><th>reason</th><th>peak (g)</th><th>speed before (km/h)</th><th>speed after (km/h)</th>"
            + "<th>latitude</th><th>longitude</th></tr></thead><tbody>\n"
        for dismissal in report.dismissals {
            html +=
                "<tr data-crash-id=\"\(Markup.escape(dismissal.crashID))\"><td><code>\(Markup.escape(dismissal.crashID))</code></td>"
                + "<td>\(Markup.dateTime(dismissal.time))</td><td>\(dismissal.reason.rawValue)</td>"
                + "<td class=\"n\">\(JSONObjectWriter.fixedNumber(dismissal.peakG, decimals: 1))</td>"
                + "<td class=\"n\">\(dismissal.speedBefore.map { JSONObjectWriter.fixedNumber($0 * 3.6, decimals: 1) } ?? "–")</td>"
                + "<td class=\"n\">\(dismissal.speedAfter.map { JSONObjectWriter.fixedNumber($0 * 3.6, decimals: 1) } ?? "–")</td>"
                + "<td class=\"n\">\(Self.coordinate(dismissal.latitude))</td><td class=\"n\">\(Self.coordinate(dismissal.longitude))</td></tr>\n"
        }
        return html + "</tbody></table>\n"
    }

    static func coordinate(_ value: Double?) -> String {
        value.map { JSONObjectWriter.fixedNumber($0, decimals: 5) } ?? "unknown"
    }
}
