/// A gateway's stream as a `DeviceFleet` has read it: how far the gateway has said it has come in event time
/// (`GatewayBatchHeader`), and when it last said more. A device whose records came through a stream is ordered by
/// its watermark: a record is applied once the watermark has passed it, and the device's timers (stop delay, crash
/// decision) fire once the watermark has passed them, so a gateway that is slow, re-sends or stops for a while never
/// makes a record late or a device look silent. Only when the watermark has stood still for `watermarkHold` on the
/// shell's clock do the clock's rules take over for its devices, until it moves again.
public struct FleetStreamState: Sendable, Equatable, Codable {
    /// The shell's name for the stream (detection: the journal and the gateway's name in it).
    public var name: String
    /// Nothing of the stream below this event time is still to come; nil before its first watermark.
    public var watermark: Double?
    /// The gateway said its stream is over: nothing more comes (a watermark past every time).
    public var ended = false
    /// The shell's clock when the watermark last moved, or when the fleet last heard its journals again after not
    /// hearing them (the time the shell could not hear is not the gateway's standing still).
    public var movedAt: Double?
    /// The hold ran out while the watermark stood still, and `watermarkHoldExpired` said so (once until it moves).
    public var holdExpiredReported = false

    public init(name: String, movedAt: Double?) {
        self.name = name
        self.movedAt = movedAt
    }

    /// Below this nothing more comes: the watermark, infinity after the end, minus infinity before the first.
    var effectiveWatermark: Double {
        if ended { return .infinity }
        return watermark ?? -.infinity
    }

    /// Whether the watermark has stood still for `hold` seconds at the shell's clock `now` (never after the end, and
    /// never without a clock: replay has no streams).
    func isStalled(now: Double?, hold: Double) -> Bool {
        guard !ended, let now, let movedAt else { return false }
        return now - movedAt >= hold
    }

    /// Takes a header's word: the watermark only ever moves forward (a batch sent again may carry an older one).
    /// Returns whether it moved.
    mutating func advance(to time: Double, ended end: Bool, now: Double?) -> Bool {
        guard !ended else { return false }
        if end {
            ended = true
        } else if let watermark, time <= watermark {
            return false
        } else {
            watermark = time
        }
        movedAt = now ?? movedAt
        holdExpiredReported = false
        return true
    }
}
