import Foundation
import RecordCodecs
import RoadSaveModel
import Testing

/// Events used by several tests, with their expected dates computed by hand (see ISO8601Tests' `Instants`).
enum SampleEvents {
    static let device = DeviceID(app: "app-1", user: "user-9")

    /// Starts 2026-03-02T06:31:05.123Z, ends 20 min 0.5 s later at 06:51:05.623Z.
    static let tripStart = TripStartInfo(tripID: "trip-1", startDate: 1_772_433_065.123)
    static let trip = TripInfo(
        tripID: "trip-1", startDate: 1_772_433_065.123, endDate: 1_772_434_265.623,
        distanceMetres: 12_345.67, endReason: .stopDelay)
    /// 2024-02-29T00:00:00.500Z.
    static let crash = CrashInfo(
        crashID: "crash-1", confidence: .high, detectedAt: 1_709_164_800.5,
        latitude: -33.92486851, longitude: 18.42405534, isTest: false)

    static let started = RoadSaveEvent(device: device, body: .tripDidStart(tripStart))
    static let ended = RoadSaveEvent(device: device, body: .tripDidEnd(trip))
    static let crashed = RoadSaveEvent(device: device, body: .crashDetected(crash))
}

/// Parses an event line, failing the test if it is not a JSON object.
func parseEvent(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> JSONValue {
    let value = try JSONParser.parse(text)
    guard case .object = value else {
        Issue.record("not an object: \(text)", sourceLocation: sourceLocation)
        return value
    }
    return value
}

@Suite("RoadSaveEvent: current format")
struct RoadSaveEventCurrentTests {
    @Test func tripDidStartFields() throws {
        let event = try parseEvent(SampleEvents.started.json())
        #expect(keys(of: event) == ["event", "eventID", "app", "user", "tripID", "startDate"])
        #expect(event["event"] == .string("tripDidStart"))
        #expect(event["app"] == .string("app-1"))
        #expect(event["user"] == .string("user-9"))
        #expect(event["tripID"] == .string("trip-1"))
        #expect(event["startDate"] == .string("2026-03-02T06:31:05.123Z"))
    }

    @Test func tripDidEndFields() throws {
        let event = try parseEvent(SampleEvents.ended.json(.current))
        #expect(
            keys(of: event) == [
                "event", "eventID", "app", "user", "tripID", "startDate", "endDate",
                "distanceMetres", "duration", "averageSpeed", "endReason", "transportMode",
                "transportReason",
            ])
        #expect(event["event"] == .string("tripDidEnd"))
        #expect(event["app"] == .string("app-1"))
        #expect(event["user"] == .string("user-9"))
        #expect(event["tripID"] == .string("trip-1"))
        #expect(event["startDate"] == .string("2026-03-02T06:31:05.123Z"))
        #expect(event["endDate"] == .string("2026-03-02T06:51:05.623Z"))
        #expect(event["distanceMetres"] == .number(12_345.7)) // one decimal
        #expect(event["duration"] == .number(1200.5)) // 06:51:05.623 − 06:31:05.123
        #expect(event["averageSpeed"] == .number(10.28)) // 12345.67 m / 1200.5 s = 10.2838 m/s, two decimals
        #expect(event["endReason"] == .string("stopDelay"))
    }

    @Test func tripDidEndWritesItsTransportSignsOnlyWhenThereAreAny() throws {
        guard case .tripDidEnd(var info) = SampleEvents.ended.body else {
            Issue.record("not a tripDidEnd")
            return
        }
        info.transportMode = .rail
        info.transportReason = .railSpeed
        info.transportSigns = [.railSpeed, .stationStops]
        let signed = RoadSaveEvent(device: SampleEvents.ended.device, body: .tripDidEnd(info))
        let event = try parseEvent(signed.json(.current))
        #expect(keys(of: event).last == "transportSigns")
        #expect(event["transportSigns"] == .array([.string("railSpeed"), .string("stationStops")]))
        #expect(try !keys(of: parseEvent(signed.json(.legacy))).contains("transportSigns"), "3.x had no such key")
        #expect(signed.eventID == SampleEvents.ended.eventID, "the signs are not part of what the event is about")
    }

    @Test func tripDidEndSaysWhereWhenKnownInTheCurrentFormatOnly() throws {
        guard case .tripDidEnd(var info) = SampleEvents.ended.body else {
            Issue.record("not a tripDidEnd")
            return
        }
        #expect(
            try !keys(of: parseEvent(SampleEvents.ended.json(.current))).contains("startLatitude"),
            "an event from before the positions were kept stays as it was")
        info.startLatitude = -33.92490001
        info.startLongitude = 18.4241
        info.endLatitude = -33.9
        info.endLongitude = 18.5
        info.maxSpeed = 13.456
        let located = RoadSaveEvent(device: SampleEvents.ended.device, body: .tripDidEnd(info))
        let event = try parseEvent(located.json(.current))
        #expect(
            keys(of: event).suffix(5) == ["startLatitude", "startLongitude", "endLatitude", "endLongitude", "maxSpeed"])
        #expect(event["startLatitude"] == .number(-33.9249)) // seven decimals
        #expect(event["endLongitude"] == .number(18.5))
        #expect(event["maxSpeed"] == .number(13.46)) // two decimals
        #expect(try !keys(of: parseEvent(located.json(.legacy))).contains("maxSpeed"), "3.x had no such key")
        #expect(located.eventID == SampleEvents.ended.eventID)
    }

    @Test(arguments: [
        (TripEndReason.stopDelay, "stopDelay"), (.steps, "steps"), (.dataGap, "dataGap"),
        (.detectionPaused, "detectionPaused"), (.detectionModeChanged, "detectionModeChanged"),
        (.monitoringStopped, "monitoringStopped"),
    ])
    func tripDidEndCarriesItsReason(reason: TripEndReason, name: String) throws {
        var trip = SampleEvents.trip
        trip.endReason = reason
        let event = try parseEvent(RoadSaveEvent(device: SampleEvents.device, body: .tripDidEnd(trip)).json())
        #expect(event["endReason"] == .string(name))
    }

    @Test func crashDetectedFields() throws {
        let event = try parseEvent(SampleEvents.crashed.json(.current))
        #expect(
            keys(of: event) == [
                "event", "eventID", "app", "user", "crashID", "confidence", "detectedAt",
                "latitude", "longitude", "isTest",
            ])
        #expect(event["event"] == .string("crashDetected"))
        #expect(event["app"] == .string("app-1"))
        #expect(event["user"] == .string("user-9"))
        #expect(event["crashID"] == .string("crash-1"))
        #expect(event["confidence"] == .string("high"))
        #expect(event["detectedAt"] == .string("2024-02-29T00:00:00.500Z"))
        #expect(event["latitude"] == .number(-33.9248685)) // seven decimals
        #expect(event["longitude"] == .number(18.4240553))
        #expect(event["isTest"] == .bool(false))
    }

    @Test func crashDetectedCarriesItsDetailsAfter40sFieldsInTheCurrentFormatOnly() throws {
        var crash = SampleEvents.crash
        crash.details = CrashDetails(
            speedBeforeImpact: 15.254, speedAfterImpact: nil, deltaV: 24.9, peakG: 45.5, impactDurationMs: 90,
            impacts: 2, heading: 271.55, positionAccuracy: 4.8, positionAge: 0.4, positionTrusted: true,
            recentPositions: [
                TimedPosition(latitude: -33.924801234, longitude: 18.42405, time: 1_709_164_799.0),
                TimedPosition(latitude: -33.92482, longitude: 18.42391, time: 1_709_164_798.0),
            ],
            inTrip: true, tripID: "trip-7")
        let event = try parseEvent(
            RoadSaveEvent(device: SampleEvents.device, body: .crashDetected(crash)).json(.current))
        #expect(
            keys(of: event) == [
                "event", "eventID", "app", "user", "crashID", "confidence", "detectedAt",
                "latitude", "longitude", "isTest", "speedBeforeImpact", "speedAfterImpact", "deltaV",
                "peakG", "impactDurationMs", "impacts", "heading", "positionAccuracy", "positionAge",
                "positionTrusted", "recentPositions", "inTrip", "tripID",
            ])
        #expect(event["speedBeforeImpact"] == .number(15.25))
        // Unknown is null, never a made-up zero.
        #expect(event["speedAfterImpact"] == .null)
        #expect(event["heading"] == .number(271.6) || event["heading"] == .number(271.5))
        #expect(
            event["impacts"] == .number(2) && event["positionTrusted"] == .bool(true) && event["inTrip"] == .bool(true))
        #expect(event["tripID"] == .string("trip-7"))
        guard case .array(let positions)? = event["recentPositions"] else {
            Issue.record("recentPositions is not an array")
            return
        }
        #expect(positions.count == 2)
        #expect(positions.first?["latitude"] == .number(-33.9248012))
        #expect(positions.first?["time"] == .string("2024-02-28T23:59:59.000Z"))
        // Without a trip, tripID is null; the legacy format is unchanged.
        crash.details?.inTrip = false
        crash.details?.tripID = nil
        let untripped = try parseEvent(RoadSaveEvent(device: SampleEvents.device, body: .crashDetected(crash)).json())
        #expect(untripped["tripID"] == .null && untripped["inTrip"] == .bool(false))
        // A heading just short of north is written as north, never as 360.
        crash.details?.heading = 359.97
        let north = try parseEvent(RoadSaveEvent(device: SampleEvents.device, body: .crashDetected(crash)).json())
        #expect(north["heading"] == .number(0))
        #expect(
            RoadSaveEvent(device: SampleEvents.device, body: .crashDetected(crash)).json(.legacy)
                == SampleEvents.crashed.json(.legacy))
    }

    @Test(arguments: EventFormat.allCases)
    func crashFollowUpFields(format: EventFormat) throws {
        let followUp = CrashFollowUpInfo(
            crashID: "crash-1", confidence: .high, detectedAt: 1_709_164_800.5, observedUntil: 1_709_164_940.5,
            outcome: .personWalking, isTest: false, records: 212, secondsOfData: 139.25, distanceMoved: 151.26,
            steps: 220,
            maxSpeedAfter: nil, latitude: -33.92336, longitude: 18.4258)
        let event = RoadSaveEvent(device: SampleEvents.device, body: .crashFollowUp(followUp))
        let line = try parseEvent(event.json(format))
        #expect(
            keys(of: line) == [
                "event", "eventID", "app", "user", "crashID", "confidence", "detectedAt", "observedUntil",
                "outcome", "isTest", "records", "secondsOfData", "distanceMoved", "steps",
                "maxSpeedAfter", "latitude", "longitude",
            ])
        #expect(line["event"] == .string("crashFollowUp") && line["outcome"] == .string("personWalking"))
        #expect(line["observedUntil"] == .string("2024-02-29T00:02:20.500Z"))
        #expect(
            line["distanceMoved"] == .number(151.3) && line["maxSpeedAfter"] == .null && line["steps"] == .number(220))
        // Its own event ID, stable, not the crash's.
        #expect(event.eventID != SampleEvents.crashed.eventID)
        #expect(event.eventID == RoadSaveEvent(device: SampleEvents.device, body: .crashFollowUp(followUp)).eventID)
        #expect(event.time == followUp.observedUntil && event.name == "crashFollowUp")
    }

    @Test(arguments: EventFormat.allCases)
    func tripBehaviourFields(format: EventFormat) throws {
        let brake = DrivingEvent(
            kind: .hardBraking, severity: .severe, start: 1_709_164_700.25, end: 1_709_164_702.5,
            peak: -4.75, startSpeed: 16.5, endSpeed: 6.25, latitude: -33.92336, longitude: 18.4258,
            fixes: 4)
        let behaviour = TripBehaviour(
            tripID: "trip-1", endDate: 1_709_164_800.5, events: [brake], distanceMetres: 12_500.25,
            eventsPer100Kilometres: 20, longitudinalRMS: 0.75, lateralRMS: 0.5,
            eventsScore: 33.333, smoothnessScore: 54.5, score: 43.9165)
        let event = RoadSaveEvent(device: SampleEvents.device, body: .tripBehaviour(behaviour))
        let line = try parseEvent(event.json(format))
        #expect(
            keys(of: line) == [
                "event", "eventID", "app", "user", "tripID", "endDate", "distanceMetres", "scored",
                "score", "eventsScore", "smoothnessScore", "eventsPer100Kilometres", "longitudinalRMS",
                "lateralRMS", "counts", "events",
            ])
        #expect(
            line["scored"] == .bool(true) && line["score"] == .number(43.92) && line["eventsScore"] == .number(33.33))
        #expect(line["endDate"] == .string("2024-02-29T00:00:00.500Z"))
        #expect(
            line["counts"]?["hardBraking"]?["severe"] == .number(1)
                && line["counts"]?["hardBraking"]?["harsh"] == .number(0))
        #expect(line["counts"]?["excessiveSpeed"]?["harsh"] == .number(0))
        guard case .array(let items)? = line["events"], let first = items.first else {
            Issue.record("events is not an array")
            return
        }
        #expect(first["kind"] == .string("hardBraking") && first["severity"] == .string("severe"))
        #expect(first["peak"] == .number(-4.75) && first["fixes"] == .number(4))
        #expect(first["start"] == .string("2024-02-28T23:58:20.250Z"))
        // Its own stable event ID, not the trip end's; its time is the trip's end.
        #expect(event.eventID == RoadSaveEvent(device: SampleEvents.device, body: .tripBehaviour(behaviour)).eventID)
        #expect(event.eventID != SampleEvents.ended.eventID)
        #expect(event.time == behaviour.endDate && event.name == "tripBehaviour")
        // Unscored: the reason, and no figures.
        let unscored = try parseEvent(
            RoadSaveEvent(
                device: SampleEvents.device,
                body: .tripBehaviour(
                    TripBehaviour(
                        tripID: "trip-2", endDate: 1_709_164_800.5, unscored: .sparseGPS, distanceMetres: 4_000))
            ).json(format))
        #expect(unscored["scored"] == .bool(false) && unscored["unscoredReason"] == .string("sparseGPS"))
        #expect(unscored["score"] == nil && unscored["events"] == .array([]))
    }

    @Test func theDelegateHearsTheFollowUpThroughItsExtension() {
        final class Dispatcher: RoadSaveDelegate {
            var heard: [String] = []
            func tripDidStart(_ tripInfo: TripStartInfo) {}
            func tripDidEnd(_ tripInfo: TripInfo) {}
            func crashDetected(_ crashInfo: CrashInfo) { heard.append("crash \(crashInfo.crashID)") }
            func crashDidFollowUp(_ followUp: CrashFollowUpInfo) {
                heard.append("\(followUp.outcome.rawValue) \(followUp.crashID)")
            }
            func tripWasScored(_ behaviour: TripBehaviour) { heard.append("scored \(behaviour.tripID)") }
        }
        /// Written for the brief: no follow-up method, and it still compiles and takes every event.
        final class BriefDelegate: RoadSaveDelegate {
            var crashes = 0
            func tripDidStart(_ tripInfo: TripStartInfo) {}
            func tripDidEnd(_ tripInfo: TripInfo) {}
            func crashDetected(_ crashInfo: CrashInfo) { crashes += 1 }
        }
        let followUp = RoadSaveEvent(
            device: SampleEvents.device,
            body: .crashFollowUp(
                CrashFollowUpInfo(
                    crashID: "crash-1", confidence: .high, detectedAt: 1, observedUntil: 141, outcome: .deviceSilent,
                    isTest: false,
                    records: 0, secondsOfData: 0, distanceMoved: nil, steps: 0, maxSpeedAfter: nil, latitude: nil,
                    longitude: nil)))
        let scored = RoadSaveEvent(
            device: SampleEvents.device,
            body: .tripBehaviour(
                TripBehaviour(
                    tripID: "trip-1", endDate: 1, unscored: .tooShort, distanceMetres: 10)))
        let dispatcher = Dispatcher()
        SampleEvents.crashed.deliver(to: dispatcher)
        followUp.deliver(to: dispatcher)
        scored.deliver(to: dispatcher)
        #expect(dispatcher.heard == ["crash crash-1", "deviceSilent crash-1", "scored trip-1"])
        let brief = BriefDelegate()
        SampleEvents.crashed.deliver(to: brief)
        followUp.deliver(to: brief)
        scored.deliver(to: brief)
        #expect(brief.crashes == 1)
    }

    @Test(arguments: [(CrashConfidence.high, "high"), (.medium, "medium"), (.low, "low"), (.unknown, "unknown")])
    func crashConfidenceNames(confidence: CrashConfidence, name: String) throws {
        var crash = SampleEvents.crash
        crash.confidence = confidence
        let event = try parseEvent(RoadSaveEvent(device: SampleEvents.device, body: .crashDetected(crash)).json())
        #expect(event["confidence"] == .string(name))
    }

    @Test func testCrashIsFlagged() throws {
        var crash = SampleEvents.crash
        crash.isTest = true
        let event = try parseEvent(RoadSaveEvent(device: SampleEvents.device, body: .crashDetected(crash)).json())
        #expect(event["isTest"] == .bool(true))
    }

    @Test func zeroDurationTripHasZeroAverageSpeed() throws {
        let trip = TripInfo(
            tripID: "t", startDate: 1_772_433_065, endDate: 1_772_433_065, distanceMetres: 0,
            endReason: .detectionPaused)
        let event = try parseEvent(RoadSaveEvent(device: SampleEvents.device, body: .tripDidEnd(trip)).json())
        #expect(event["duration"] == .number(0))
        #expect(event["averageSpeed"] == .number(0))
    }

    @Test func namesAndTimes() {
        #expect(SampleEvents.started.name == "tripDidStart")
        #expect(SampleEvents.ended.name == "tripDidEnd")
        #expect(SampleEvents.crashed.name == "crashDetected")
        #expect(SampleEvents.started.time == SampleEvents.tripStart.startDate)
        #expect(SampleEvents.ended.time == SampleEvents.trip.endDate)
        #expect(SampleEvents.crashed.time == SampleEvents.crash.detectedAt)
    }

    @Test func identifiersAndTextAreEscaped() throws {
        let device = DeviceID(app: "a\"pp", user: "us\\er\n")
        let line = RoadSaveEvent(device: device, body: .tripDidStart(TripStartInfo(tripID: "t\"1", startDate: 0)))
            .json()
        #expect(!line.contains("\n"))
        let event = try parseEvent(line)
        #expect(event["app"] == .string("a\"pp"))
        #expect(event["user"] == .string("us\\er\n"))
        #expect(event["tripID"] == .string("t\"1"))
    }

    @Test(arguments: EventFormat.allCases)
    func everyLineIsValidJSONForFoundation(format: EventFormat) throws {
        for event in [SampleEvents.started, SampleEvents.ended, SampleEvents.crashed] {
            let object = try JSONSerialization.jsonObject(with: Data(event.json(format).utf8)) as? [String: Any]
            #expect(object?["event"] as? String == event.name)
            #expect(object?["eventID"] as? String == event.eventID)
        }
    }

    @Test func linesAreRepeatable() {
        #expect(SampleEvents.crashed.json() == SampleEvents.crashed.json())
        #expect(SampleEvents.ended.json(.legacy) == SampleEvents.ended.json(.legacy))
    }
}

