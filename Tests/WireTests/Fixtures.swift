import RecordCodecs
import RoadSaveModel

@testable import Wire

/// Records and events shared by the suites. Values are deliberately awkward doubles (not at the JSON writer's
/// precision) where the MessagePack paths must carry them exactly.
enum Fixtures {
    static let device = DeviceID(app: "app-1", user: "user-9")

    /// One record of every kind and option combination.
    static let records: [SensorRecord] = [
        SensorRecord(
            device: device, seq: 1, t: 1_718_708_242.123_456_7,
            payload: .location(
                LocationFix(
                    latitude: -33.924_868_512_345, longitude: 18.424_055_3 + 1e-12,
                    speed: 13.41, course: 271.5, horizontalAccuracy: 4.8))),
        // No optional fields; no seq.
        SensorRecord(
            device: device, t: 1_718_708_243,
            payload: .location(LocationFix(latitude: 0.1 + 0.2, longitude: -180))),
        // Negative accuracy marks an invalid fix and is kept as given.
        SensorRecord(
            device: device, seq: 3, t: 1_718_708_244.5,
            payload: .location(LocationFix(latitude: 90, longitude: 180, speed: 0, horizontalAccuracy: -1))),
        SensorRecord(
            device: device, seq: 4, t: 1_718_708_245.25,
            payload: .activity(ActivityObservation(.automotive, .high))),
        SensorRecord(
            device: DeviceID(app: "app-2", user: "ü-ser ✓"), seq: 9_007_199_254_740_992, t: 1_718_708_246,
            payload: .activity(ActivityObservation(.walking, .low))),
        SensorRecord(device: device, seq: 6, t: 1_718_708_247, payload: .steps(0)),
        SensorRecord(device: device, seq: 7, t: 1_718_708_248, payload: .steps(123_456_789)),
        SensorRecord(
            device: device, seq: 8, t: 1_718_708_249.001,
            payload: .impact(
                ImpactObservation(
                    peakG: 4.123_456_789, durationMs: 35.5,
                    samples: [
                        ImpactSample(dt: -1, x: 0.01, y: -0.98, z: 0.12),
                        ImpactSample(dt: 0, x: 3.9, y: -1.1, z: 0.7 + 1e-9),
                        ImpactSample(dt: 2, x: 0, y: -1, z: 0),
                    ]))),
        SensorRecord(device: device, seq: 9, t: 1_718_708_250, payload: .impact(ImpactObservation(peakG: 2.5))),
        SensorRecord(
            device: device, seq: 10, t: 1_718_708_251,
            payload: .capabilities(DeviceCapabilities(activityAvailable: false, pedometerAvailable: true))),
        SensorRecord(
            device: device, seq: 11, t: 1_718_708_252,
            payload: .capabilities(DeviceCapabilities(activityAvailable: true, pedometerAvailable: false))),
    ]

    /// Records at the model's JSON precision, so that `json()` round-trips them exactly.
    static let jsonExactRecords: [SensorRecord] = [
        SensorRecord(
            device: device, seq: 1, t: 1_718_708_242.5,
            payload: .location(
                LocationFix(
                    latitude: -33.924_868_5, longitude: 18.424_055_3, speed: 13.41,
                    course: 271.5, horizontalAccuracy: 4.8))),
        SensorRecord(
            device: device, seq: 2, t: 1_718_708_243.25, payload: .activity(ActivityObservation(.cycling, .medium))),
        SensorRecord(device: device, t: 1_718_708_244, payload: .steps(42)),
        SensorRecord(
            device: device, seq: 4, t: 1_718_708_245.125,
            payload: .impact(
                ImpactObservation(
                    peakG: 4.5, durationMs: 12.5,
                    samples: [
                        ImpactSample(dt: -0.5, x: 0.25, y: -1, z: 0.125)
                    ]))),
        SensorRecord(
            device: device, seq: 5, t: 1_718_708_246,
            payload: .capabilities(DeviceCapabilities(activityAvailable: false, pedometerAvailable: false))),
    ]

