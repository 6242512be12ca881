// RoadSaveEvent's JSON lines (PROTOCOL §3), in both formats: the codec side of Shared/RoadSaveModel/RoadSaveEvent.swift.
import RoadSaveModel

/// The two wire formats of events.
public enum EventFormat: String, Sendable, CaseIterable {
    /// The 4.0 field names (PROTOCOL §3).
    case current
    /// The 3.x dictionary keys of the brief's migration tables, for consumers still on 3.x.
    case legacy
}

extension RoadSaveEvent {
    /// One line of JSON in the given format.
    public func json(_ format: EventFormat = .current) -> String {
        var writer = JSONObjectWriter()
        writer.add("event", name)
        writer.add("eventID", eventID)
        writer.add("app", device.app)
        writer.add("user", device.user)
        switch (body, format) {
        case (.tripDidStart(let info), .current):
            writer.add("tripID", info.tripID)
            writer.add("startDate", ISO8601.string(fromSeconds: info.startDate))
        case (.tripDidStart, .legacy):
            // 3.x's tripDidStart carried no data.
            break
        case (.tripDidEnd(let info), _):
            writer.add("tripID", info.tripID)
            writer.add("startDate", ISO8601.string(fromSeconds: info.startDate))
            writer.add("endDate", ISO8601.string(fromSeconds: info.endDate))
            writer.add("distanceMetres", info.distanceMetres, decimals: 1)
            if format == .current {
                writer.add("duration", info.duration, decimals: 3)
                writer.add("averageSpeed", info.averageSpeed, decimals: 2)
                writer.add("endReason", info.endReason.rawValue)
                writer.add("transportMode", info.transportMode.rawValue)
                writer.add("transportReason", info.transportReason.rawValue)
                if !info.transportSigns.isEmpty {
                    writer.add(
                        "transportSigns",
                        raw: "["
                            + info.transportSigns.map { "\"\($0.rawValue)\"" }
                            .joined(separator: ",") + "]")
                }
                // Written when known: events kept from before them stay as they were.
                for (key, value, decimals) in [
                    ("startLatitude", info.startLatitude, 7), ("startLongitude", info.startLongitude, 7),
                    ("endLatitude", info.endLatitude, 7), ("endLongitude", info.endLongitude, 7),
                    ("maxSpeed", info.maxSpeed, 2),
                ] {
                    if let value { writer.add(key, value, decimals: decimals) }
                }
            }
        case (.crashDetected(let info), .current):
            writer.add("crashID", info.crashID)
            writer.add("confidence", info.confidence.rawValue)
            writer.add("detectedAt", ISO8601.string(fromSeconds: info.detectedAt))
            writer.add("latitude", info.latitude, decimals: 7)
            writer.add("longitude", info.longitude, decimals: 7)
            writer.add("isTest", info.isTest)
            // Added after 4.0's fields, so that consumers reading only those keep working.
            if let details = info.details { details.write(to: &writer) }
        case (.crashDetected(let info), .legacy):
            writer.add("crashID", info.crashID)
            writer.add("timestamp", ISO8601.string(fromSeconds: info.detectedAt))
            writer.add("latitude", info.latitude, decimals: 7)
            writer.add("longitude", info.longitude, decimals: 7)
            // 3.x spelled confidences capitalised ("None" was the suppressed verdict).
            writer.add(
                "confidence", info.confidence.rawValue.prefix(1).uppercased() + info.confidence.rawValue.dropFirst())
            // Not a 3.x key, but a test crash must never look like a real one to any consumer.
            if info.isTest { writer.add("isTest", true) }
        case (.crashFollowUp(let info), _):
            // No 3.x counterpart: both formats carry the same fields.
            writer.add("crashID", info.crashID)
            writer.add("confidence", info.confidence.rawValue)
            writer.add("detectedAt", ISO8601.string(fromSeconds: info.detectedAt))
            writer.add("observedUntil", ISO8601.string(fromSeconds: info.observedUntil))
            writer.add("outcome", info.outcome.rawValue)
            writer.add("isTest", info.isTest)
            writer.add("records", info.records)
            writer.add("secondsOfData", info.secondsOfData, decimals: 3)
            writer.add("distanceMoved", info.distanceMoved, decimals: 1)
            writer.add("steps", info.steps)
            writer.add("maxSpeedAfter", info.maxSpeedAfter, decimals: 2)
            writer.add("latitude", info.latitude, decimals: 7)
            writer.add("longitude", info.longitude, decimals: 7)
        case (.tripBehaviour(let info), _):
            // No 3.x counterpart: both formats carry the same fields.
            info.write(to: &writer)
        }
        return writer.finish()
    }
}