@Suite("RoadSaveEvent: eventID")
struct RoadSaveEventIDTests {
    @Test func eventIDIsCarriedAndUUIDShaped() throws {
        for event in [SampleEvents.started, SampleEvents.ended, SampleEvents.crashed] {
            let parsed = try parseEvent(event.json())
            #expect(parsed["eventID"] == .string(event.eventID))
            #expect(event.eventID.split(separator: "-").map(\.count) == [8, 4, 4, 4, 12])
        }
    }

    @Test func eventIDIsStableForTheSameEvent() {
        let again = RoadSaveEvent(
            device: DeviceID(app: "app-1", user: "user-9"),
            body: .crashDetected(
                CrashInfo(
                    crashID: "crash-1", confidence: .high, detectedAt: 1_709_164_800.5,
                    latitude: -33.92486851, longitude: 18.42405534, isTest: false)))
        #expect(again.eventID == SampleEvents.crashed.eventID)
    }

    @Test func startAndEndOfTheSameTripHaveDifferentIDs() {
        #expect(SampleEvents.started.eventID != SampleEvents.ended.eventID)
    }

    @Test func eventIDsDifferBetweenEvents() {
        var otherCrash = SampleEvents.crash
        otherCrash.crashID = "crash-2"
        var otherTrip = SampleEvents.trip
        otherTrip.tripID = "trip-2"
        let ids = [
            SampleEvents.started.eventID, SampleEvents.ended.eventID, SampleEvents.crashed.eventID,
            RoadSaveEvent(device: SampleEvents.device, body: .crashDetected(otherCrash)).eventID,
            RoadSaveEvent(device: SampleEvents.device, body: .tripDidEnd(otherTrip)).eventID,
            RoadSaveEvent(device: DeviceID(app: "app-1", user: "user-8"), body: .crashDetected(SampleEvents.crash))
                .eventID,
            RoadSaveEvent(device: DeviceID(app: "app-2", user: "user-9"), body: .crashDetected(SampleEvents.crash))
                .eventID,
            // The same crash ID as a trip ID is still a different event.
            RoadSaveEvent(
                device: SampleEvents.device, body: .tripDidStart(TripStartInfo(tripID: "crash-1", startDate: 0))
            ).eventID,
        ]
        #expect(Set(ids).count == ids.count)
    }

