/// One sink as its outbox feeds it. Lives on the service's reactor thread: the service reads entries from the
/// sink's outbox (in position order, a window at a time) and hands them to `take`; the outlet reports, on the reactor
/// thread, which entries its sink took, and the service deletes those rows.
protocol SinkOutlet: AnyObject {
    /// The sink's name in the store's `outbox` and `sink_state` tables.
    var key: String { get }
    /// For logs (never a credential).
    var name: String { get }
    var window: OutboxWindow { get set }
    /// Takes entries, oldest first, each exactly once.
    func take(_ entries: [StoredEvent])
    /// Stopping (reactor thread): take nothing new, start nothing new.
    func stopTaking()
    /// The work that finishes what is in flight within `deadline` seconds, run off the reactor thread (the outlet's
    /// last reports still reach the service through the reactor).
    func finisher(deadline: Double) -> @Sendable () async -> Void
}

/// What an outlet tells the service about entries in hand.
struct OutletReport: Sendable {
    var sink: String
    /// Taken by the sink: their outbox rows are deleted.
    var taken: [UInt64] = []
    /// Out of the outlet's hands but not taken: their rows stay, and they are delivered after the next start.
    var released = 0
    /// The sink's new state, stored in the same transaction as the deletion.
    var state: String?
}
