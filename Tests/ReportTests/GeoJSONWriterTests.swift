import RecordCodecs
import Testing

@testable import Report

struct GeoJSONWriterTests {
    func features(_ reports: [DeviceReport]) throws -> [JSONValue] {
        let text = GeoJSONWriter.featureCollection(reports)
        let value = try JSONParser.parse(text)
        #expect(value["type"] == .string("FeatureCollection"))
        guard case .array(let features)? = value["features"] else {
            Issue.record("no features array")
            return []
        }
        return features
    }

    func coordinates(_ feature: JSONValue) -> [[Double]] {
        guard case .array(let positions)? = feature["geometry"]?["coordinates"] else { return [] }
        return positions.map { position in
            guard case .array(let numbers) = position else { return [] }
            return numbers.compactMap { if case .number(let n) = $0 { n } else { nil } }
        }
    }

    @Test func tripsAreLineStringsOfLongitudeLatitudeWithTheirEventAsProperties() throws {
        let report = Fixture.collector().reports()[0]
        let features = try features([report])
        let lines = features.filter { $0["geometry"]?["type"] == .string("LineString") }
        #expect(lines.count == 2)
        for (feature, trip) in zip(lines, report.trips) {
            #expect(feature["type"] == .string("Feature"))
            // The properties are the event, as replay writes it.
            #expect(feature["properties"] == (try JSONParser.parse(trip.event.json(.current))))
            let positions = coordinates(feature)
            let track = report.track(of: trip)
            #expect(positions.count == track.count)
            // Longitude first, to 7 decimals.
            func near(_ position: [Double]?, _ point: TrackPoint?) -> Bool {
                guard let position, let point, position.count == 2 else { return false }
                return abs(position[0] - point.longitude) <= 5e-8 && abs(position[1] - point.latitude) <= 5e-8
            }
            #expect(near(positions.first, track.first))
            #expect(near(positions.last, track.last))
            #expect(
                positions.allSatisfy { $0.count == 2 && (-180...180).contains($0[0]) && (-90...90).contains($0[1]) })
        }
    }

    @Test func drivingEventsArePointsNamingTheirTrip() throws {
        let collector = Fixture.collector()
        collector.add(Fixture.behaviour())
        let points = try features(collector.reports()).filter { $0["properties"]?["kind"] == .string("drivingEvent") }
        #expect(points.count == 2)
        let brake = try #require(points.first)
        #expect(brake["geometry"]?["type"] == .string("Point"))
        #expect(brake["geometry"]?["coordinates"] == .array([.number(18.403), .number(-33.948)]))
        #expect(
            brake["properties"]?["tripID"] == .string("trip-A")
                && brake["properties"]?["eventKind"] == .string("hardBraking"))
        #expect(brake["properties"]?["severity"] == .string("severe") && brake["properties"]?["peak"] == .number(-4.75))
    }

    @Test func crashesAndDismissalsArePoints() throws {
        let features = try features(Fixture.collector().reports())
        let points = features.filter { $0["geometry"]?["type"] == .string("Point") }
        #expect(points.count == 2)
        let crash = try #require(points.first { $0["properties"]?["event"] == .string("crashDetected") })
        #expect(crash["geometry"]?["coordinates"] == .array([.number(18.43), .number(-33.91)]))
        #expect(crash["properties"]?["crashID"] == .string("crash-1"))
        let dismissal = try #require(points.first { $0["properties"]?["kind"] == .string("dismissedCrash") })
        #expect(dismissal["properties"]?["reason"] == .string("speedMaintainedAfterImpact"))
        #expect(dismissal["properties"]?["event"] == nil)
    }

    @Test func whatHasNoLineOrPositionHasANullGeometry() throws {
        let collector = ReportCollector()
        let d = Fixture.device
        collector.add(Fixture.fix(d, Fixture.t0 + 5, -33.9, 18.4))
        // The same place twice is one position: no line.
        collector.add(Fixture.fix(d, Fixture.t0 + 6, -33.9, 18.4))
        collector.add(Fixture.tripEnd(d, "short", Fixture.t0, Fixture.t0 + 10))
        collector.add(Fixture.crash(d, "nowhere", Fixture.t0 + 8, latitude: nil, longitude: nil))
        let features = try features(collector.reports())
        #expect(features.count == 2)
        #expect(features.allSatisfy { $0["geometry"] == .null })
    }

    @Test func anEmptyReportIsAnEmptyCollection() throws {
        #expect(try features([]).isEmpty)
    }
}
