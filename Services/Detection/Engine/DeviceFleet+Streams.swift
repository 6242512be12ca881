/// Gateways' streams: which watermark orders a device, what it waits for, and when a stream is forgotten.
extension DeviceFleet {
    /// The watermark that orders the device now: its stream's, unless it has none (a gateway that sends no
    /// header) or that watermark has stood still for `watermarkHold` (then nil, and the clock's rules apply).
    mutating func governingWatermark(_ slot: Int, now: Double?) -> Double? {
        guard let name = devices[slot].stream else { return nil }
        if let last = lastGoverning, last.now == now, last.stream == name { return last.watermark }
        let watermark = streams[name].flatMap { stream in
            stream.isStalled(now: now, hold: options.watermarkHold) ? nil : stream.effectiveWatermark
        }
        lastGoverning = (name, now, watermark)
        return watermark
    }

    /// The event time from which the device waits for its watermark: its oldest record held for ordering or its
    /// next timer, whichever comes first; nil when it waits for nothing.
    mutating func watermarkNeed(_ slot: Int) -> Double? {
        let buffered = devices[slot].ordering.oldestBufferedTime
        guard let deadline = devices[slot].session.nextDeadlineInPlace() else { return buffered }
        return min(buffered ?? deadline, deadline)
    }

    /// Forgets the streams no device in memory came through that are over, or have not moved for a day: a
    /// gateway's stream ends with its run. Called by the shell before it takes a checkpoint (so a restart re-runs
    /// its inputs on the same streams); a device out of memory that comes back through a forgotten stream meets it
    /// anew with the batch that carries its record.
    public mutating func forgetFinishedStreams(now: Double?) {
        let inUse = Set(devices.compactMap(\.stream))
        let finished = streams.values.filter { stream in
            guard !inUse.contains(stream.name) else { return false }
            return stream.ended || stream.isStalled(now: now, hold: Self.streamForgetAge)
        }
        guard !finished.isEmpty else { return }
        for stream in finished { streams[stream.name] = nil }
        renumberStreams()
    }

    /// A stream that no device in memory came through is forgotten after this long without moving.
    static let streamForgetAge = 86_400.0

    /// Numbers the streams afresh (after some were forgotten, or from a checkpoint); every wake time is then
    /// computed again.
    mutating func renumberStreams() {
        streamNames = streams.keys.sorted()
        streamNumbers = [:]
        for (number, name) in streamNames.enumerated() { streamNumbers[name] = Int32(number) }
        wakeTimes.needsFullRefresh = true
    }
}
