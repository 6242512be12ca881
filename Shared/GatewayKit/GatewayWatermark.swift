/// What a gateway may promise sensor-ingest about the records it has not delivered yet: the low watermark of the
/// header it sends with its batches (`{"gateway": …, "watermark": w}`). A promise that no record with t < w will
/// follow the batch that carries it. The gateway keeps it by taking the oldest of
/// - every batch it has sent or is about to send and has not had acknowledged, except the one carrying the promise
///   (that one is in the journal with it: a batch lost with an ingest and sent again lands after newer ones, and
///   its records must not be late there);
/// - the records read and not yet put in a batch;
/// - what it may still read: its input is in order up to `maximumDisorder` seconds (a bounded out-of-orderness, as
///   Flink's watermark generators have it), so nothing older than the newest time read less that can still come.
///
/// A record far ahead of the others (a broken clock, `futureJump`) moves the newest time read only once the next
/// record confirms the jump, as detection's `RecordOrdering` judges it.
///
/// A promise holds from its carrier's place in the journal on, so one is never raised to an earlier one: a batch
/// may promise more than a header sent alone after it (the batch leaves itself out), and if that batch was lost
/// the header lands before its second sending. Detection keeps the highest it has read, which is sound at every
/// later place. Pure: the gateway's shell says what it read, sealed, sent and had acknowledged.
public struct GatewayWatermark: Sendable, Equatable {
    public let maximumDisorder: Double
    /// A jump ahead of the newest time read larger than this waits for the next record's confirmation.
    public let futureJump: Double
    /// The newest time read (a confirmed jump included).
    public private(set) var frontier: Double?
    /// A jump far ahead, not confirmed yet.
    private var suspect: Double?
    /// The oldest time of the records read since the last `seal`.
    private var building: Double?
    /// The oldest time of each batch sealed and not acknowledged, by the gateway's number for it.
    private var unacknowledged: [Int: Double] = [:]
    /// The highest watermark promised (a record read below it breaks that promise).
    public private(set) var promised: Double?

    public init(maximumDisorder: Double, futureJump: Double = 900) {
        self.maximumDisorder = maximumDisorder
        self.futureJump = futureJump
    }

    /// A record was read for the batch being built. False when its time is below a watermark already promised:
    /// the input is more out of order than `maximumDisorder`, and detection may find the record too late.
    @discardableResult
    public mutating func read(_ t: Double) -> Bool {
        building = min(building ?? t, t)
        advanceFrontier(t)
        return promised.map { t >= $0 } ?? true
    }

    /// A record of the same input was read for another stream (`roadsave send` with several ingests feeds one
    /// watermark per ingest from one reader). The input's disorder bound holds for all of it, so the record moves
    /// the newest time read here too (a stream whose devices fell silent still moves on); but it is in no batch of
    /// this stream, so it holds back none of its promises.
    public mutating func observe(_ t: Double) {
        advanceFrontier(t)
    }

    private mutating func advanceFrontier(_ t: Double) {
        if let frontier {
            if t > frontier + futureJump {
                if let suspect {
                    // Two in a row that far ahead: the stream really moved on.
                    self.frontier = max(suspect, t)
                    self.suspect = nil
                } else {
                    suspect = t
                }
            } else {
                suspect = nil
                self.frontier = max(frontier, t)
            }
        } else {
            frontier = t
        }
    }

    /// The records read since the last seal are now batch `batch` (awaiting its send and acknowledgement).
    public mutating func seal(batch: Int) {
        guard let building else { return }
        unacknowledged[batch] = building
        self.building = nil
    }

    /// Batch `batch` was acknowledged: its records are in the journal.
    public mutating func acknowledged(batch: Int) {
        unacknowledged[batch] = nil
    }

    /// Whether any batch awaits its acknowledgement.
    public var awaitsAcknowledgements: Bool { !unacknowledged.isEmpty }

    /// The watermark to send now with batch `carrier` (nil: a header of its own, with no records); nil while nothing
    /// has been read (there is nothing to promise yet).
    public mutating func promise(excluding carrier: Int?) -> Double? {
        guard let frontier else { return nil }
        var watermark = frontier - maximumDisorder
        if let building { watermark = min(watermark, building) }
        for (batch, oldest) in unacknowledged where batch != carrier { watermark = min(watermark, oldest) }
        watermark = max(0, watermark)
        promised = max(promised ?? watermark, watermark)
        return watermark
    }
}
