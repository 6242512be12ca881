import RoadSaveModel

/// Why an event (its JSON, or its MessagePack body) could not be read: the member at fault (nil: the event as a whole)
/// and what is wrong with it.
public struct EventJSONError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The member, as `confidence` or `recentPositions[0].time`; nil for the whole event.
    public var field: String?
    public var reason: String

    public init(field: String?, reason: String) {
        self.field = field
        self.reason = reason
    }

    public var description: String { (field.map { "\($0): " } ?? "") + reason }
}

/// Reads an event as PROTOCOL §3 writes it in the current format (`RoadSaveEvent.json()`): what `roadsave replay`
/// prints, the notifier publishes, serves by catch-up and writes to NDJSON. The legacy format lacks members the model
/// needs (the trip ID of `tripDidStart`, the end reason) and capitalises confidences: such an event is an error whose
/// reason ends with `legacy`, the caller's words for what to do. Members the model does not keep (`eventID`,
/// `duration`, …) are not checked; a missing or wrong one that it keeps is an error naming it. One reader for the
/// report's `--events`, the subscriber library, and the MessagePack bodies that detection's outbox and the notifier's
/// store keep (`EventBody` in Wire, read as `Form.body`).
public enum EventJSONReader {
    /// How the value was written.
    public enum Form: Sendable, Equatable {
        /// PROTOCOL §3's JSON; `legacy`: what to do about an event in the legacy format (the caller's words).
        case json(legacy: String)
        /// The MessagePack body (`EventBody`): every member its event has is written (`isTest`, a crash's
        /// `positionTrusted` and `inTrip`, a crash's `latitude` and `longitude` as nil when unknown), so a missing one
        /// is an error rather than a default (a test crash must never read as a real one); recent positions are
        /// `[latitude, longitude, time]` triples; numbers are as detection computed them, not only finite ones.
        case body
    }

    /// The event of one JSON object.
    public static func event(from value: JSONValue, legacy: String) throws(EventJSONError) -> RoadSaveEvent {
        try event(from: value, form: .json(legacy: legacy))
    }

