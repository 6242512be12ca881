import Foundation
import RecordCodecs
import RoadSaveModel
import Testing

@testable import Report

struct EventFileReaderTests {
    func read(_ lines: [String]) throws(ReportInputError) -> [RoadSaveEvent] {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("events-\(UUID().uuidString).ndjson")
            .path
        _ = FileManager.default.createFile(atPath: path, contents: Data((lines.joined(separator: "\n") + "\n").utf8))
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try EventFileReader.read(path: path)
    }

    func error(_ lines: [String]) -> ReportInputError? {
        do {
            _ = try read(lines)
            return nil
        } catch {
            return error
        }
    }

    let events: [RoadSaveEvent] = [
        Fixture.tripStart(Fixture.device, "trip-A", Fixture.t0 + 600.25),
        Fixture.tripEnd(Fixture.device, "trip-A", Fixture.t0 + 600.25, Fixture.t0 + 1200.5),
        Fixture.crash(Fixture.device, "crash-1", Fixture.t0 + 2400.125),
        Fixture.crash(Fixture.device, "crash-2", Fixture.t0 + 2500, latitude: nil, longitude: nil),
    ]

    @Test func readsWhatReplayWrites() throws {
        #expect(try read(events.map { $0.json(.current) }) == events)
    }

    @Test func readsATripsBehaviourAndNamesABadEvent() throws {
        let brake = DrivingEvent(
            kind: .hardBraking, severity: .harsh, start: Fixture.t0 + 700.25, end: Fixture.t0 + 702.5,
            peak: -3.25, startSpeed: 14.5, endSpeed: 7.75, latitude: -33.92, longitude: 18.42, fixes: 3)
        let scored = RoadSaveEvent(
            device: Fixture.device,
            body: .tripBehaviour(
                TripBehaviour(
                    tripID: "trip-A", endDate: Fixture.t0 + 1200.5, events: [brake], distanceMetres: 9_000.5,
                    eventsPer100Kilometres: 10, longitudinalRMS: 0.5, lateralRMS: 0.25, eventsScore: 50,
                    smoothnessScore: 76.25,
                    score: 63.125 + 0.005)))
        let unscored = RoadSaveEvent(
            device: Fixture.device,
            body: .tripBehaviour(
                TripBehaviour(
                    tripID: "trip-B", endDate: Fixture.t0 + 2000, unscored: .notCar, distanceMetres: 4_000)))
        let read = try read([scored.json(.current), unscored.json(.current)])
        guard case .tripBehaviour(let first)? = read.first?.body, case .tripBehaviour(let second)? = read.last?.body
        else {
            Issue.record("not read as tripBehaviour: \(read)")
            return
        }
        #expect(first.events == [brake] && first.score == 63.13 && first.unscored == nil && first.tripID == "trip-A")
        #expect(
            second
                == TripBehaviour(tripID: "trip-B", endDate: Fixture.t0 + 2000, unscored: .notCar, distanceMetres: 4_000)
        )
        let bad = scored.json(.current).replacingOccurrences(
            of: "\"hardBraking\",\"severity\"", with: "\"wheelie\",\"severity\"")
        #expect(error([bad])?.field == "events[0].kind")
        let badReason = unscored.json(.current).replacingOccurrences(of: "\"notCar\"", with: "\"bored\"")
        #expect(error([badReason])?.field == "unscoredReason")
    }

    @Test func readsTheTransportSignsAndNamesABadOne() throws {
        guard case .tripDidEnd(var info) = events[1].body else {
            Issue.record("not a tripDidEnd")
            return
        }
        info.transportMode = .bus
        info.transportReason = .boardedAfterWaiting
        info.transportSigns = [.boardedAfterWaiting, .regularDwellStops]
        let signed = RoadSaveEvent(device: Fixture.device, body: .tripDidEnd(info))
        #expect(try read([signed.json(.current)]) == [signed])
        let bad = signed.json(.current).replacingOccurrences(of: "\"regularDwellStops\"]", with: "\"hovercraft\"]")
        #expect(error([bad])?.field == "transportSigns[1]")
    }

    @Test func readsWhereATripWentAndNamesABadCoordinate() throws {
        guard case .tripDidEnd(var info) = events[1].body else {
            Issue.record("not a tripDidEnd")
            return
        }
        info.startLatitude = -33.9249
        info.startLongitude = 18.4241
        info.endLatitude = -33.9
        info.endLongitude = 18.5
        info.maxSpeed = 13.5
        let located = RoadSaveEvent(device: Fixture.device, body: .tripDidEnd(info))
        #expect(try read([located.json(.current)]) == [located])
        let line = located.json(.current)
        #expect(
            error([line.replacingOccurrences(of: "\"startLatitude\":-33.9249", with: "\"startLatitude\":-95")])?.field
                == "startLatitude")
        #expect(
            error([line.replacingOccurrences(of: "\"endLongitude\":18.5,", with: "")])?.field == "endLongitude",
            "one coordinate without the other")
        #expect(
            error([line.replacingOccurrences(of: "\"maxSpeed\":13.5", with: "\"maxSpeed\":\"fast\"")])?.field
                == "maxSpeed")
    }

    @Test func readsACrashsDetailsAndItsFollowUpAndNamesABadMember() throws {
        guard case .crashDetected(var info) = events[2].body else {
            Issue.record("not a crashDetected")
            return
        }
        info.details = CrashDetails(
            speedBeforeImpact: 15.25, speedAfterImpact: nil, deltaV: 24.5, peakG: 45.5, impactDurationMs: 90,
            impacts: 2,
            heading: 271.5, positionAccuracy: 4.8, positionAge: 0.4, positionTrusted: true,
            recentPositions: [TimedPosition(latitude: -33.9101, longitude: 18.4299, time: Fixture.t0 + 2399.125)],
            inTrip: true, tripID: "trip-B")
        let detailed = RoadSaveEvent(device: Fixture.device, body: .crashDetected(info))
        let followUp = RoadSaveEvent(
            device: Fixture.device,
            body: .crashFollowUp(
                CrashFollowUpInfo(
                    crashID: info.crashID, confidence: .high, detectedAt: info.detectedAt,
                    observedUntil: info.detectedAt + 140,
                    outcome: .personWalking, isTest: false, records: 212, secondsOfData: 139.5, distanceMoved: 151.5,
                    steps: 220,
                    maxSpeedAfter: nil, latitude: -33.9113, longitude: 18.431)))
        #expect(try read([detailed.json(.current), followUp.json(.current)]) == [detailed, followUp])
        let line = detailed.json(.current)
        #expect(
            error([line.replacingOccurrences(of: "\"latitude\":-33.9101", with: "\"latitude\":-99")])?.field
                == "recentPositions[0].latitude")
        #expect(error([line.replacingOccurrences(of: "\"impacts\":2", with: "\"impacts\":-2")])?.field == "impacts")
        let follow = followUp.json(.current)
        #expect(error([follow.replacingOccurrences(of: "personWalking", with: "fine")])?.field == "outcome")
        #expect(
            error([follow.replacingOccurrences(of: "\"observedUntil\"", with: "\"until\"")])?.field == "observedUntil")
    }

    @Test func readsWhatTailPrintsWithPositions() throws {
        let lines = events.enumerated().map { "{\"position\":\($0.offset + 1),\"event\":\($0.element.json(.current))}" }
        #expect(try read(lines) == events)
    }

    @Test func namesTheLineAndTheField() {
        var lines = events.map { $0.json(.current) }
        lines[2] = lines[2].replacingOccurrences(of: "\"confidence\":\"high\"", with: "\"confidence\":\"sure\"")
        let failure = error(lines)
        #expect(failure?.number == 3)
        #expect(failure?.field == "confidence")
        #expect(
            failure?.description.contains("line 3: confidence: \"sure\" is not one of high, medium, low, unknown")
                == true)
    }

    @Test func rejectsBadDatesMissingFieldsAndJunk() {
        let start = events[0].json(.current)
        #expect(error([start.replacingOccurrences(of: "2026-03-02T", with: "02/03/2026 ")])?.field == "startDate")
        #expect(error([start.replacingOccurrences(of: "\"tripID\"", with: "\"trip\"")])?.field == "tripID")
        #expect(error(["{\"event\":\"tripDidStart\""])?.description.contains("line 1: not JSON") == true)
        #expect(error(["[1,2]"])?.description.contains("must be a JSON object") == true)
        #expect(error([start.replacingOccurrences(of: "tripDidStart", with: "tripDidPause")])?.field == "event")
    }

    @Test func saysThatLegacyEventsCannotBeReported() {
        let legacy = events[1].json(.legacy)
        let failure = error([legacy])
        #expect(failure?.field == "endReason")
        #expect(failure?.description.contains("legacy") == true)
    }

    @Test func aMissingFileIsNamed() {
        do {
            _ = try EventFileReader.read(path: "/nonexistent/events.ndjson")
            Issue.record("read a missing file")
        } catch {
            #expect(error.description.hasPrefix("/nonexistent/events.ndjson: "))
        }
    }
}
