import RecordCodecs
import RoadSaveModel

/// Typed access to an event body's members, with errors that name the member (`EventBody.decode`'s reader; internal
/// only so that it can live in a file of its own).
struct EventFields {
    let value: JSONValue

    func required(_ name: String) throws(WireError) -> JSONValue {
        guard let member = value[name], member != .null else { throw WireError(.invalidEvent, "missing", path: name) }
        return member
    }

    func string(_ name: String) throws(WireError) -> String {
        let member = try required(name)
        guard case .string(let text) = member else {
            throw WireError(.invalidEvent, "expected a string, found \(member.typeName)", path: name)
        }
        return text
    }

    /// A non-empty string of at most `DeviceID.maximumLength` bytes.
    func identifier(_ name: String) throws(WireError) -> String {
        let text = try string(name)
        guard !text.isEmpty, text.utf8.count <= DeviceID.maximumLength else {
            throw WireError(.invalidEvent, "must be 1…\(DeviceID.maximumLength) bytes", path: name)
        }
        return text
    }

    func number(_ name: String) throws(WireError) -> Double {
        let member = try required(name)
        guard case .number(let number) = member else {
            throw WireError(.invalidEvent, "expected a number, found \(member.typeName)", path: name)
        }
        return number
    }

    /// A number, or nil for an explicit null.
    func optionalNumber(_ name: String) throws(WireError) -> Double? {
        guard value[name] != JSONValue.null else { return nil }
        return try number(name)
    }

    /// A number, or nil when the member is absent or null (members added after bodies were first stored).
    func numberIfPresent(_ name: String) throws(WireError) -> Double? {
        guard let member = value[name], member != .null else { return nil }
        return try number(name)
    }

    /// A string, or nil when the member is absent or null (members added after bodies were first stored).
    func optionalString(_ name: String) throws(WireError) -> String? {
        guard let member = value[name], member != .null else { return nil }
        return try string(name)
    }

    /// `transportSigns`: absent (bodies stored before it, and rides that showed none) is none.
    func transportSigns() throws(WireError) -> [TransportReason] {
        guard let member = value["transportSigns"], member != .null else { return [] }
        guard case .array(let items) = member else {
            throw WireError(.invalidEvent, "expected an array, found \(member.typeName)", path: "transportSigns")
        }
        var signs: [TransportReason] = []
        for (index, item) in items.enumerated() {
            guard case .string(let name) = item, let sign = TransportReason(rawValue: name) else {
                throw WireError(.invalidEvent, "expected a transport reason", path: "transportSigns[\(index)]")
            }
            signs.append(sign)
        }
        return signs
    }

    /// A whole number ≥ 0 (MessagePack integers arrive as numbers).
    func count(_ name: String) throws(WireError) -> Int {
        let value = try number(name)
        guard value >= 0, value <= Double(Int32.max), value.rounded() == value else {
            throw WireError(.invalidEvent, "expected a whole number ≥ 0, found \(value)", path: name)
        }
        return Int(value)
    }

    /// `crashDetected`'s details: present when `peakG` is (bodies stored before them have none).
    func crashDetails() throws(WireError) -> CrashDetails? {
        guard let member = value["peakG"], member != .null else { return nil }
        var positions: [TimedPosition] = []
        if let list = value["recentPositions"], list != .null {
            guard case .array(let items) = list else {
                throw WireError(.invalidEvent, "expected an array, found \(list.typeName)", path: "recentPositions")
            }
            for (index, item) in items.enumerated() {
                guard case .array(let triple) = item, triple.count == 3, case .number(let latitude) = triple[0],
                    case .number(let longitude) = triple[1], case .number(let time) = triple[2]
                else {
                    throw WireError(
                        .invalidEvent, "expected [latitude, longitude, time]", path: "recentPositions[\(index)]")
                }
                positions.append(TimedPosition(latitude: latitude, longitude: longitude, time: time))
            }
        }
        return CrashDetails(
            speedBeforeImpact: try numberIfPresent("speedBeforeImpact"),
            speedAfterImpact: try numberIfPresent("speedAfterImpact"),
            deltaV: try numberIfPresent("deltaV"), peakG: try number("peakG"),
            impactDurationMs: try numberIfPresent("impactDurationMs"), impacts: try count("impacts"),
            heading: try numberIfPresent("heading"), positionAccuracy: try numberIfPresent("positionAccuracy"),
            positionAge: try numberIfPresent("positionAge"), positionTrusted: try bool("positionTrusted"),
            recentPositions: positions, inTrip: try bool("inTrip"), tripID: try optionalString("tripID"))
    }

    /// `tripBehaviour`'s events: an array of maps, each member checked (an error names `events[i].member`).
    func drivingEvents() throws(WireError) -> [DrivingEvent] {
        guard let member = value["events"], member != .null else { return [] }
        guard case .array(let items) = member else {
            throw WireError(.invalidEvent, "expected an array, found \(member.typeName)", path: "events")
        }
        var events: [DrivingEvent] = []
        for (index, item) in items.enumerated() {
            let path = "events[\(index)]"
            guard case .object = item else {
                throw WireError(.invalidEvent, "expected a map, found \(item.typeName)", path: path)
            }
            // The members' errors name them inside the event: events[2].peak.
            let fields = EventFields(value: item)
            do throws(WireError) {
                let kindName = try fields.string("kind")
                guard let kind = DrivingEventKind(rawValue: kindName) else {
                    throw WireError(.invalidEvent, "unknown kind \"\(kindName)\"", path: "kind")
                }
                let severityName = try fields.string("severity")
                guard let severity = DrivingEventSeverity(rawValue: severityName) else {
                    throw WireError(.invalidEvent, "unknown severity \"\(severityName)\"", path: "severity")
                }
                events.append(
                    DrivingEvent(
                        kind: kind, severity: severity, start: try fields.number("start"),
                        end: try fields.number("end"), peak: try fields.number("peak"),
                        startSpeed: try fields.number("startSpeed"),
                        endSpeed: try fields.number("endSpeed"),
                        latitude: try fields.number("latitude"),
                        longitude: try fields.number("longitude"), fixes: try fields.count("fixes")))
            } catch {
                throw error.inside(path)
            }
        }
        return events
    }

    func bool(_ name: String) throws(WireError) -> Bool {
        let member = try required(name)
        guard case .bool(let flag) = member else {
            throw WireError(.invalidEvent, "expected true or false, found \(member.typeName)", path: name)
        }
        return flag
    }
}