    @Test func deviceBoundaryCannotCollide() {
        let a = RoadSaveEvent(device: DeviceID(app: "ab", user: "c"), body: .crashDetected(SampleEvents.crash))
        let b = RoadSaveEvent(device: DeviceID(app: "a", user: "bc"), body: .crashDetected(SampleEvents.crash))
        #expect(a.eventID != b.eventID)
    }
}

@Suite("RoadSaveEvent: legacy format")
struct RoadSaveEventLegacyTests {
    @Test func tripDidStartCarriesNoTripData() throws {
        let event = try parseEvent(SampleEvents.started.json(.legacy))
        #expect(keys(of: event) == ["event", "eventID", "app", "user"])
        #expect(event["event"] == .string("tripDidStart"))
    }

    @Test func tripDidEndUsesThe3xKeys() throws {
        let event = try parseEvent(SampleEvents.ended.json(.legacy))
        #expect(
            keys(of: event) == ["event", "eventID", "app", "user", "tripID", "startDate", "endDate", "distanceMetres"])
        #expect(event["tripID"] == .string("trip-1"))
        #expect(event["startDate"] == .string("2026-03-02T06:31:05.123Z"))
        #expect(event["endDate"] == .string("2026-03-02T06:51:05.623Z"))
        #expect(event["distanceMetres"] == .number(12_345.7))
    }

    @Test func crashDetectedUsesThe3xKeys() throws {
        let event = try parseEvent(SampleEvents.crashed.json(.legacy))
        #expect(
            keys(of: event) == [
                "event", "eventID", "app", "user", "crashID", "timestamp", "latitude",
                "longitude", "confidence",
            ])
        #expect(event["crashID"] == .string("crash-1"))
        #expect(event["timestamp"] == .string("2024-02-29T00:00:00.500Z"))
        #expect(event["latitude"] == .number(-33.9248685))
        #expect(event["longitude"] == .number(18.4240553))
        #expect(event["confidence"] == .string("High"))
        #expect(event["detectedAt"] == nil)
        #expect(event["isTest"] == nil)
    }

    @Test(arguments: [(CrashConfidence.high, "High"), (.medium, "Medium"), (.low, "Low"), (.unknown, "Unknown")])
    func confidencesAreCapitalised(confidence: CrashConfidence, name: String) throws {
        var crash = SampleEvents.crash
        crash.confidence = confidence
        let event = try parseEvent(
            RoadSaveEvent(device: SampleEvents.device, body: .crashDetected(crash)).json(.legacy))
        #expect(event["confidence"] == .string(name))
    }

    @Test func testCrashKeepsIsTest() throws {
        var crash = SampleEvents.crash
        crash.isTest = true
        let event = try parseEvent(
            RoadSaveEvent(device: SampleEvents.device, body: .crashDetected(crash)).json(.legacy))
        #expect(event["isTest"] == .bool(true))
        #expect(event["crashID"] == .string("crash-1"))
    }
}

