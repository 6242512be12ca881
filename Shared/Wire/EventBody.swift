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

    /// Reads an event body (errors: the MessagePack ones, or `invalidEvent` with the field in `path`), with the
    /// reader of events' JSON (`EventJSONReader`, the body's form): one reader for both.
    public static func decode(_ body: some Collection<UInt8>) throws(WireError) -> RoadSaveEvent {
        let value = try MessagePack.decode(body)
        do {
            return try EventJSONReader.event(from: value, form: .body)
        } catch {
            throw WireError(.invalidEvent, error.reason, path: error.field ?? "")
        }
    }
}