    /// The event of one map, written in `form`.
    public static func event(from value: JSONValue, form: Form) throws(EventJSONError) -> RoadSaveEvent {
        func fail(_ field: String?, _ reason: String) -> EventJSONError {
            EventJSONError(field: field, reason: reason)
        }
        guard case .object = value else {
            throw fail(nil, "an event must be \(form == .body ? "a map" : "a JSON object"), found \(value.typeName)")
        }
        let fields = Fields(value: value, form: form, fail: fail)
        let name = try fields.string("event")
        let device = DeviceID(app: try fields.identifier("app"), user: try fields.identifier("user"))
        switch name {
        case "tripDidStart":
            return RoadSaveEvent(
                device: device,
                body: .tripDidStart(
                    TripStartInfo(tripID: try fields.identifier("tripID"), startDate: try fields.date("startDate"))))
        case "tripDidEnd":
            let endReason = try fields.choice("endReason", TripEndReason.self)
            let mode = try fields.optionalChoice("transportMode", TransportMode.self) ?? .unknown
            let modeReason = try fields.optionalChoice("transportReason", TransportReason.self) ?? .notClassified
            let start = try fields.position("startLatitude", "startLongitude")
            let end = try fields.position("endLatitude", "endLongitude")
            return RoadSaveEvent(
                device: device,
                body: .tripDidEnd(
                    TripInfo(
                        tripID: try fields.identifier("tripID"), startDate: try fields.date("startDate"),
                        endDate: try fields.date("endDate"), distanceMetres: try fields.number("distanceMetres"),
                        endReason: endReason, transportMode: mode, transportReason: modeReason,
                        transportSigns: try fields.choices("transportSigns", TransportReason.self),
                        startLatitude: start?.latitude, startLongitude: start?.longitude,
                        endLatitude: end?.latitude, endLongitude: end?.longitude,
                        maxSpeed: try fields.optionalNumber("maxSpeed"))))
        case "crashDetected":
            let confidence = try fields.choice("confidence", CrashConfidence.self)
            let position = try fields.position("latitude", "longitude", writtenWhenUnknown: true)
            return RoadSaveEvent(
                device: device,
                body: .crashDetected(
                    CrashInfo(
                        crashID: try fields.identifier("crashID"), confidence: confidence,
                        detectedAt: try fields.date("detectedAt"),
                        latitude: position?.latitude, longitude: position?.longitude,
                        isTest: try fields.flag("isTest"), details: try fields.crashDetails())))
        case "crashFollowUp":
            let position = try fields.position("latitude", "longitude")
            return RoadSaveEvent(
                device: device,
                body: .crashFollowUp(
                    CrashFollowUpInfo(
                        crashID: try fields.identifier("crashID"),
                        confidence: try fields.choice("confidence", CrashConfidence.self),
                        detectedAt: try fields.date("detectedAt"), observedUntil: try fields.date("observedUntil"),
                        outcome: try fields.choice("outcome", CrashFollowUpOutcome.self),
                        isTest: try fields.flag("isTest"), records: try fields.count("records"),
                        secondsOfData: try fields.number("secondsOfData"),
                        distanceMoved: try fields.optionalNumber("distanceMoved"),
                        steps: try fields.count("steps"), maxSpeedAfter: try fields.optionalNumber("maxSpeedAfter"),
                        latitude: position?.latitude, longitude: position?.longitude)))
        case "tripBehaviour":
            return RoadSaveEvent(
                device: device,
                body: .tripBehaviour(
                    TripBehaviour(
                        tripID: try fields.identifier("tripID"), endDate: try fields.date("endDate"),
                        unscored: try fields.optionalChoice("unscoredReason", UnscoredReason.self),
                        events: try fields.drivingEvents(), distanceMetres: try fields.number("distanceMetres"),
                        eventsPer100Kilometres: try fields.optionalNumber("eventsPer100Kilometres"),
                        longitudinalRMS: try fields.optionalNumber("longitudinalRMS"),
                        lateralRMS: try fields.optionalNumber("lateralRMS"),
                        eventsScore: try fields.optionalNumber("eventsScore"),
                        smoothnessScore: try fields.optionalNumber("smoothnessScore"),
                        score: try fields.optionalNumber("score"))))
        default:
            throw fail("event", "unknown event \"\(name)\"; expected \(RoadSaveEvent.names.joined(separator: ", "))")
        }
    }

    /// Typed members with errors naming them.
    private struct Fields {
        let value: JSONValue
        let form: Form
        let fail: (String?, String) -> EventJSONError

        /// What to do about an event in the legacy format, said after an error it may explain (JSON only).
        var legacyHint: String {
            if case .json(let legacy) = form { " (\(legacy))" } else { "" }
        }

        /// The same form and errors, for an item of the event (`events[2]`): errors name `events[2].member`.
        func item(_ item: JSONValue, at path: String) -> Fields {
            let fail = fail
            return Fields(value: item, form: form) { field, reason in
                fail(path + (field.map { ".\($0)" } ?? ""), reason)
            }
        }

        func required(_ name: String) throws(EventJSONError) -> JSONValue {
            guard let member = value[name], member != .null else { throw fail(name, "missing") }
            return member
        }

        func string(_ name: String) throws(EventJSONError) -> String {
            let member = try required(name)
            guard case .string(let text) = member else {
                throw fail(name, "expected a string, found \(member.typeName)")
            }
            return text
        }

        func identifier(_ name: String) throws(EventJSONError) -> String {
            let text = try string(name)
            guard !text.isEmpty, text.utf8.count <= DeviceID.maximumLength else {
                throw fail(name, "must be 1…\(DeviceID.maximumLength) bytes")
            }
            return text
        }

        func number(_ name: String) throws(EventJSONError) -> Double {
            let member = try required(name)
            guard case .number(let number) = member, number.isFinite || form == .body else {
                throw fail(name, "expected a number, found \(member.typeName)")
            }
            return number
        }

