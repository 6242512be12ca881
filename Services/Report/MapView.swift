import RecordCodecs
import RoadSaveModel

/// A device's map as SVG: its track, each trip in its own colour with its start (an open circle) and end (a filled
/// square), positions outside trips in grey, crashes (red, with their confidence) and dismissed crash candidates
/// (grey crosses, with the reason), driving events of the trips' `tripBehaviour` (small diamonds in the trip's colour),
/// a scale bar. Tracks are thinned to half a pixel (`PolylineThinning`); markers
/// sit at their exact positions.
///
/// What tests and scripts can count: `.trip-track` (one per trip, `data-trip-id`), `.trip-start`, `.trip-end`,
/// `.crash-marker` (one per crash with a position, `data-crash-id`, `data-confidence`), `.dismissed-marker`
/// (`data-reason`), `.driving-event` (one per driving event, `data-trip-id`, `data-kind`, `data-severity`).
public struct MapView {
    public static let width = 960.0
    public static let height = 520.0
    static let padding = 36.0
    /// Pixels a thinned track may stray from the recorded one.
    public static let tolerance = 0.5

    public let report: DeviceReport
    public let projection: MapProjection

    public init(_ report: DeviceReport) {
        self.report = report
        var bounds = GeoBounds()
        for point in report.track { bounds.include(latitude: point.latitude, longitude: point.longitude) }
        for crash in report.crashes {
            if let latitude = crash.latitude, let longitude = crash.longitude {
                bounds.include(latitude: latitude, longitude: longitude)
            }
        }
        for dismissal in report.dismissals {
            if let latitude = dismissal.latitude, let longitude = dismissal.longitude {
                bounds.include(latitude: latitude, longitude: longitude)
            }
        }
        projection = MapProjection(bounds: bounds, width: Self.width, height: Self.height, padding: Self.padding)
    }

    /// A run of positions projected and thinned.
    func screenPoints(_ track: ArraySlice<TrackPoint>) -> [(x: Double, y: Double)] {
        let projected = track.map { projection.point(latitude: $0.latitude, longitude: $0.longitude) }
        return PolylineThinning.thinned(projected, tolerance: Self.tolerance)
    }

    public func svg() -> String {
        let w = Markup.number(Self.width)
        let h = Markup.number(Self.height)
        var svg =
            "<svg class=\"map\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 \(w) \(h)\" width=\"\(w)\" "
            + "height=\"\(h)\" role=\"img\" aria-label=\"Map of \(Markup.escape(ReportPage.name(of: report.device)))\">\n"
        svg += "<rect class=\"map-background\" x=\"0\" y=\"0\" width=\"\(w)\" height=\"\(h)\"/>\n"
        let hasPositions =
            !report.track.isEmpty || !report.crashesWithPosition.isEmpty
            || !report.dismissalsWithPosition.isEmpty
        if !hasPositions {
            svg +=
                "<text class=\"map-empty\" x=\"\(Markup.number(Self.width / 2))\" y=\"\(Markup.number(Self.height / 2))\" "
                + "text-anchor=\"middle\">No positions in the records of this device</text>\n"
        }

        // Positions outside trips: one path, a move for each run.
        var outside = ""
        for run in report.tracksOutsideTrips {
            let points = screenPoints(run)
            guard let first = points.first else { continue }
            outside += "M" + Markup.number(first.x) + "," + Markup.number(first.y)
            if points.count == 1 { outside += "h0" }
            for point in points.dropFirst() { outside += "L" + Markup.number(point.x) + "," + Markup.number(point.y) }
        }
        if !outside.isEmpty {
            svg += "<path class=\"track-outside\" stroke=\"\(ReportPalette.outsideTrips)\" d=\"\(outside)\"/>\n"
        }

        // Trips, each its colour; the start and end markers after all tracks, so none is covered by a later trip.
        var endpoints = ""
        for (index, trip) in report.trips.enumerated() {
            let colour = ReportPalette.trip(index)
            let id = Markup.escape(trip.tripID)
            let track = report.track(of: trip)
            let points = screenPoints(track)
            svg +=
                "<polyline class=\"trip-track\" data-trip-id=\"\(id)\" stroke=\"\(colour)\" "
                + "points=\"\(Markup.points(points))\"><title>\(Markup.escape(ReportPage.tripTitle(trip, number: index + 1)))</title></polyline>\n"
            if let first = track.first {
                let p = projection.point(latitude: first.latitude, longitude: first.longitude)
                endpoints +=
                    "<circle class=\"trip-start\" data-trip-id=\"\(id)\" cx=\"\(Markup.number(p.x))\" "
                    + "cy=\"\(Markup.number(p.y))\" r=\"5\" stroke=\"\(colour)\"><title>Trip \(index + 1) starts "
                    + "\(Markup.dateTime(trip.startDate)) UTC</title></circle>\n"
            }
            if let info = trip.info, let last = track.last {
                let p = projection.point(latitude: last.latitude, longitude: last.longitude)
                endpoints +=
                    "<rect class=\"trip-end\" data-trip-id=\"\(id)\" x=\"\(Markup.number(p.x - 4.5))\" "
                    + "y=\"\(Markup.number(p.y - 4.5))\" width=\"9\" height=\"9\" fill=\"\(colour)\"><title>Trip \(index + 1) "
                    + "ends \(Markup.dateTime(info.endDate)) UTC (\(Markup.escape(info.endReason.rawValue)))</title></rect>\n"
            }
        }
        svg += endpoints
        svg += drivingEvents()

        // Markers last, labelled, the labels kept apart: crashes' labels are placed first (they matter most) and
        // their markers drawn last (on top).
        var labels = LabelPlacer()
        var crashes = ""
        for crash in report.crashesWithPosition {
            let p = projection.point(latitude: crash.latitude!, longitude: crash.longitude!)
            let text = "crash: " + crash.confidence.rawValue + (crash.isTest ? " (test)" : "")
            crashes +=
                "<g class=\"crash-marker\" data-crash-id=\"\(Markup.escape(crash.crashID))\" "
                + "data-confidence=\"\(crash.confidence.rawValue)\">"
                + "<circle cx=\"\(Markup.number(p.x))\" cy=\"\(Markup.number(p.y))\" r=\"7\" fill=\"\(ReportPalette.crash)\"/>"
                + label(text, at: p, placer: &labels)
                + "<title>Crash at \(Markup.dateTime(crash.detectedAt)) UTC, confidence \(crash.confidence.rawValue)"
                + "\(crash.isTest ? " (a test crash)" : "")</title></g>\n"
        }
        var dismissals = ""
        for dismissal in report.dismissalsWithPosition {
            let p = projection.point(latitude: dismissal.latitude!, longitude: dismissal.longitude!)
            let text = "dismissed: " + dismissal.reason.rawValue
            dismissals +=
                "<g class=\"dismissed-marker\" data-crash-id=\"\(Markup.escape(dismissal.crashID))\" "
                + "data-reason=\"\(Markup.escape(dismissal.reason.rawValue))\">"
                + "<path d=\"M\(Markup.number(p.x - 5)),\(Markup.number(p.y - 5))l10,10m0,-10l-10,10\" "
                + "stroke=\"\(ReportPalette.dismissed)\"/>"
                + label(text, at: p, placer: &labels)
                + "<title>Suspected crash dismissed at \(Markup.dateTime(dismissal.time)) UTC: "
                + "\(Markup.escape(dismissal.reason.rawValue)), peak \(JSONObjectWriter.number(dismissal.peakG, decimals: 1)) g</title></g>\n"
        }
        svg += dismissals + crashes
        if hasPositions { svg += scaleBar() }
        svg += "</svg>"
        return svg
    }

