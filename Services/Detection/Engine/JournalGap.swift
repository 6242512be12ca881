/// Records of a journal that retention deleted before detection read them: detection had read `journal` up to
/// `position` when the journal said it had deleted its shard's records through `deletedThrough`. What was between
/// is gone, so the devices of this shard are rebuilt only from what remains; their trips and crashes from before
/// may be lost or incomplete. Found by `DetectionCore`, kept in detection's store until an operator acknowledges it.
public struct JournalGap: Sendable, Equatable {
    /// The journal's ID (its feed).
    public var journal: String
    public var endpoint: String
    /// The detection shard that reads it (`0/2`, or `all`).
    public var shard: String
    /// The position detection had (its stored position, 0 for a fresh store).
    public var position: UInt64
    public var deletedThrough: UInt64
    /// An operator said the loss is known (`acknowledgeJournalGaps`); it no longer holds readiness.
    public var acknowledged: Bool

    public init(
        journal: String, endpoint: String, shard: String, position: UInt64, deletedThrough: UInt64,
        acknowledged: Bool = false
    ) {
        self.journal = journal
        self.endpoint = endpoint
        self.shard = shard
        self.position = position
        self.deletedThrough = deletedThrough
        self.acknowledged = acknowledged
    }

    /// The same hole: one journal read from one position (a later reply from there may say more was deleted).
    func isSameHole(journal: String, position: UInt64) -> Bool {
        self.journal == journal && self.position == position
    }

    /// The error line's message and fields.
    public static let message =
        "journal records deleted by retention before detection read them: the devices of this "
        + "shard are rebuilt only from what remains; their trips and crashes from before may be lost or incomplete "
        + "(acknowledge with `roadsave ctl acknowledgeJournalGaps`)"

    public var logFields: [(String, String)] {
        [
            ("journal", journal), ("endpoint", endpoint), ("shard", shard), ("position", String(position)),
            ("deletedThrough", String(deletedThrough)),
        ]
    }

    /// Why detection is not ready while this gap is not acknowledged (/readyz).
    public var readinessReason: String {
        "journal \(journal) at \(endpoint) (shard \(shard)) deleted records after position \(position) through "
            + "\(deletedThrough) before detection read them (roadsave ctl acknowledgeJournalGaps)"
    }
}