        func optionalNumber(_ name: String) throws(EventJSONError) -> Double? {
            guard let member = value[name], member != .null else { return nil }
            return try number(name)
        }

        /// A position given as two members, or nil when both are absent or null; a coordinate out of range, or one
        /// without the other, is an error naming it. `writtenWhenUnknown`: a body has both members, nil when unknown.
        func position(_ latitudeName: String, _ longitudeName: String, writtenWhenUnknown: Bool = false)
            throws(EventJSONError) -> (latitude: Double, longitude: Double)?
        {
            if writtenWhenUnknown, form == .body {
                for name in [latitudeName, longitudeName] where value[name] == nil { throw fail(name, "missing") }
            }
            let latitude = try optionalNumber(latitudeName)
            let longitude = try optionalNumber(longitudeName)
            if let latitude, !(-90...90).contains(latitude) {
                throw fail(latitudeName, "must be within ±90, got \(latitude)")
            }
            if let longitude, !(-180...180).contains(longitude) {
                throw fail(longitudeName, "must be within ±180, got \(longitude)")
            }
            guard let latitude, let longitude else {
                if latitude == nil && longitude == nil { return nil }
                throw fail(
                    latitude == nil ? latitudeName : longitudeName, "missing while the other coordinate is given")
            }
            return (latitude, longitude)
        }

        /// A whole number ≥ 0.
        func count(_ name: String) throws(EventJSONError) -> Int {
            let value = try number(name)
            guard value >= 0, value <= Double(Int32.max), value.rounded() == value else {
                throw fail(name, "expected a whole number ≥ 0, found \(value)")
            }
            return Int(value)
        }

        /// `crashDetected`'s details, present when `peakG` is (events written before them have none).
        func crashDetails() throws(EventJSONError) -> CrashDetails? {
            guard let member = value["peakG"], member != .null else { return nil }
            var positions: [TimedPosition] = []
            if let list = value["recentPositions"], list != .null {
                guard case .array(let items) = list else {
                    throw fail("recentPositions", "expected an array, found \(list.typeName)")
                }
                for (index, item) in items.enumerated() {
                    positions.append(try recentPosition(item, at: "recentPositions[\(index)]"))
                }
            }
            let tripID: String? = value["tripID"] == nil || value["tripID"] == .null ? nil : try identifier("tripID")
            return CrashDetails(
                speedBeforeImpact: try optionalNumber("speedBeforeImpact"),
                speedAfterImpact: try optionalNumber("speedAfterImpact"), deltaV: try optionalNumber("deltaV"),
                peakG: try number("peakG"), impactDurationMs: try optionalNumber("impactDurationMs"),
                impacts: try count("impacts"), heading: try optionalNumber("heading"),
                positionAccuracy: try optionalNumber("positionAccuracy"),
                positionAge: try optionalNumber("positionAge"),
                positionTrusted: try flag("positionTrusted"), recentPositions: positions, inTrip: try flag("inTrip"),
                tripID: tripID)
        }

        /// One of a crash's recent positions: `{"latitude", "longitude", "time"}` in JSON, a triple in a body.
        private func recentPosition(_ item: JSONValue, at path: String) throws(EventJSONError) -> TimedPosition {
            if form == .body {
                guard case .array(let triple) = item, triple.count == 3, case .number(let latitude) = triple[0],
                    case .number(let longitude) = triple[1], case .number(let time) = triple[2]
                else { throw fail(path, "expected [latitude, longitude, time]") }
                return TimedPosition(latitude: latitude, longitude: longitude, time: time)
            }
            let entry = self.item(item, at: path)
            guard case .object = item, let position = try entry.position("latitude", "longitude") else {
                throw fail(path, "expected {\"latitude\", \"longitude\", \"time\"}")
            }
            return TimedPosition(
                latitude: position.latitude, longitude: position.longitude, time: try entry.date("time"))
        }

