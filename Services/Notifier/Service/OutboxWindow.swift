/// The part of one sink's outbox that is in the sink's hands. Entries are read in position order, at most `capacity`
/// at a time, and read again (more) once at most half of them are left, so the sink is never idle while it is
/// refilled and never holds more than `capacity`: a backlog of a million waits on disk, not in memory.
struct OutboxWindow: Equatable {
    let capacity: Int
    /// The newest position read: the next read starts after it.
    private(set) var lastRead: UInt64 = 0
    /// Entries read and not yet settled.
    private(set) var inHand = 0
    /// False once a read came back short (the outbox had no more), until new events are stored.
    private(set) var mayHaveMore = true

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// How many entries to read now, or nil.
    var entriesToRead: Int? {
        guard mayHaveMore, inHand <= capacity / 2 else { return nil }
        return capacity - inHand
    }

    /// `positions` were read after asking for `asked` entries.
    mutating func read(_ positions: [UInt64], asked: Int) {
        if let last = positions.last { lastRead = max(lastRead, last) }
        inHand += positions.count
        if positions.count < asked { mayHaveMore = false }
    }

    /// New events were stored (each with a row in this outbox).
    mutating func stored() {
        mayHaveMore = true
    }

    /// `count` entries in hand were settled (taken by the sink, or given up until the next start).
    mutating func settled(_ count: Int) {
        inHand = max(0, inHand - count)
    }
}
