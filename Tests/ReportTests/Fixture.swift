import RoadSaveModel

@testable import DetectionEngine
@testable import Report

/// A small known day of one or two devices: a drive (trip 1), a parked stretch, a second drive (trip 2) with a crash,
/// a dismissed bump, classifier reports.
enum Fixture {
    static let t0 = 1_772_433_000.0
    static let device = DeviceID(app: "fleet-app-secret", user: "driver-1")

    static func fix(_ device: DeviceID, _ t: Double, _ latitude: Double, _ longitude: Double, speed: Double? = 10)
        -> SensorRecord
    {
        SensorRecord(
            device: device, t: t,
            payload: .location(
                LocationFix(
                    latitude: latitude, longitude: longitude, speed: speed,
                    horizontalAccuracy: 5)))
    }

    static func activity(
        _ device: DeviceID, _ t: Double, _ type: ActivityType, _ confidence: ActivityConfidence = .high
    ) -> SensorRecord {
        SensorRecord(device: device, t: t, payload: .activity(ActivityObservation(type, confidence)))
    }

    static func tripEnd(_ device: DeviceID, _ id: String, _ start: Double, _ end: Double) -> RoadSaveEvent {
        RoadSaveEvent(
            device: device,
            body: .tripDidEnd(
                TripInfo(
                    tripID: id, startDate: start, endDate: end, distanceMetres: 1234.5,
                    endReason: .stopDelay, transportMode: .car,
                    transportReason: .noTransitEvidence)))
    }

    static func tripStart(_ device: DeviceID, _ id: String, _ start: Double) -> RoadSaveEvent {
        RoadSaveEvent(device: device, body: .tripDidStart(TripStartInfo(tripID: id, startDate: start)))
    }

    static func crash(
        _ device: DeviceID, _ id: String, _ t: Double, latitude: Double? = -33.91, longitude: Double? = 18.43
    ) -> RoadSaveEvent {
        RoadSaveEvent(
            device: device,
            body: .crashDetected(
                CrashInfo(
                    crashID: id, confidence: .high, detectedAt: t,
                    latitude: latitude, longitude: longitude, isTest: false)))
    }

    static func candidate(_ device: DeviceID, _ id: String, _ t: Double) -> CrashCandidate {
        CrashCandidate(
            crashID: id, app: device.app, user: device.user, time: t, latitude: -33.915, longitude: 18.425,
            positionAccuracy: 5, speedBefore: 12, speedAfter: 12, peakG: 3.2, durationMs: 20, impactCount: 1,
            activity: "inVehicle", tripInProgress: true, isTest: false, samples: [])
    }

    /// trip-A's `tripBehaviour`: scored, a severe hard brake and a harsh sharp turn.
    static func behaviour(_ device: DeviceID = device) -> RoadSaveEvent {
        let brake = DrivingEvent(
            kind: .hardBraking, severity: .severe, start: t0 + 700, end: t0 + 702.5, peak: -4.75,
            startSpeed: 15, endSpeed: 5, latitude: -33.948, longitude: 18.403, fixes: 4)
        let turn = DrivingEvent(
            kind: .sharpCornering, severity: .harsh, start: t0 + 900, end: t0 + 902, peak: 3.75,
            startSpeed: 10, endSpeed: 10, latitude: -33.944, longitude: 18.409, fixes: 3)
        return RoadSaveEvent(
            device: device,
            body: .tripBehaviour(
                TripBehaviour(
                    tripID: "trip-A", endDate: t0 + 1200, events: [brake, turn], distanceMetres: 6000,
                    eventsPer100Kilometres: 30,
                    longitudinalRMS: 0.8, lateralRMS: 0.4, eventsScore: 25, smoothnessScore: 60.98, score: 42.99)))
    }

    /// Records every 10 s from t0 to t0 + 3000 moving north-east; trips 600…1200 and 1800…2400 (ended), a crash at
    /// 2400, a dismissal at 900, automotive during the trips and stationary between.
    static func collector(device: DeviceID = device) -> ReportCollector {
        let collector = ReportCollector()
        for step in 0...300 {
            let t = t0 + Double(step) * 10
            collector.add(fix(device, t, -33.95 + Double(step) * 0.0002, 18.40 + Double(step) * 0.0003))
        }
        for t in stride(from: t0, through: t0 + 3000, by: 60) {
            let driving = (600...1200).contains(t - t0) || (1800...2400).contains(t - t0)
            collector.add(activity(device, t, driving ? .automotive : .stationary))
        }
        collector.add(tripStart(device, "trip-A", t0 + 600))
        collector.add(tripEnd(device, "trip-A", t0 + 600, t0 + 1200))
        collector.add(tripStart(device, "trip-B", t0 + 1800))
        collector.add(tripEnd(device, "trip-B", t0 + 1800, t0 + 2400))
        collector.add(crash(device, "crash-1", t0 + 2400))
        collector.addDismissal(
            device: device, candidate: candidate(device, "bump-1", t0 + 900), reason: .speedMaintainedAfterImpact)
        return collector
    }
}
