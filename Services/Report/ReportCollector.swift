import DetectionEngine
import RoadSaveModel

/// Gathers, per device, what the report draws: positions and classifier reports from the records, trips and crashes
/// from the events, dismissals from the engines. Records may come in any order (a gateway's disorder); they are put
/// in time order at the end. Memory grows with the positions and activity reports kept (about 40 bytes each), not
/// with the other records.
public final class ReportCollector {
    private struct Device {
        var records = 0
        var first = Double.infinity
        var last = -Double.infinity
        var track: [TrackPoint] = []
        var activities: [(t: Double, observation: ActivityObservation)] = []
        var trips: [String: ReportTrip] = [:]
        var crashes: [String: CrashInfo] = [:]
        var followUps: [String: CrashFollowUpInfo] = [:]
        /// By trip: attached to the trips when the report is made (its trip's events may come after it).
        var behaviours: [String: TripBehaviour] = [:]
        var dismissals: [DismissedCrash] = []

        mutating func saw(_ t: Double) {
            first = min(first, t)
            last = max(last, t)
        }

        mutating func add(_ record: SensorRecord) {
            records += 1
            saw(record.t)
            switch record.payload {
            case .location(let fix):
                // A negative accuracy marks an invalid fix (`LocationFix`): not a place the device was.
                if let accuracy = fix.horizontalAccuracy, accuracy < 0 { return }
                track.append(
                    TrackPoint(t: record.t, latitude: fix.latitude, longitude: fix.longitude, speed: fix.speed))
            case .activity(let observation):
                activities.append((record.t, observation))
            case .steps, .impact, .capabilities:
                break
            }
        }
    }

    private var devices: [DeviceID: Device] = [:]
    /// Only these users' devices are kept (nil: every device).
    private let users: Set<String>?

    public init(users: Set<String>? = nil) {
        self.users = users
    }

    private func keeps(_ device: DeviceID) -> Bool { users?.contains(device.user) ?? true }

    public func add(_ record: SensorRecord) {
        guard keeps(record.device) else { return }
        devices[record.device, default: Device()].add(record)
    }

    /// A trip event opens or completes its trip (events of one trip may come in any order); a crash and its
    /// follow-up are kept once per crashID, and a trip's behaviour once per tripID.
    public func add(_ event: RoadSaveEvent) {
        guard keeps(event.device) else { return }
        var device = devices[event.device] ?? Device()
        device.saw(event.time)
        switch event.body {
        case .tripDidStart(let start):
            if device.trips[start.tripID] == nil {
                device.trips[start.tripID] = ReportTrip(
                    tripID: start.tripID, startDate: start.startDate, info: nil,
                    event: event)
            }
        case .tripDidEnd(let info):
            device.saw(info.startDate)
            device.trips[info.tripID] = ReportTrip(
                tripID: info.tripID, startDate: info.startDate, info: info, event: event)
        case .crashDetected(let info):
            device.crashes[info.crashID] = info
        case .crashFollowUp(let info):
            device.followUps[info.crashID] = info
        case .tripBehaviour(let info):
            device.behaviours[info.tripID] = info
        }
        devices[event.device] = device
    }

    public func addDismissal(device id: DeviceID, candidate: CrashCandidate, reason: FalsePositiveReason) {
        guard keeps(id) else { return }
        var device = devices[id] ?? Device()
        device.saw(candidate.time)
        device.dismissals.append(DismissedCrash(candidate, reason: reason))
        devices[id] = device
    }

    /// One report per device, in order of the devices.
    public func reports() -> [DeviceReport] {
        devices.sorted { $0.key < $1.key }.map { id, device in
            var track = device.track
            track.sort { $0.t < $1.t }
            // A record sent twice (the same fix at the same time) is one position.
            var unique: [TrackPoint] = []
            unique.reserveCapacity(track.count)
            for point in track where unique.last.map({ $0.t != point.t }) ?? true { unique.append(point) }
            var activities = device.activities
            activities.sort { $0.t < $1.t }
            let first = device.first.isFinite ? device.first : 0
            let last = device.last.isFinite ? device.last : first
            var trips = device.trips
            for (tripID, behaviour) in device.behaviours { trips[tripID]?.behaviour = behaviour }
            return DeviceReport(
                device: id, track: unique, activities: ActivitySpan.spans(from: activities, until: last),
                trips: trips.values.sorted { ($0.startDate, $0.tripID) < ($1.startDate, $1.tripID) },
                crashes: device.crashes.values.sorted { ($0.detectedAt, $0.crashID) < ($1.detectedAt, $1.crashID) },
                followUps: device.followUps,
                dismissals: device.dismissals.sorted { ($0.time, $0.crashID) < ($1.time, $1.crashID) },
                records: device.records, firstSeen: first, lastSeen: last)
        }
    }
}
