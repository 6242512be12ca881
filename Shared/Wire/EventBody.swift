import RecordCodecs
import RoadSaveModel

/// An event as a MessagePack map: how detection keeps the events in its outbox and serves them on its feed, and how
/// the notifier stores them.
///
/// | key | events | value |
/// | --- | --- | --- |
/// | `event` | all | the event's name: `tripDidStart`, `tripDidEnd`, `crashDetected`, `crashFollowUp` or `tripBehaviour` |
/// | `app`, `user` | all | the device, strings of 1…256 bytes |
/// | `tripID`, `startDate` | `tripDidStart`, `tripDidEnd` | string; float64 Unix seconds |
/// | `endDate`, `distanceMetres`, `endReason` | `tripDidEnd` | float64 Unix seconds; float64; a `TripEndReason` name |
/// | `transportMode`, `transportReason`, `transportSigns` | `tripDidEnd` | names; the signs only when there is one |
/// | `startLatitude`, `startLongitude`, `endLatitude`, `endLongitude`, `maxSpeed` | `tripDidEnd` | float64, each only when known |
/// | `crashID`, `confidence`, `detectedAt` | `crashDetected` | string; a `CrashConfidence` name; float64 Unix seconds |
/// | `latitude`, `longitude` | `crashDetected` | float64, or nil when the device never reported a position |
/// | `isTest` | `crashDetected`, `crashFollowUp` | boolean |
/// | `peakG`, `impacts`, `positionTrusted`, `inTrip` | `crashDetected` | float64; integer; booleans (absent in bodies stored before them) |
/// | `speedBeforeImpact`, `speedAfterImpact`, `deltaV`, `impactDurationMs`, `heading`, `positionAccuracy`, `positionAge`, `tripID` | `crashDetected` | float64 or string, each only when known |
/// | `recentPositions` | `crashDetected` | array of `[latitude, longitude, time]` float64 triples, newest first |
/// | `crashID`, `confidence`, `detectedAt`, `observedUntil`, `outcome` | `crashFollowUp` | string; names; float64 Unix seconds; a `CrashFollowUpOutcome` name |
/// | `records`, `secondsOfData`, `steps` | `crashFollowUp` | integer; float64; integer |
/// | `distanceMoved`, `maxSpeedAfter`, `latitude`, `longitude` | `crashFollowUp` | float64, each only when known |
/// | `tripID`, `endDate`, `distanceMetres` | `tripBehaviour` | string; float64 Unix seconds; float64 |
/// | `unscoredReason` | `tripBehaviour` | an `UnscoredReason` name, only when the trip was not scored |
/// | `score`, `eventsScore`, `smoothnessScore`, `eventsPer100Kilometres`, `longitudinalRMS`, `lateralRMS` | `tripBehaviour` | float64, each only when known |
/// | `events` | `tripBehaviour` | array of maps: `kind`, `severity` (names), `start`, `end`, `peak`, `startSpeed`, `endSpeed`, `latitude`, `longitude` (float64), `fixes` (integer) |
///
/// The names are PROTOCOL §3's; dates travel as float64, so every field round-trips exactly. `eventID`, `duration`
/// and `averageSpeed` are derived, so they are not written, nor are `tripBehaviour`'s counts (the events give them). A reader ignores keys it does not know.
public enum EventBody {
    /// The map of `event`, its keys in the order of the table.
    public static func encode(_ event: RoadSaveEvent) -> [UInt8] {
        MessagePack.withPacker(capacity: 200) { packer in
            switch event.body {
            case .tripDidStart(let info):
                packer.packMapHeader(5)
                packEventHead(event, packer)
                packer.pack("tripID")
                packer.pack(info.tripID)
                packer.pack("startDate")
                packer.pack(double: info.startDate)
            case .tripDidEnd(let info):
                let whereabouts = [
                    ("startLatitude", info.startLatitude), ("startLongitude", info.startLongitude),
                    ("endLatitude", info.endLatitude), ("endLongitude", info.endLongitude),
                    ("maxSpeed", info.maxSpeed),
                ].compactMap { key, value in value.map { (key, $0) } }
                packer.packMapHeader(10 + (info.transportSigns.isEmpty ? 0 : 1) + whereabouts.count)
                packEventHead(event, packer)
                packer.pack("tripID")
                packer.pack(info.tripID)
                packer.pack("startDate")
                packer.pack(double: info.startDate)
                packer.pack("endDate")
                packer.pack(double: info.endDate)
                packer.pack("distanceMetres")
                packer.pack(double: info.distanceMetres)
                packer.pack("endReason")
                packer.pack(info.endReason.rawValue)
                packer.pack("transportMode")
                packer.pack(info.transportMode.rawValue)
                packer.pack("transportReason")
                packer.pack(info.transportReason.rawValue)
                if !info.transportSigns.isEmpty {
                    packer.pack("transportSigns")
                    packer.packArrayHeader(info.transportSigns.count)
                    for sign in info.transportSigns { packer.pack(sign.rawValue) }
                }
                // Written when known, as in the JSON.
                for (key, value) in whereabouts {
                    packer.pack(key)
                    packer.pack(double: value)
                }
            case .crashDetected(let info):
                let details = info.details.map(detailNumbers) ?? []
                let detailCount = info.details.map { 5 + ($0.tripID == nil ? 0 : 1) } ?? 0
                packer.packMapHeader(9 + details.count + detailCount)
                packEventHead(event, packer)
                packCrashHead(crashID: info.crashID, confidence: info.confidence, detectedAt: info.detectedAt, packer)
                // nil when the device never reported a position: unknown, never a made-up 0,0.
                packer.pack("latitude")
                if let latitude = info.latitude { packer.pack(double: latitude) } else { packer.packNil() }
                packer.pack("longitude")
                if let longitude = info.longitude { packer.pack(double: longitude) } else { packer.packNil() }
                packer.pack("isTest")
                packer.pack(info.isTest)
                if let more = info.details {
                    packer.pack("peakG")
                    packer.pack(double: more.peakG)
                    packer.pack("impacts")
                    packer.pack(Int64(more.impacts))
                    packer.pack("positionTrusted")
                    packer.pack(more.positionTrusted)
                    packer.pack("inTrip")
                    packer.pack(more.inTrip)
                    if let tripID = more.tripID {
                        packer.pack("tripID")
                        packer.pack(tripID)
                    }
                    packer.pack("recentPositions")
                    packer.packArrayHeader(more.recentPositions.count)
                    for position in more.recentPositions {
                        packer.packArrayHeader(3)
                        packer.pack(double: position.latitude)
                        packer.pack(double: position.longitude)
                        packer.pack(double: position.time)
                    }
                    for (key, value) in details {
                        packer.pack(key)
                        packer.pack(double: value)
                    }
                }
            case .crashFollowUp(let info):
                let known = [
                    ("distanceMoved", info.distanceMoved), ("maxSpeedAfter", info.maxSpeedAfter),
                    ("latitude", info.latitude), ("longitude", info.longitude),
                ]
                .compactMap { key, value in value.map { (key, $0) } }
                packer.packMapHeader(12 + known.count)
                packEventHead(event, packer)
                packCrashHead(crashID: info.crashID, confidence: info.confidence, detectedAt: info.detectedAt, packer)
                packer.pack("observedUntil")
                packer.pack(double: info.observedUntil)
                packer.pack("outcome")
                packer.pack(info.outcome.rawValue)
                packer.pack("isTest")
                packer.pack(info.isTest)
                packer.pack("records")
                packer.pack(Int64(info.records))
                packer.pack("secondsOfData")
                packer.pack(double: info.secondsOfData)
                packer.pack("steps")
                packer.pack(Int64(info.steps))
                for (key, value) in known {
                    packer.pack(key)
                    packer.pack(double: value)
                }
            case .tripBehaviour(let info):
                let figures = behaviourFigures(info)
                packer.packMapHeader(7 + (info.unscored == nil ? 0 : 1) + figures.count)
                packEventHead(event, packer)
                packer.pack("tripID")
                packer.pack(info.tripID)
                packer.pack("endDate")
                packer.pack(double: info.endDate)
                packer.pack("distanceMetres")
                packer.pack(double: info.distanceMetres)
                if let unscored = info.unscored {
                    packer.pack("unscoredReason")
                    packer.pack(unscored.rawValue)
                }
                for (key, value) in figures {
                    packer.pack(key)
                    packer.pack(double: value)
                }
                packer.pack("events")
                packer.packArrayHeader(info.events.count)
                for item in info.events {
                    packer.packMapHeader(10)
                    packer.pack("kind")
                    packer.pack(item.kind.rawValue)
                    packer.pack("severity")
                    packer.pack(item.severity.rawValue)
                    for (key, value) in [
                        ("start", item.start), ("end", item.end), ("peak", item.peak),
                        ("startSpeed", item.startSpeed), ("endSpeed", item.endSpeed),
                        ("latitude", item.latitude), ("longitude", item.longitude),
                    ] {
                        packer.pack(key)
                        packer.pack(double: value)
                    }
                    packer.pack("fixes")
                    packer.pack(Int64(item.fixes))
                }
            }
        }
    }

