import RoadSaveModel
import Testing

@testable import Report

struct ReportCollectorTests {
    @Test func countsOneTripPerTripIDAndOneCrashPerCrashID() {
        let collector = Fixture.collector()
        // Redelivered events (the notifier's at-least-once) change nothing.
        collector.add(Fixture.tripEnd(Fixture.device, "trip-A", Fixture.t0 + 600, Fixture.t0 + 1200))
        collector.add(Fixture.crash(Fixture.device, "crash-1", Fixture.t0 + 2400))
        let reports = collector.reports()
        #expect(reports.count == 1)
        let report = reports[0]
        #expect(report.trips.map(\.tripID) == ["trip-A", "trip-B"])
        #expect(report.trips.allSatisfy { $0.info != nil })
        #expect(report.crashes.map(\.crashID) == ["crash-1"])
        #expect(report.dismissals.map(\.reason) == [.speedMaintainedAfterImpact])
        #expect(report.records == 301 + 51)
        #expect(report.firstSeen == Fixture.t0 && report.lastSeen == Fixture.t0 + 3000)
    }

    @Test func aTripWithoutItsEndIsOpenUntilTheLastRecord() {
        let collector = Fixture.collector()
        collector.add(Fixture.tripStart(Fixture.device, "trip-C", Fixture.t0 + 2800))
        let report = collector.reports()[0]
        let open = report.trips.last!
        #expect(open.tripID == "trip-C" && open.info == nil)
        #expect(open.endDate(lastSeen: report.lastSeen) == Fixture.t0 + 3000)
        #expect(
            report.track(of: open).map(\.t)
                == stride(from: Fixture.t0 + 2800, through: Fixture.t0 + 3000, by: 10).map { $0 })
    }

    @Test func anEndWithoutItsStartIsATripToo() {
        let collector = ReportCollector()
        collector.add(Fixture.tripEnd(Fixture.device, "trip-X", Fixture.t0, Fixture.t0 + 60))
        collector.add(Fixture.tripStart(Fixture.device, "trip-X", Fixture.t0))
        let report = collector.reports()[0]
        #expect(report.trips.count == 1)
        #expect(report.trips[0].info?.endDate == Fixture.t0 + 60)
        #expect(report.trips[0].event.name == "tripDidEnd")
    }

    @Test func recordsOutOfOrderAndTwiceGiveOneTrackInTimeOrder() {
        let collector = ReportCollector()
        let d = Fixture.device
        for t in [30.0, 10, 20, 10, 40] { collector.add(Fixture.fix(d, Fixture.t0 + t, -33.9, 18.4 + t / 1e4)) }
        // An invalid fix (negative accuracy) is no position.
        collector.add(
            SensorRecord(
                device: d, t: Fixture.t0 + 50,
                payload: .location(
                    LocationFix(latitude: 0, longitude: 0, horizontalAccuracy: -1))))
        let report = collector.reports()[0]
        #expect(report.track.map { $0.t - Fixture.t0 } == [10, 20, 30, 40])
        #expect(report.records == 6)
    }

    @Test func tracksAreSplitIntoTripsAndTheRest() {
        let report = Fixture.collector().reports()[0]
        let tripA = report.track(of: report.trips[0])
        #expect(tripA.first?.t == Fixture.t0 + 600 && tripA.last?.t == Fixture.t0 + 1200)
        let outside = report.tracksOutsideTrips
        #expect(outside.map { $0.first!.t - Fixture.t0 } == [0, 1210, 2410])
        #expect(outside.map { $0.last!.t - Fixture.t0 } == [590, 1790, 3000])
        // Every position is in exactly one of them.
        let inside = report.trips.reduce(0) { $0 + report.track(of: $1).count }
        #expect(inside + outside.reduce(0) { $0 + $1.count } == report.track.count)
    }

    @Test func aLongSilenceOutsideTripsIsNotDrawnAsALine() {
        let collector = ReportCollector()
        let d = Fixture.device
        collector.add(Fixture.fix(d, Fixture.t0, -33.9, 18.4))
        collector.add(Fixture.fix(d, Fixture.t0 + 10, -33.9, 18.4))
        collector.add(Fixture.fix(d, Fixture.t0 + 10 + DeviceReport.outsideGap + 1, -33.8, 18.5))
        #expect(collector.reports()[0].tracksOutsideTrips.map(\.count) == [2, 1])
    }

    @Test func activityReportsBecomeSpans() {
        let report = Fixture.collector().reports()[0]
        #expect(report.activities.map(\.activity) == [.stationary, .automotive, .stationary, .automotive, .stationary])
        #expect(report.activities.first?.start == Fixture.t0)
        #expect(report.activities.last?.end == Fixture.t0 + 3000)
        for (a, b) in zip(report.activities, report.activities.dropFirst()) { #expect(a.end == b.start) }
        // The same activity at another confidence is another span.
        let spans = ActivitySpan.spans(
            from: [
                (0, ActivityObservation(.walking, .high)), (5, ActivityObservation(.walking, .high)),
                (10, ActivityObservation(.walking, .low)),
            ], until: 20)
        #expect(
            spans == [
                ActivitySpan(start: 0, end: 10, activity: .walking, confidence: .high),
                ActivitySpan(start: 10, end: 20, activity: .walking, confidence: .low),
            ])
    }

    @Test func onlyTheUsersAskedForAreKept() {
        let collector = ReportCollector(users: ["driver-2"])
        collector.add(Fixture.fix(Fixture.device, Fixture.t0, -33.9, 18.4))
        let other = DeviceID(app: "fleet-app-secret", user: "driver-2")
        collector.add(Fixture.fix(other, Fixture.t0, -33.9, 18.4))
        collector.add(Fixture.crash(Fixture.device, "c", Fixture.t0))
        #expect(collector.reports().map(\.device) == [other])
    }
}
