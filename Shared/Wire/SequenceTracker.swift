/// A producer's sequence numbers: 1, 2, 3, … (one counter per producer ID, see `EnvelopeHeader`).
public struct SequenceCounter: Sendable, Equatable {
    /// The last number handed out; 0 before the first. Heartbeats carry it.
    public private(set) var last: UInt64

    public init(last: UInt64 = 0) {
        self.last = last
    }

    /// The number of the next message.
    public mutating func next() -> UInt64 {
        last += 1
        return last
    }
}

/// A consumer's view of its producers (the zguide's Clone and Paranoid Pirate patterns): whether each message
/// follows the one before it from the same producer, and when each producer was last heard from, so that an idle
/// producer (heartbeats arriving) can be told from a dead one (nothing for several intervals).
///
/// A pure value: the caller passes the time it received each message; nothing here reads a clock.
///
/// Restarts are recognised by their numbers: a message numbered 1 (even right after a 1: ZeroMQ does not redeliver, so
/// a repeated 1 is a new counter rather than a duplicate), or a heartbeat numbered below the last one seen, from a
/// producer already known. A restarted producer whose message 1 was lost cannot be told from a stale
/// duplicate (its 2, 3, … are `duplicateOrOld` until they pass the old numbers); producers that must rule this out
/// put an incarnation into their ID (`ingest-1@1718708242`) and consumers `forget` the old ID.
public struct SequenceTracker: Sendable {
    public enum Observation: Sendable, Equatable {
        /// The first message seen from this producer (whatever its number: a consumer may join late).
        case first
        /// The next number (or, for a heartbeat, the number already seen: nothing was missed).
        case inOrder
        /// Numbers were skipped: these messages were lost (PUB dropped them, or they were published before the
        /// subscription took effect).
        case gap(missing: ClosedRange<UInt64>)
        /// A number at or below the last one seen: a duplicate or a message overtaken by a later one.
        case duplicateOrOld
        /// The producer started counting again: its state is new; what the consumer kept from before may be stale.
        case restarted
    }

    private struct Producer: Sendable {
        var last: UInt64
        var lastHeard: Double?
    }

    private var producers: [String: Producer] = [:]

    public init() {}

    /// A record or event numbered `sequence` from `producer`, received at `time` (when given, it becomes the
    /// producer's `lastHeard`, even for a duplicate: the producer is alive).
    public mutating func observe(producer: String, sequence: UInt64, at time: Double? = nil) -> Observation {
        guard var state = producers[producer] else {
            producers[producer] = Producer(last: sequence, lastHeard: time)
            return .first
        }
        if let time { state.lastHeard = time }
        let observation: Observation
        if sequence > state.last {
            observation = sequence == state.last + 1 ? .inOrder : .gap(missing: (state.last + 1)...(sequence - 1))
            state.last = sequence
        } else if sequence == 1 {
            observation = .restarted
            state.last = sequence
        } else {
            observation = .duplicateOrOld
        }
        producers[producer] = state
        return observation
    }

    /// A heartbeat from `producer` carrying its last sequence: `.inOrder` when nothing was missed, `.gap` when
    /// messages up to `sequence` never arrived (lost at the tail of a burst, say), `.restarted` when the number went
    /// back.
    public mutating func observeHeartbeat(producer: String, sequence: UInt64, at time: Double? = nil) -> Observation {
        guard var state = producers[producer] else {
            producers[producer] = Producer(last: sequence, lastHeard: time)
            return .first
        }
        if let time { state.lastHeard = time }
        let observation: Observation
        if sequence == state.last {
            observation = .inOrder
        } else if sequence > state.last {
            observation = .gap(missing: (state.last + 1)...sequence)
        } else {
            observation = .restarted
        }
        state.last = sequence
        producers[producer] = state
        return observation
    }

    /// An envelope's header, by its kind.
    public mutating func observe(_ header: EnvelopeHeader, at time: Double? = nil) -> Observation {
        switch header.kind {
        case .heartbeat: observeHeartbeat(producer: header.producer, sequence: header.sequence, at: time)
        case .record, .event: observe(producer: header.producer, sequence: header.sequence, at: time)
        }
    }

    /// The last sequence seen from `producer`.
    public func lastSequence(_ producer: String) -> UInt64? {
        producers[producer]?.last
    }

    /// When `producer` was last heard from (the latest time passed with any of its messages).
    public func lastHeard(_ producer: String) -> Double? {
        producers[producer]?.lastHeard
    }

    /// Every producer seen, sorted.
    public var knownProducers: [String] {
        producers.keys.sorted()
    }

    /// Producers not heard from for more than `after` seconds at `now` (say three heartbeat intervals): dead, not
    /// idle. Sorted. A producer only ever observed without a time counts as silent.
    public func silentProducers(now: Double, after: Double) -> [String] {
        producers.compactMap { name, state in
            guard let heard = state.lastHeard else { return name }
            return now - heard > after ? name : nil
        }.sorted()
    }

    /// Drops a producer (one declared dead, or an old incarnation), so that its next message is `.first` again.
    public mutating func forget(producer: String) {
        producers[producer] = nil
    }
}