    /// A behaviour's figures that are known (a scored trip's), by key.
    private static func behaviourFigures(_ info: TripBehaviour) -> [(String, Double)] {
        [
            ("score", info.score), ("eventsScore", info.eventsScore), ("smoothnessScore", info.smoothnessScore),
            ("eventsPer100Kilometres", info.eventsPer100Kilometres), ("longitudinalRMS", info.longitudinalRMS),
            ("lateralRMS", info.lateralRMS),
        ]
        .compactMap { key, value in value.map { (key, $0) } }
    }

    /// The crash details' numbers that are known, by key.
    private static func detailNumbers(_ details: CrashDetails) -> [(String, Double)] {
        [
            ("speedBeforeImpact", details.speedBeforeImpact), ("speedAfterImpact", details.speedAfterImpact),
            ("deltaV", details.deltaV), ("impactDurationMs", details.impactDurationMs), ("heading", details.heading),
            ("positionAccuracy", details.positionAccuracy), ("positionAge", details.positionAge),
        ]
        .compactMap { key, value in value.map { (key, $0) } }
    }

    /// Which crash, how sure, when: the keys both crash events start with after the event's head.
    private static func packCrashHead(
        crashID: String, confidence: CrashConfidence, detectedAt: Double, _ packer: Packer
    ) {
        packer.pack("crashID")
        packer.pack(crashID)
        packer.pack("confidence")
        packer.pack(confidence.rawValue)
        packer.pack("detectedAt")
        packer.pack(double: detectedAt)
    }