        /// `tripBehaviour`'s events (the counts beside them are derived, so not read); an error names `events[i].member`.
        func drivingEvents() throws(EventJSONError) -> [DrivingEvent] {
            guard let list = value["events"], list != .null else { return [] }
            guard case .array(let items) = list else {
                throw fail("events", "expected an array, found \(list.typeName)")
            }
            var events: [DrivingEvent] = []
            for (index, item) in items.enumerated() {
                guard case .object = item else {
                    throw fail("events[\(index)]", "expected an object, found \(item.typeName)")
                }
                let entry = self.item(item, at: "events[\(index)]")
                guard let position = try entry.position("latitude", "longitude") else {
                    throw fail("events[\(index)].latitude", "missing")
                }
                events.append(
                    DrivingEvent(
                        kind: try entry.choice("kind", DrivingEventKind.self),
                        severity: try entry.choice("severity", DrivingEventSeverity.self),
                        start: try entry.date("start"), end: try entry.date("end"), peak: try entry.number("peak"),
                        startSpeed: try entry.number("startSpeed"), endSpeed: try entry.number("endSpeed"),
                        latitude: position.latitude, longitude: position.longitude, fixes: try entry.count("fixes")))
            }
            return events
        }

        /// A flag: required in a body, which always writes it; false when absent in JSON (events written before it).
        func flag(_ name: String) throws(EventJSONError) -> Bool {
            if form == .body { _ = try required(name) }
            return try optionalBool(name) ?? false
        }

        func optionalBool(_ name: String) throws(EventJSONError) -> Bool? {
            guard let member = value[name], member != .null else { return nil }
            guard case .bool(let flag) = member else {
                throw fail(name, "expected true or false, found \(member.typeName)")
            }
            return flag
        }

        /// An ISO 8601 date as the events write them, or Unix seconds.
        func date(_ name: String) throws(EventJSONError) -> Double {
            let member = try required(name)
            switch member {
            case .string(let text):
                guard let seconds = ISO8601.seconds(from: text) else {
                    throw fail(name, "\"\(text)\" is not an ISO 8601 date (2026-03-02T06:31:05.123Z)")
                }
                return seconds
            case .number(let seconds) where seconds.isFinite:
                return seconds
            default:
                throw fail(name, "expected an ISO 8601 date, found \(member.typeName)")
            }
        }

        /// One of `T`'s names. The legacy hint is said when the member is missing or capitalised, as in the legacy
        /// format.
        func choice<T: RawRepresentable & CaseIterable>(_ name: String, _ type: T.Type) throws(EventJSONError) -> T
        where T.RawValue == String {
            guard value[name] != nil else { throw fail(name, "missing" + legacyHint) }
            let text = try string(name)
            guard let choice = T(rawValue: text) else {
                let capitalised = T(rawValue: text.lowercased()) != nil
                throw fail(
                    name,
                    "\"\(text)\" is not one of \(T.allCases.map(\.rawValue).joined(separator: ", "))"
                        + (capitalised ? legacyHint : ""))
            }
            return choice
        }

        /// An array of `T`'s names; none when the member is absent.
        func choices<T: RawRepresentable & CaseIterable>(_ name: String, _ type: T.Type) throws(EventJSONError) -> [T]
        where T.RawValue == String {
            guard let member = value[name], member != .null else { return [] }
            guard case .array(let items) = member else {
                throw fail(name, "expected an array, found \(member.typeName)")
            }
            var chosen: [T] = []
            for (index, item) in items.enumerated() {
                guard case .string(let text) = item, let choice = T(rawValue: text) else {
                    throw fail("\(name)[\(index)]", "not one of \(T.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                chosen.append(choice)
            }
            return chosen
        }

        func optionalChoice<T: RawRepresentable & CaseIterable>(_ name: String, _ type: T.Type) throws(EventJSONError)
            -> T?
        where T.RawValue == String {
            guard let member = value[name], member != .null else { return nil }
            let text = try string(name)
            guard let choice = T(rawValue: text) else {
                throw fail(name, "\"\(text)\" is not one of \(T.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return choice
        }
    }
}
