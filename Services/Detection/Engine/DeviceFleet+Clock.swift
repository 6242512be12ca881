import RoadSaveModel

/// The shell's clock: which devices' buffers are released and timers fire at a tick, a resume, the end of input.
extension DeviceFleet {
    /// The shell's clock moved on to `now`. Devices of a gateway's stream have their records below its watermark
    /// released and their timers before it fired. Devices of gateways that send no watermark (or whose watermark
    /// has stood still for `watermarkHold`) go by the clock: reorder buffers quiet for `idleFlush` are released,
    /// and timers (stop delay, crash decisions) fire when the device's event time, run on by the clock since its
    /// last record, reaches them. Devices are visited in the order they were met.
    public mutating func tick(now: Double) -> [FleetAction] {
        tick(now: now, clockSlots: nil)
    }

    /// `tick(now:)` with the clock's rules for `only` these devices: the shell, behind on its journals, has learnt
    /// that every record of them so far is read (`dueDevices`), so their silence is real and their deadlines (a
    /// crash decision, a trip's end) need not wait for the rest of the backlog. Devices not in memory or not due
    /// are passed over. Watermarks are the gateways' word on what is still to come, true however far behind the
    /// shell is, so every device of a stream is served as by `tick(now:)`.
    public mutating func tick(now: Double, only: [DeviceID]) -> [FleetAction] {
        tick(now: now, clockSlots: Set(only.compactMap { slot(of: $0) }))
    }

    /// The tick, with the clock's rules for `clockSlots` only (nil: every device).
    private mutating func tick(now: Double, clockSlots: Set<Int>?) -> [FleetAction] {
        var actions: [FleetAction] = []
        lastTickChangedState = false
        refreshWakeTimes()
        let marks = streamMarks(now: now)
        // Only the devices whose wake time has come, or whose stream's watermark has passed what they wait for:
        // visiting every device's state ten times a second took most of detection's time with a hundred thousand
        // devices in memory.
        for slot in devices.indices {
            let stream = Int(wakeTimes.streams[slot])
            let byWatermark = stream >= 0 && wakeTimes.events[slot] < marks[stream]
            let byClock = wakeTimes.times[slot] <= now && clockSlots.map { $0.contains(slot) } ?? true
            guard byWatermark || byClock else { continue }
            tick(slot: slot, now: now, clock: byClock, into: &actions)
        }
        return actions
    }

    /// The devices `tick(now:)` would act on by the clock: a reorder buffer to release or a timer due (in the order
    /// met, at most `limit`). A device of a gateway's stream waits for its watermark, not for the journal's word on
    /// its records; it is among them only when that watermark has stood still for `watermarkHold` and
    /// `streamsByClock` lets its stream go by the clock (its journal is heard). Changes nothing but the wake times
    /// kept to find them.
    public mutating func dueDevices(
        now: Double, limit: Int, streamsByClock: (String) -> Bool = { _ in false }
    ) -> [DeviceID] {
        refreshWakeTimes()
        var due: [DeviceID] = []
        for slot in devices.indices where wakeTimes.times[slot] <= now {
            guard due.count < limit else { break }
            if let stream = devices[slot].stream {
                guard governingWatermark(slot, now: now) == nil, streamsByClock(stream) else { continue }
            }
            if releaseDue(slot, now: now) || timerDue(slot, now: now) { due.append(devices[slot].device) }
        }
        return due
    }

    /// Each stream's watermark as it orders its devices at `now`, by stream number: minus infinity for one that
    /// has stood still too long (its devices then go by the clock).
    private func streamMarks(now: Double) -> [Double] {
        streamNames.map { name in
            guard let stream = streams[name], !stream.isStalled(now: now, hold: options.watermarkHold) else {
                return -.infinity
            }
            return stream.effectiveWatermark
        }
    }

    /// Whether the device's reorder buffer is released at `now`: it holds records and has been quiet `idleFlush`.
    private func releaseDue(_ slot: Int, now: Double) -> Bool {
        guard devices[slot].ordering.bufferedCount > 0, let arrival = devices[slot].lastArrival else { return false }
        return now - arrival >= options.idleFlush
    }

    /// Whether a timer of the device is due at `now`, its event time run on by the clock.
    private mutating func timerDue(_ slot: Int, now: Double) -> Bool {
        guard devices[slot].lastEventTime != nil, let first = devices[slot].session.nextDeadlineInPlace() else {
            return false
        }
        return first <= devices[slot].timerTime(now: now)
    }

