import RoadSaveModel

/// Everything the report shows about one device: its track and classifier output from the records, its trips and
/// crashes from the events, the suspected crashes the engines dismissed.
public struct DeviceReport: Sendable, Equatable {
    public var device: DeviceID
    /// Positions in time order (one per time: a record sent twice is drawn once).
    public var track: [TrackPoint]
    public var activities: [ActivitySpan]
    /// In order of their start.
    public var trips: [ReportTrip]
    /// In order of their time.
    public var crashes: [CrashInfo]
    /// The crashes' follow-ups, by crashID.
    public var followUps: [String: CrashFollowUpInfo]
    public var dismissals: [DismissedCrash]
    /// Records of the device that were read.
    public var records: Int
    /// The first and last time of anything known about the device (records and events).
    public var firstSeen: Double
    public var lastSeen: Double

    public init(
        device: DeviceID, track: [TrackPoint] = [], activities: [ActivitySpan] = [], trips: [ReportTrip] = [],
        crashes: [CrashInfo] = [], followUps: [String: CrashFollowUpInfo] = [:],
        dismissals: [DismissedCrash] = [], records: Int = 0,
        firstSeen: Double, lastSeen: Double
    ) {
        self.device = device
        self.track = track
        self.activities = activities
        self.trips = trips
        self.crashes = crashes
        self.followUps = followUps
        self.dismissals = dismissals
        self.records = records
        self.firstSeen = firstSeen
        self.lastSeen = lastSeen
    }

    /// The positions during the trip (its start to its end, or to the last record while it is open).
    public func track(of trip: ReportTrip) -> ArraySlice<TrackPoint> {
        let from = firstIndex(atOrAfter: trip.startDate)
        let to = firstIndex(after: trip.endDate(lastSeen: lastSeen))
        return track[from..<max(from, to)]
    }

    /// Positions further apart in time than this, outside trips, are not joined by a line: nothing is known of
    /// where the device went in between.
    public static let outsideGap = 300.0

    /// The runs of positions outside every trip, each a run of consecutive track points with no gap longer than
    /// `outsideGap`.
    public var tracksOutsideTrips: [ArraySlice<TrackPoint>] {
        var inTrip = [Bool](repeating: false, count: track.count)
        for trip in trips {
            for index in track(of: trip).indices { inTrip[index] = true }
        }
        var runs: [ArraySlice<TrackPoint>] = []
        var start: Int?
        for index in track.indices {
            if let s = start, inTrip[index] || track[index].t - track[index - 1].t > Self.outsideGap {
                runs.append(track[s..<index])
                start = nil
            }
            if !inTrip[index], start == nil { start = index }
        }
        if let s = start { runs.append(track[s...]) }
        return runs
    }

    /// Crashes with a position (the others can only be listed).
    public var crashesWithPosition: [CrashInfo] { crashes.filter { $0.latitude != nil && $0.longitude != nil } }
    public var dismissalsWithPosition: [DismissedCrash] {
        dismissals.filter { $0.latitude != nil && $0.longitude != nil }
    }

    private func firstIndex(atOrAfter t: Double) -> Int {
        var low = 0
        var high = track.count
        while low < high {
            let middle = (low + high) / 2
            if track[middle].t < t { low = middle + 1 } else { high = middle }
        }
        return low
    }

    private func firstIndex(after t: Double) -> Int {
        var low = 0
        var high = track.count
        while low < high {
            let middle = (low + high) / 2
            if track[middle].t <= t { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