@Suite("TripInfo and CrashConfidence")
struct TripAndCrashModelTests {
    @Test func durationAndAverageSpeed() {
        let trip = TripInfo(tripID: "t", startDate: 1000, endDate: 1600, distanceMetres: 9000, endReason: .steps)
        #expect(trip.duration == 600)
        #expect(trip.averageSpeed == 15) // 9000 m / 600 s
    }

    @Test func zeroDurationGivesZeroSpeed() {
        let trip = TripInfo(tripID: "t", startDate: 1000, endDate: 1000, distanceMetres: 50, endReason: .dataGap)
        #expect(trip.duration == 0)
        #expect(trip.averageSpeed == 0)
        #expect(trip.averageSpeed.isFinite)
    }

    @Test func endBeforeStartGivesZeroDurationNotNegative() {
        let trip = TripInfo(tripID: "t", startDate: 1000, endDate: 990, distanceMetres: 50, endReason: .dataGap)
        #expect(trip.duration == 0)
        #expect(trip.averageSpeed == 0)
    }

    @Test(arguments: [
        (CrashVerdict.high, CrashConfidence?.some(.high)), (.medium, .medium), (.low, .low), (.none, nil),
    ])
    func confidenceFromVerdict(verdict: CrashVerdict, expected: CrashConfidence?) {
        #expect(CrashConfidence(verdict: verdict) == expected)
    }

    @Test func verdictNamesMatchThePlatformProtocol() {
        #expect(CrashVerdict.allCases.map(\.rawValue) == ["high", "medium", "low", "none"])
        #expect(CrashConfidence.allCases.map(\.rawValue) == ["high", "medium", "low", "unknown"])
    }

    @Test func activityConfidenceIsOrdered() {
        #expect(ActivityConfidence.low < .medium)
        #expect(ActivityConfidence.medium < .high)
        #expect(!(ActivityConfidence.high < .high))
    }

    @Test func detectionModes() {
        #expect(CrashDetectionMode.all.detectsTrips && CrashDetectionMode.all.detectsCrashes)
        #expect(!CrashDetectionMode.crashOnly.detectsTrips && CrashDetectionMode.crashOnly.detectsCrashes)
        #expect(CrashDetectionMode.tripOnly.detectsTrips && !CrashDetectionMode.tripOnly.detectsCrashes)
        #expect(!CrashDetectionMode.disabled.detectsTrips && !CrashDetectionMode.disabled.detectsCrashes)
    }
}
