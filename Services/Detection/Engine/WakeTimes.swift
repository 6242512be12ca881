/// For each slot of a `DeviceFleet`, a time on the shell's clock before which `tick` can have nothing to do for the
/// device: neither a reorder buffer to release nor a timer due. A lower bound, so `tick` visits only devices whose
/// time has come and still checks each exactly as before: its actions are the same as visiting every device.
///
/// Kept current from the fleet's change marks (`ChangedSlots.takeTouched`): every change of a device's state marks
/// its slot, and the slots marked since the last tick are recomputed. Slots that move (eviction) or a fleet built
/// from a checkpoint recompute everything; so does every `fullRefreshInterval`-th tick, which bounds the delay of a
/// change that might ever reach a device without a mark to a second of ticks.
struct WakeTimes: Sendable {
    private(set) var times: [Double] = []
    /// For a device of a gateway's stream: the event time from which it waits for the stream's watermark
    /// (`DeviceFleet.watermarkNeed`), infinity when it waits for nothing; and the stream's number (-1: none).
    private(set) var events: [Double] = []
    private(set) var streams: [Int32] = []
    var needsFullRefresh = true
    private var ticksSinceFullRefresh = 0
    static let fullRefreshInterval = 10
    /// Wake times are taken this much early: they are computed in another order than the checks of `tick`, and
    /// rounding must never make one late.
    static let margin = 0.001

    /// Which slots to recompute before a tick: every slot, or those `touched` (and new ones).
    mutating func slotsToRefresh(count: Int, touched: [Int]) -> [Int]? {
        ticksSinceFullRefresh += 1
        if ticksSinceFullRefresh >= Self.fullRefreshInterval { needsFullRefresh = true }
        if needsFullRefresh || times.count > count {
            needsFullRefresh = false
            ticksSinceFullRefresh = 0
            times = Array(repeating: -.infinity, count: count)
            events = Array(repeating: -.infinity, count: count)
            streams = Array(repeating: -1, count: count)
            return nil
        }
        if times.count < count {
            times.append(contentsOf: repeatElement(-.infinity, count: count - times.count))
            events.append(contentsOf: repeatElement(-.infinity, count: count - events.count))
            streams.append(contentsOf: repeatElement(-1, count: count - streams.count))
        }
        return touched
    }

    mutating func set(_ slot: Int, _ time: Double, watermarkNeed: Double, stream: Int32) {
        times[slot] = time
        events[slot] = watermarkNeed
        streams[slot] = stream
    }
}

extension DeviceFleet {
    /// Recomputes the wake times of the devices changed since the last tick (or of all, see `WakeTimes`).
    mutating func refreshWakeTimes() {
        let touched = changed.takeTouched()
        guard let slots = wakeTimes.slotsToRefresh(count: devices.count, touched: touched) else {
            for slot in devices.indices { refreshWakeTime(slot) }
            return
        }
        for slot in slots where slot < devices.count { refreshWakeTime(slot) }
    }

    private mutating func refreshWakeTime(_ slot: Int) {
        // The device's stream found by its name once for its state and its number (each lookup hashes the name).
        guard let name = devices[slot].stream, let stream = streams[name] else {
            wakeTimes.set(slot, wakeTime(slot, stream: nil), watermarkNeed: .infinity, stream: -1)
            return
        }
        guard let number = streamNumbers[name] else {
            wakeTimes.set(slot, wakeTime(slot, stream: stream), watermarkNeed: .infinity, stream: -1)
            return
        }
        wakeTimes.set(
            slot, wakeTime(slot, stream: stream), watermarkNeed: watermarkNeed(slot) ?? .infinity, stream: number)
    }

    /// The earliest clock time at which `tick` could act on the device in `slot`: its reorder buffer's release
    /// (`idleFlush` after its last arrival) or its next timer, reached when its event time run on by the clock
    /// (`FleetDeviceState.eventTime`) gets there. Minus infinity when that cannot be told (no clock known).
    /// `stream`: the state of the device's stream, nil when it has none (or one the fleet no longer knows).
    private mutating func wakeTime(_ slot: Int, stream: FleetStreamState?) -> Double {
        if let stream {
            // Ordered by its watermark: the clock has a say only once the hold runs out (a lower bound: the
            // watermark only moves later; once it has run out, every tick looks at the device).
            guard devices[slot].hasWorkInFlightInPlace(), !stream.ended else { return .infinity }
            return (stream.movedAt ?? -.infinity) + options.watermarkHold - WakeTimes.margin
        }
        var wake = Double.infinity
        let arrival = devices[slot].lastArrival
        if devices[slot].ordering.bufferedCount > 0 {
            guard let arrival else { return -.infinity }
            wake = arrival + options.idleFlush
        }
        if let last = devices[slot].lastEventTime, let deadline = devices[slot].session.nextDeadlineInPlace() {
            guard let arrival, deadline > last else { return -.infinity }
            wake = min(wake, arrival + (deadline - last))
        }
        return wake - WakeTimes.margin
    }
}
