import RoadSaveModel
import Testing

@testable import Report

struct ReportPageTests {
    func count(_ needle: String, in text: String) -> Int { text.components(separatedBy: needle).count - 1 }

    func page(_ reports: [DeviceReport]) -> String {
        ReportPage(reports: reports, sources: .init(records: "day.ndjson", engines: "the embedded platform")).html()
    }

    @Test func drawsOneTrackPerTripAndOneMarkerPerCrash() {
        let collector = Fixture.collector()
        // A crash without a position is listed and on the timeline, but has no place on the map.
        collector.add(Fixture.crash(Fixture.device, "crash-2", Fixture.t0 + 2900, latitude: nil, longitude: nil))
        collector.add(Fixture.tripStart(Fixture.device, "trip-open", Fixture.t0 + 2950))
        let html = page(collector.reports())
        #expect(count("class=\"trip-track\"", in: html) == 3)
        #expect(count("class=\"trip-span\"", in: html) == 3)
        #expect(count("class=\"trip-start\"", in: html) == 3)
        // The open trip has no end.
        #expect(count("class=\"trip-end\"", in: html) == 2)
        #expect(count("class=\"crash-marker\"", in: html) == 1)
        #expect(count("class=\"crash-tick\"", in: html) == 2)
        #expect(
            count(
                "class=\"dismissed-marker\" data-crash-id=\"bump-1\" data-reason=\"speedMaintainedAfterImpact\"",
                in: html) == 1)
        #expect(html.contains("data-trips=\"3\" data-crashes=\"2\" data-dismissed=\"1\""))
        #expect(html.contains("<td>open</td>"))
    }

    @Test func aTripsTableRowSaysWhatItWasTakenInAndTheOtherSignsSeen() {
        let collector = Fixture.collector()
        collector.add(
            RoadSaveEvent(
                device: Fixture.device,
                body: .tripDidStart(
                    TripStartInfo(
                        tripID: "bus-1",
                        startDate: Fixture.t0 + 3000))))
        collector.add(
            RoadSaveEvent(
                device: Fixture.device,
                body: .tripDidEnd(
                    TripInfo(
                        tripID: "bus-1", startDate: Fixture.t0 + 3000, endDate: Fixture.t0 + 3600, distanceMetres: 4000,
                        endReason: .stopDelay, transportMode: .bus, transportReason: .boardedAfterWaiting,
                        transportSigns: [.boardedAfterWaiting, .regularDwellStops]))))
        let html = page(collector.reports())
        #expect(html.contains("<td>bus (boardedAfterWaiting); signs: boardedAfterWaiting, regularDwellStops</td>"))
        #expect(html.contains("<td>car (noTransitEvidence)</td>"), "a trip with no signs names none")
    }

    @Test func aTripsDrivingIsOnTheMapAndInItsRow() {
        let collector = Fixture.collector()
        // Before its trip's events would do as well: a behaviour is attached when the report is made.
        collector.add(Fixture.behaviour())
        collector.add(
            RoadSaveEvent(
                device: Fixture.device,
                body: .tripBehaviour(
                    TripBehaviour(
                        tripID: "trip-B", endDate: Fixture.t0 + 2400, unscored: .crash, distanceMetres: 6000))))
        let html = page(collector.reports())
        #expect(count("class=\"driving-event\"", in: html) == 2)
        #expect(
            count(
                "class=\"driving-event\" data-trip-id=\"trip-A\" data-kind=\"hardBraking\" data-severity=\"severe\"",
                in: html) == 1)
        #expect(html.contains("<th>transport</th><th>driving</th>"))
        #expect(
            html.contains(
                "<td class=\"driving\" data-score=\"43\"><strong>43</strong>; 1 hardBraking (1 severe), 1 sharpCornering</td>"
            ))
        #expect(html.contains("<td class=\"driving\" data-unscored=\"crash\">unscored: crash</td>"))
        // A report of events without behaviour says nothing of it.
        #expect(page(Fixture.collector().reports()).contains("<td class=\"driving muted\">–</td>"))
    }

    @Test func aTripsTableRowSaysWhereTheTripWentAndItsHeldMaximum() {
        let collector = Fixture.collector()
        collector.add(
            RoadSaveEvent(
                device: Fixture.device,
                body: .tripDidStart(
                    TripStartInfo(
                        tripID: "drive-1",
                        startDate: Fixture.t0 + 3000))))
        collector.add(
            RoadSaveEvent(
                device: Fixture.device,
                body: .tripDidEnd(
                    TripInfo(
                        tripID: "drive-1", startDate: Fixture.t0 + 3000, endDate: Fixture.t0 + 3600,
                        distanceMetres: 4000,
                        endReason: .stopDelay, startLatitude: -33.9249, startLongitude: 18.4241, endLatitude: -33.9,
                        endLongitude: 18.5,
                        maxSpeed: 13.5))))
        let html = page(collector.reports())
        #expect(html.contains("<th>max (km/h)</th><th>from → to</th>"))
        #expect(html.contains("<td class=\"n\">48.6</td><td>-33.92490, 18.42410 → -33.90000, 18.50000</td>"), "\(html)")
    }

    @Test func aCrashRowMarksItsFollowUpAndHowFarItsPositionIsTrusted() {
        let collector = Fixture.collector()
        collector.add(
            RoadSaveEvent(
                device: Fixture.device,
                body: .crashDetected(
                    CrashInfo(
                        crashID: "crash-9", confidence: .medium, detectedAt: Fixture.t0 + 2600, latitude: -33.9,
                        longitude: 18.45,
                        isTest: false,
                        details: CrashDetails(
                            speedBeforeImpact: 15, peakG: 32.25, positionAccuracy: 5, positionAge: 0.4,
                            positionTrusted: true)))))
        collector.add(
            RoadSaveEvent(
                device: Fixture.device,
                body: .crashFollowUp(
                    CrashFollowUpInfo(
                        crashID: "crash-9", confidence: .medium, detectedAt: Fixture.t0 + 2600,
                        observedUntil: Fixture.t0 + 2740,
                        outcome: .deviceSilent, isTest: false, records: 0, secondsOfData: 0, distanceMoved: nil,
                        steps: 0,
                        maxSpeedAfter: nil, latitude: -33.9, longitude: 18.45))))
        let html = page(collector.reports())
        #expect(
            html.contains("<th>position</th><th>speed before (km/h)</th><th>peak (g)</th><th>test</th><th>after</th>"))
        #expect(
            html.contains("<td>trusted, 0.4 s old, ±5 m</td><td class=\"n\">54.0</td><td class=\"n\">32.3</td>"),
            "\(html)")
        #expect(html.contains("<td class=\"follow-up\" data-outcome=\"deviceSilent\"><strong>deviceSilent</strong>"))
        #expect(html.contains("0 records in 0 s</td>"))
        // The fixture's own crash has neither details nor a follow-up.
        #expect(
            html.contains(
                "<td>–</td><td class=\"n\">–</td><td class=\"n\">–</td><td>no</td><td class=\"follow-up muted\">–</td>")
        )
    }

    @Test func escapesWhatComesFromTheInputAndMasksTheApplication() {
        let hostile = DeviceID(app: "app-id-secret-123", user: "<script>alert(1)</script>\"'&")
        let collector = Fixture.collector(device: hostile)
        collector.add(Fixture.tripEnd(hostile, "<img src=x onerror=alert(2)>", Fixture.t0 + 100, Fixture.t0 + 200))
        let html = page(collector.reports())
        #expect(!html.lowercased().contains("<script"))
        #expect(!html.contains("<img"))
        #expect(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;"))
        #expect(!html.contains("app-id-secret-123"))
        #expect(html.contains(Secret.mask("app-id-secret-123")))
    }

    @Test func isSelfContainedAndRepeatable() {
        let reports = Fixture.collector().reports()
        let html = page(reports)
        #expect(html == page(reports))
        #expect(html.hasPrefix("<!DOCTYPE html>"))
        #expect(html.contains("Content-Security-Policy\" content=\"default-src 'none'"))
        for reference in ["http://", "https://", "src=", "<link rel=\"stylesheet\"", "<script"]
        where reference != "http://" {
            #expect(!html.contains(reference), "\(reference)")
        }
        // The only URL is the SVG namespace, which is a name, not a request.
        #expect(html.replacingOccurrences(of: "http://www.w3.org/2000/svg", with: "").contains("http://") == false)
    }

    @Test func thinsLongTracksButKeepsTheirEnds() {
        let collector = ReportCollector()
        let d = Fixture.device
        // Ten hours at one fix a second along a straight road: thousands of points that draw as one line.
        for step in 0..<36_000 {
            collector.add(
                Fixture.fix(d, Fixture.t0 + Double(step), -33.95 + Double(step) * 1e-5, 18.4 + Double(step) * 1e-5))
        }
        collector.add(Fixture.tripEnd(d, "long", Fixture.t0, Fixture.t0 + 35_999))
        let report = collector.reports()[0]
        let map = MapView(report)
        let svg = map.svg()
        #expect(svg.utf8.count < 10_000)
        let first = map.projection.point(latitude: -33.95, longitude: 18.4)
        let last = map.projection.point(latitude: -33.95 + 35_999e-5, longitude: 18.4 + 35_999e-5)
        #expect(
            svg.contains(
                "points=\"\(Markup.number(first.x)),\(Markup.number(first.y)) \(Markup.number(last.x)),\(Markup.number(last.y))\""
            ))
    }

    @Test func aDeviceWithoutPositionsSaysSo() {
        let collector = ReportCollector()
        collector.add(Fixture.activity(Fixture.device, Fixture.t0, .walking))
        let html = page(collector.reports())
        #expect(html.contains("No positions in the records of this device"))
    }
}