    /// Each trip's driving events (`tripBehaviour`) where they began: a diamond in the trip's colour, outlined darker
    /// when severe, with the kind, severity and peak as its title. Unlabelled: a drive may have dozens.
    func drivingEvents() -> String {
        var svg = ""
        for (index, trip) in report.trips.enumerated() {
            guard let behaviour = trip.behaviour else { continue }
            for event in behaviour.events {
                let p = projection.point(latitude: event.latitude, longitude: event.longitude)
                let severe = event.severity == .severe
                let unit = event.kind == .excessiveSpeed ? "m/s" : "m/s²"
                svg +=
                    "<path class=\"driving-event\" data-trip-id=\"\(Markup.escape(trip.tripID))\" "
                    + "data-kind=\"\(event.kind.rawValue)\" data-severity=\"\(event.severity.rawValue)\" "
                    + "d=\"M\(Markup.number(p.x)),\(Markup.number(p.y - 6))l6,6l-6,6l-6,-6z\" "
                    + "fill=\"\(ReportPalette.trip(index))\" stroke=\"\(severe ? "#000" : "#fff")\">"
                    + "<title>\(event.kind.rawValue) (\(event.severity.rawValue)) at \(Markup.dateTime(event.start)) UTC, "
                    + "peak \(JSONObjectWriter.number(event.peak, decimals: 1)) \(unit), "
                    + "\(JSONObjectWriter.number(event.startSpeed * 3.6, decimals: 0)) → "
                    + "\(JSONObjectWriter.number(event.endSpeed * 3.6, decimals: 0)) km/h</title></path>\n"
            }
        }
        return svg
    }

    /// A label's `<text>`: right of the marker, or left of it (anchored at its end) where the map ends first.
    private func label(_ text: String, at p: (x: Double, y: Double), placer: inout LabelPlacer) -> String {
        let width = placer.width(of: text)
        let onLeft = p.x + 10 + width > Self.width
        let at = placer.place(text, x: onLeft ? p.x - 10 - width : p.x + 10, y: p.y + 4)
        let x = onLeft ? p.x - 10 : at.x
        return "<text x=\"\(Markup.number(x))\" y=\"\(Markup.number(at.y))\"\(onLeft ? " text-anchor=\"end\"" : "")>"
            + Markup.escape(text) + "</text>"
    }

    /// A bar of a round length (1, 2 or 5 times a power of ten metres) between 60 and 150 pixels long.
    func scaleBar() -> String {
        let metresPerPixel = projection.metresPerPixel
        var length = 1.0
        search: for power in 0...7 {
            var unit = 1.0
            for _ in 0..<power { unit *= 10 }
            for step in [1.0, 2.0, 5.0] where (step * unit) / metresPerPixel >= 60 {
                length = step * unit
                break search
            }
        }
        let pixels = length / metresPerPixel
        let x = 16.0
        let y = Self.height - 16
        let text =
            length >= 1000
            ? JSONObjectWriter.number(length / 1000, decimals: 1) + " km"
            : JSONObjectWriter.number(length, decimals: 0) + " m"
        return
            "<g class=\"scale-bar\"><path d=\"M\(Markup.number(x)),\(Markup.number(y - 5))v5h\(Markup.number(pixels))v-5\"/>"
            + "<text x=\"\(Markup.number(x + pixels + 6))\" y=\"\(Markup.number(y))\">\(text) · north up</text></g>\n"
    }
}