    private static func packEventHead(_ event: RoadSaveEvent, _ packer: Packer) {
        packer.pack("event")
        packer.pack(event.name)
        packer.pack("app")
        packer.pack(event.device.app)
        packer.pack("user")
        packer.pack(event.device.user)
    }

    /// Reads an event body (errors: the MessagePack ones, or `invalidEvent` with the field in `path`).
    public static func decode(_ body: some Collection<UInt8>) throws(WireError) -> RoadSaveEvent {
        let value = try MessagePack.decode(body)
        guard case .object = value else {
            throw WireError(.invalidEvent, "an event body must be a map, found \(value.typeName)")
        }
        let fields = EventFields(value: value)
        let name = try fields.string("event")
        let device = DeviceID(app: try fields.identifier("app"), user: try fields.identifier("user"))
        switch name {
        case "tripDidStart":
            return RoadSaveEvent(
                device: device,
                body: .tripDidStart(
                    TripStartInfo(tripID: try fields.identifier("tripID"), startDate: try fields.number("startDate"))))
        case "tripDidEnd":
            let reasonName = try fields.string("endReason")
            guard let reason = TripEndReason(rawValue: reasonName) else {
                throw WireError(.invalidEvent, "unknown end reason \"\(reasonName)\"", path: "endReason")
            }
            // Bodies stored before rides were judged have no transport fields: unknown, not classified.
            let modeName = try fields.optionalString("transportMode") ?? TransportMode.unknown.rawValue
            guard let mode = TransportMode(rawValue: modeName) else {
                throw WireError(.invalidEvent, "unknown transport mode \"\(modeName)\"", path: "transportMode")
            }
            let modeReasonName = try fields.optionalString("transportReason") ?? TransportReason.notClassified.rawValue
            guard let modeReason = TransportReason(rawValue: modeReasonName) else {
                throw WireError(
                    .invalidEvent, "unknown transport reason \"\(modeReasonName)\"", path: "transportReason")
            }
            return RoadSaveEvent(
                device: device,
                body: .tripDidEnd(
                    TripInfo(
                        tripID: try fields.identifier("tripID"), startDate: try fields.number("startDate"),
                        endDate: try fields.number("endDate"), distanceMetres: try fields.number("distanceMetres"),
                        endReason: reason, transportMode: mode, transportReason: modeReason,
                        transportSigns: try fields.transportSigns(),
                        startLatitude: try fields.numberIfPresent("startLatitude"),
                        startLongitude: try fields.numberIfPresent("startLongitude"),
                        endLatitude: try fields.numberIfPresent("endLatitude"),
                        endLongitude: try fields.numberIfPresent("endLongitude"),
                        maxSpeed: try fields.numberIfPresent("maxSpeed"))))
        case "crashDetected":
            let confidenceName = try fields.string("confidence")
            guard let confidence = CrashConfidence(rawValue: confidenceName) else {
                throw WireError(.invalidEvent, "unknown confidence \"\(confidenceName)\"", path: "confidence")
            }
            return RoadSaveEvent(
                device: device,
                body: .crashDetected(
                    CrashInfo(
                        crashID: try fields.identifier("crashID"), confidence: confidence,
                        detectedAt: try fields.number("detectedAt"), latitude: try fields.optionalNumber("latitude"),
                        longitude: try fields.optionalNumber("longitude"), isTest: try fields.bool("isTest"),
                        details: try fields.crashDetails())))
        case "crashFollowUp":
            let confidenceName = try fields.string("confidence")
            guard let confidence = CrashConfidence(rawValue: confidenceName) else {
                throw WireError(.invalidEvent, "unknown confidence \"\(confidenceName)\"", path: "confidence")
            }
            let outcomeName = try fields.string("outcome")
            guard let outcome = CrashFollowUpOutcome(rawValue: outcomeName) else {
                throw WireError(.invalidEvent, "unknown outcome \"\(outcomeName)\"", path: "outcome")
            }
            return RoadSaveEvent(
                device: device,
                body: .crashFollowUp(
                    CrashFollowUpInfo(
                        crashID: try fields.identifier("crashID"), confidence: confidence,
                        detectedAt: try fields.number("detectedAt"),
                        observedUntil: try fields.number("observedUntil"), outcome: outcome,
                        isTest: try fields.bool("isTest"), records: try fields.count("records"),
                        secondsOfData: try fields.number("secondsOfData"),
                        distanceMoved:
                            try fields.numberIfPresent("distanceMoved"), steps: try fields.count("steps"),
                        maxSpeedAfter: try fields.numberIfPresent("maxSpeedAfter"),
                        latitude: try fields.numberIfPresent("latitude"),
                        longitude: try fields.numberIfPresent("longitude"))))
        case "tripBehaviour":
            let reasonName = try fields.optionalString("unscoredReason")
            let unscored = try reasonName.map { name throws(WireError) in
                guard let reason = UnscoredReason(rawValue: name) else {
                    throw WireError(.invalidEvent, "unknown reason \"\(name)\"", path: "unscoredReason")
                }
                return reason
            }
            return RoadSaveEvent(
                device: device,
                body: .tripBehaviour(
                    TripBehaviour(
                        tripID: try fields.identifier("tripID"), endDate: try fields.number("endDate"),
                        unscored: unscored, events: try fields.drivingEvents(),
                        distanceMetres: try fields.number("distanceMetres"),
                        eventsPer100Kilometres: try fields.numberIfPresent("eventsPer100Kilometres"),
                        longitudinalRMS: try fields.numberIfPresent("longitudinalRMS"),
                        lateralRMS: try fields.numberIfPresent("lateralRMS"),
                        eventsScore: try fields.numberIfPresent("eventsScore"),
                        smoothnessScore: try fields.numberIfPresent("smoothnessScore"),
                        score: try fields.numberIfPresent("score"))))
        default:
            throw WireError(
                .invalidEvent, "unknown event \"\(name)\"; expected \(RoadSaveEvent.names.joined(separator: ", "))",
                path: "event")
        }
    }
}