    /// Every event shape: each trip end reason, each crash confidence with and without `isTest`, crashes with
    /// details, each follow-up outcome, a scored trip's behaviour with every kind of driving event and each reason
    /// for an unscored one.
    static let events: [RoadSaveEvent] = {
        var events = [
            RoadSaveEvent(
                device: device,
                body: .tripDidStart(
                    TripStartInfo(tripID: "trip-1", startDate: 1_718_708_242.123_456_7)))
        ]
        for (offset, reason) in TripEndReason.allCases.enumerated() {
            events.append(
                RoadSaveEvent(
                    device: DeviceID(app: "app.x", user: "u\(offset)"),
                    body: .tripDidEnd(
                        TripInfo(
                            tripID: "trip-\(offset)", startDate: 1_718_708_000.5 + Double(offset),
                            endDate: 1_718_709_999.987_654_3, distanceMetres: 12_345.678_9 + Double(offset) / 3,
                            endReason: reason))))
        }
        for confidence in CrashConfidence.allCases {
            for isTest in [false, true] {
                events.append(
                    RoadSaveEvent(
                        device: device,
                        body: .crashDetected(
                            CrashInfo(
                                crashID: "crash-\(confidence.rawValue)-\(isTest)", confidence: confidence,
                                detectedAt: 1_718_708_300.000_1, latitude: -33.924_868_512_345 + (isTest ? 1e-10 : 0),
                                longitude: 18.424_055_3, isTest: isTest))))
            }
        }
        // With the details the engines give now: every member known, and the fewest (no position, no trip).
        events.append(
            RoadSaveEvent(
                device: device,
                body: .crashDetected(
                    CrashInfo(
                        crashID: "crash-detailed", confidence: .high, detectedAt: 1_718_708_400.25, latitude: -33.9248,
                        longitude: 18.4241,
                        isTest: false,
                        details: CrashDetails(
                            speedBeforeImpact: 15.25, speedAfterImpact: 0.125, deltaV: 24.9, peakG: 45.5,
                            impactDurationMs: 90,
                            impacts: 3, heading: 271.5, positionAccuracy: 4.8, positionAge: 0.4, positionTrusted: true,
                            recentPositions: [
                                TimedPosition(latitude: -33.92481, longitude: 18.42405, time: 1_718_708_398.85),
                                TimedPosition(latitude: -33.92482, longitude: 18.42391, time: 1_718_708_397.85),
                            ],
                            inTrip: true, tripID: "trip-9")))))
        events.append(
            RoadSaveEvent(
                device: device,
                body: .crashDetected(
                    CrashInfo(
                        crashID: "crash-bare", confidence: .unknown, detectedAt: 1_718_708_500, latitude: nil,
                        longitude: nil,
                        isTest: false, details: CrashDetails(peakG: 8)))))
        // Each follow-up outcome, with and without a position.
        for (offset, outcome) in CrashFollowUpOutcome.allCases.enumerated() {
            let silent = outcome == .deviceSilent
            events.append(
                RoadSaveEvent(
                    device: device,
                    body: .crashFollowUp(
                        CrashFollowUpInfo(
                            crashID: "crash-\(offset)", confidence: offset % 2 == 0 ? .high : .unknown,
                            detectedAt: 1_718_708_400.25,
                            observedUntil: 1_718_708_540.25, outcome: outcome, isTest: offset == 3,
                            records: silent ? 0 : 130 + offset,
                            secondsOfData: silent ? 0 : 139.5, distanceMoved: silent ? nil : 12.5 * Double(offset),
                            steps: 40 * offset, maxSpeedAfter: outcome == .vehicleMovedOn ? 13.75 : nil,
                            latitude: offset == 1 ? nil : -33.91, longitude: offset == 1 ? nil : 18.43))))
        }
        // A scored trip with an event of every kind and severity, and each reason a trip is not scored.
        let drivingEvents = DrivingEventKind.allCases.enumerated().flatMap { offset, kind in
            DrivingEventSeverity.allCases.map { severity in
                DrivingEvent(
                    kind: kind, severity: severity, start: 1_718_708_600.25 + Double(offset) * 30,
                    end: 1_718_708_602.75 + Double(offset) * 30, peak: kind == .hardBraking ? -4.625 : 3.875,
                    startSpeed: 17.25, endSpeed: 11.5, latitude: -33.924_868_5, longitude: 18.424_055_3,
                    fixes: 3 + offset)
            }
        }
        events.append(
            RoadSaveEvent(
                device: device,
                body: .tripBehaviour(
                    TripBehaviour(
                        tripID: "trip-scored", endDate: 1_718_709_999.987_654_3, events: drivingEvents,
                        distanceMetres: 12_345.678_9,
                        eventsPer100Kilometres: 97.25, longitudinalRMS: 0.875, lateralRMS: 0.625, eventsScore: 9.3125,
                        smoothnessScore: 46.75, score: 28.03125))))
        for reason in UnscoredReason.allCases {
            events.append(
                RoadSaveEvent(
                    device: device,
                    body: .tripBehaviour(
                        TripBehaviour(
                            tripID: "trip-\(reason.rawValue)", endDate: 1_718_709_000.5, unscored: reason,
                            events: reason == .crash ? [drivingEvents[0]] : [], distanceMetres: 850.25))))
        }
        return events
    }()

    /// The 10-field location record of the benchmark, as a JSONValue.
    static let locationValue: JSONValue = .object([
        ("kind", .string("location")), ("app", .string("app-1")), ("user", .string("user-9")),
        ("seq", .number(12)), ("t", .number(1_718_708_242.5)), ("lat", .number(-33.9)), ("lon", .number(18.4)),
        ("speed", .number(13.4)), ("course", .number(271.5)), ("hacc", .number(4.8)),
    ])

    /// `locationValue` with one member replaced (or added).
    static func location(with name: String, _ value: JSONValue) -> JSONValue {
        guard case .object(var members) = locationValue else { return locationValue }
        if let index = members.firstIndex(where: { $0.0 == name }) {
            members[index].1 = value
        } else {
            members.append((name, value))
        }
        return .object(members)
    }

    /// `locationValue` without one member.
    static func location(without name: String) -> JSONValue {
        guard case .object(let members) = locationValue else { return locationValue }
        return .object(members.filter { $0.0 != name })
    }

    static func bytes(_ hex: String) -> [UInt8] {
        let digits = Array(hex.filter { !$0.isWhitespace })
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
    }
}