    /// One device's part of a tick. By its stream's watermark: its records below it released, then its timers
    /// before it fired. By the clock (`clock`; a gateway without watermarks, or one whose watermark stood still
    /// too long): its reorder buffer released after `idleFlush` of quiet, then its timers up to its event time run
    /// on by the clock.
    private mutating func tick(slot: Int, now: Double, clock: Bool, into actions: inout [FleetAction]) {
        if let watermark = governingWatermark(slot, now: now) {
            guard let need = watermarkNeed(slot), need < watermark else { return }
            changed.insert(slot)
            lastTickChangedState = true
            release(slot, before: watermark, into: &actions)
            return
        }
        guard clock else { return }
        var acted = false
        if releaseDue(slot, now: now) {
            changed.insert(slot)
            lastTickChangedState = true
            acted = true
            for record in devices[slot].ordering.flush() { apply(record, slot: slot, into: &actions) }
        }
        if timerDue(slot, now: now) {
            changed.insert(slot)
            lastTickChangedState = true
            acted = true
            let eventNow = devices[slot].timerTime(now: now)
            var previous: Double?
            while let deadline = devices[slot].session.nextDeadlineInPlace(), deadline <= eventNow, deadline != previous
            {
                previous = deadline
                perform(devices[slot].session.advance(to: deadline), slot: slot, into: &actions)
            }
        }
        if acted, devices[slot].stream != nil { noteForcedRelease(slot, now: now, into: &actions) }
    }

    /// Releases the device's records below `watermark` and fires its timers before it; at the end of its stream
    /// (infinity) everything, as `finish` does at the end of a replay's input.
    private mutating func release(_ slot: Int, before watermark: Double, into actions: inout [FleetAction]) {
        if watermark == .infinity {
            for record in devices[slot].ordering.flush() { apply(record, slot: slot, into: &actions) }
        } else {
            while let next = devices[slot].ordering.nextReady(before: watermark) {
                apply(next, slot: slot, into: &actions)
            }
            // Emptied by the clock, nothing it sent is above its gateway's watermark: it keeps no room for records
            // until its next ones (a device taking records keeps its ring, which the record path fills and empties).
            devices[slot].ordering.releaseBufferMemoryIfEmpty()
        }
        var previous: Double?
        while let deadline = devices[slot].session.nextDeadlineInPlace(), deadline < watermark, deadline != previous {
            previous = deadline
            perform(devices[slot].session.advance(to: deadline), slot: slot, into: &actions)
        }
    }

    /// The clock released a device of a stream whose watermark stood still for `watermarkHold`: counted, and said
    /// once for the stream until its watermark moves again.
    mutating func noteForcedRelease(_ slot: Int, now: Double?, into actions: inout [FleetAction]) {
        statistics.forcedReleases += 1
        guard let name = devices[slot].stream, var stream = streams[name], !stream.holdExpiredReported else { return }
        stream.holdExpiredReported = true
        streams[name] = stream
        actions.append(.watermarkHoldExpired(stream: name, stillSince: stream.movedAt ?? now ?? 0))
    }

    /// The shell hears its devices again after a time it could not (it was not running, or its journal did not
    /// answer): that time was not the devices' silence, since their gateways keep what they could not deliver. The
    /// quiet time of each device with work in flight (a timer, a trip, records held for ordering or for settings)
    /// counts again from `now`, so no trip ends and no buffer is released only because the pipeline was down; a
    /// device really silent has its timers fire at most their own delay later. Other devices are left alone:
    /// their quiet time decides nothing but when they leave memory, and a resume is no reason to write them all.
    public mutating func resumeClock(now: Double) {
        for slot in devices.indices {
            guard let arrival = devices[slot].lastArrival, arrival < now, devices[slot].hasWorkInFlightInPlace() else {
                continue
            }
            devices[slot].lastArrival = now
            changed.insert(slot)
        }
        // Nor was it the gateways' standing still: their watermarks' hold counts again from now.
        for name in streams.keys where !streams[name]!.ended {
            streams[name]!.movedAt = max(streams[name]!.movedAt ?? now, now)
        }
        wakeTimes.needsFullRefresh = true
    }

    /// End of input (replay): every reorder buffer is released, then time runs on so that pending timers fire.
    /// Devices in `DeviceID` order.
    public mutating func finish() -> [FleetAction] {
        var actions: [FleetAction] = []
        for slot in devices.indices.sorted(by: { devices[$0].device < devices[$1].device }) {
            changed.insert(slot)
            for record in devices[slot].ordering.flush() { apply(record, slot: slot, into: &actions) }
            var previous: Double?
            while let deadline = devices[slot].session.nextDeadlineInPlace(), deadline != previous {
                previous = deadline
                perform(devices[slot].session.advance(to: deadline), slot: slot, into: &actions)
            }
        }
        return actions
    }
}