extension CrashDetails {
    /// The members of `crashDetected` after 4.0's; an unknown number is `null`, so that a receiver sees it is unknown.
    func write(to writer: inout JSONObjectWriter) {
        writer.add("speedBeforeImpact", speedBeforeImpact, decimals: 2)
        writer.add("speedAfterImpact", speedAfterImpact, decimals: 2)
        writer.add("deltaV", deltaV, decimals: 2)
        writer.add("peakG", peakG, decimals: 2)
        writer.add("impactDurationMs", impactDurationMs, decimals: 1)
        writer.add("impacts", impacts)
        writer.add("heading", heading.map(Self.shownHeading), decimals: 1)
        writer.add("positionAccuracy", positionAccuracy, decimals: 1)
        writer.add("positionAge", positionAge, decimals: 3)
        writer.add("positionTrusted", positionTrusted)
        writer.add(
            "recentPositions",
            raw: "["
                + recentPositions.map { position in
                    var item = JSONObjectWriter()
                    item.add("latitude", position.latitude, decimals: 7)
                    item.add("longitude", position.longitude, decimals: 7)
                    item.add("time", ISO8601.string(fromSeconds: position.time))
                    return item.finish()
                }.joined(separator: ",") + "]")
        writer.add("inTrip", inTrip)
        if let tripID { writer.add("tripID", tripID) } else { writer.add("tripID", raw: "null") }
    }

    /// To a tenth of a degree in [0, 360): 359.97 is written 0, not 360.
    static func shownHeading(_ degrees: Double) -> Double {
        let tenths = (degrees * 10).rounded()
        return tenths >= 3600 ? 0 : tenths / 10
    }
}

extension TripBehaviour {
    /// The members of `tripBehaviour` (PROTOCOL §3): the verdict, the counts per kind and severity (derived from the
    /// events), then every event. A scored trip has its figures; an unscored one its reason instead.
    func write(to writer: inout JSONObjectWriter) {
        writer.add("tripID", tripID)
        writer.add("endDate", ISO8601.string(fromSeconds: endDate))
        writer.add("distanceMetres", distanceMetres, decimals: 1)
        writer.add("scored", unscored == nil)
        if let unscored { writer.add("unscoredReason", unscored.rawValue) }
        for (key, value) in [
            ("score", score), ("eventsScore", eventsScore), ("smoothnessScore", smoothnessScore),
            ("eventsPer100Kilometres", eventsPer100Kilometres),
            ("longitudinalRMS", longitudinalRMS), ("lateralRMS", lateralRMS),
        ] {
            if let value { writer.add(key, value, decimals: 2) }
        }
        var counts = JSONObjectWriter()
        for kind in DrivingEventKind.allCases {
            var bySeverity = JSONObjectWriter()
            for severity in DrivingEventSeverity.allCases {
                bySeverity.add(severity.rawValue, count(of: kind, severity: severity))
            }
            counts.add(kind.rawValue, raw: bySeverity.finish())
        }
        writer.add("counts", raw: counts.finish())
        writer.add(
            "events",
            raw: "["
                + events.map { event in
                    var item = JSONObjectWriter()
                    event.write(to: &item)
                    return item.finish()
                }.joined(separator: ",") + "]")
    }
}

extension DrivingEvent {
    /// Its members as `tripBehaviour`'s `events` write them; `kindKey` names the kind's member (the report's GeoJSON
    /// has a `kind` of its own).
    public func write(to writer: inout JSONObjectWriter, kindKey: String = "kind") {
        writer.add(kindKey, kind.rawValue)
        writer.add("severity", severity.rawValue)
        writer.add("start", ISO8601.string(fromSeconds: start))
        writer.add("end", ISO8601.string(fromSeconds: end))
        writer.add("peak", peak, decimals: 2)
        writer.add("startSpeed", startSpeed, decimals: 2)
        writer.add("endSpeed", endSpeed, decimals: 2)
        writer.add("latitude", latitude, decimals: 7)
        writer.add("longitude", longitude, decimals: 7)
        writer.add("fixes", fixes)
    }
}
