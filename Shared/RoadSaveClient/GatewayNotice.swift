/// What a gateway's engine tells besides its receipts: how `roadsave send` writes its log lines and warnings (the
/// library writes nothing to its caller's standard error). Called on the engine's thread: a handler must not block.
package enum GatewayNotice: Sendable, Equatable {
    /// A batch, as the notices name it: its ID and the numbers of its first and last record (nil for a header).
    package struct Batch: Sendable, Equatable {
        package var id: String
        package var first: Int?
        package var last: Int?
    }

    /// Connecting to an ingest.
    case connecting(endpoint: String)
    /// No acknowledgement within the timeout: sent again after `pause` (attempt `attempt` of `attempts`).
    case noAcknowledgement(endpoint: String, batch: Batch, attempt: Int, attempts: Int, pause: Double)
    /// The connection ended before the batch was acknowledged: sent again on the new one.
    case connectionEnded(endpoint: String, batch: Batch, attempt: Int, attempts: Int)
    /// The batch could not be queued within the timeout (the ingest gone or full): an unanswered attempt.
    case notQueued(endpoint: String, batch: String)
    /// The journal could not store the batch: sent again after `pause`.
    case storeRefused(endpoint: String, batch: String, pause: Double, reason: String)
    /// The ingest limits this gateway's rate: sent again after `pause` (`count`: rate refusals from this ingest).
    case rateLimited(endpoint: String, batch: String, pause: Double, reason: String, count: Int)
    /// An acknowledgement of a send already answered (the batch was sent again meanwhile) was skipped.
    case lateAcknowledgement(endpoint: String, batch: String)
    /// A reply that is not `[batchID, ack]` was ignored.
    case unexpectedReply(endpoint: String, frames: Int)
    /// A record given below a watermark already promised (the input is more out of order than the disorder bound).
    case behindWatermark(number: Int, t: Double)
    /// The records' pace makes the gateway wait this long before sending a batch.
    case waitingForRecordTime(seconds: Double)
}
