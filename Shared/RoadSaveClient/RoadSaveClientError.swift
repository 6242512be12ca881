/// What went wrong in a subscriber or a gateway, in words that say what to do about it (`description`).
///
/// Each case is one the caller acts on differently: fix the configuration or a key file, have the key listed, resume
/// from another position, wait for an endpoint, or stop. Errors that end a subscription end its sequence of
/// deliveries (or `run`); a gateway's end the call that met them.
public enum RoadSaveClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A configuration value cannot be used (an endpoint, a name, a number out of range, a filter): the text names it.
    case invalidConfiguration(String)
    /// A key file cannot be read or used (missing, readable by others, not a key, halves that do not match).
    case unusableKey(path: String, reason: String)
    /// The service's allow-list does not admit this client's key (refused at the handshake, or removed or replaced
    /// since the connection's handshake): list its public key with the right role (and applications) and reload the
    /// service (SIGHUP), or use a key it lists.
    case keyRefused(endpoint: String, reason: String)
    /// The position asked for is older than the notifier's retention window: the events after it were deleted, a gap
    /// nobody can fill. Resume from 0 (every event kept) or from now (nil), and account for the gap.
    case positionTooOld(endpoint: String, position: UInt64, reason: String)
    /// The position asked for is ahead of the newest event the notifier holds: its store is younger than the position
    /// (a new data directory starts its positions again). Resume from 0 or from now.
    case positionAhead(endpoint: String, position: UInt64, reason: String)
    /// The catch-up endpoint refused the request for another reason (an unknown eventID, a long-poll over its
    /// limit): the text is the notifier's.
    case catchUpRefused(endpoint: String, reason: String)
    /// The catch-up endpoint did not answer within `seconds`: it is down or unreachable, or it does not take this
    /// client's keys (a notifier with keys does not answer a plaintext client, nor one given another server key).
    /// Nothing is lost: resume from the last position handled once it answers.
    case catchUpUnreachable(endpoint: String, seconds: Double)
    /// A batch got no acknowledgement after all its attempts: the ingest is down or unreachable, or it does not take
    /// this gateway's keys (a plaintext gateway, or another server key). `records` are the numbers of its first and
    /// last record (nil for the header that ends the stream), `count` how many it has. The batches acknowledged
    /// before are stored (their receipts say which); the others may be sent again.
    case notAcknowledged(
        endpoint: String, batch: String, records: ClosedRange<Int>?, count: Int, attempts: Int, timeout: Double)
    /// A ZeroMQ call failed (a socket could not be made or connected): the text is libzmq's.
    case connectionFailed(endpoint: String, reason: String)
    /// The client was closed, or the task awaiting it cancelled, before the work was done.
    case closed

    /// What went wrong and what to do about it, in one line.
    public var description: String {
        switch self {
        case .invalidConfiguration(let text):
            return text
        case .unusableKey(let path, let reason):
            return reason.contains(path) ? reason : "\(path): \(reason)"
        case .keyRefused(let endpoint, let reason):
            return "\(endpoint) refused this client's key: \(reason) (list its public key in the service's allow-list "
                + "and send the service SIGHUP, or use a key it lists)"
        case .positionTooOld(let endpoint, _, let reason):
            return "catch-up from \(endpoint): \(reason) (resume from 0 or from now: the events between are gone)"
        case .positionAhead(let endpoint, _, let reason):
            return "catch-up from \(endpoint): \(reason) (the notifier's store is younger than the position: "
                + "resume from 0 or from now)"
        case .catchUpRefused(let endpoint, let reason):
            return "catch-up from \(endpoint): \(reason)"
        case .catchUpUnreachable(let endpoint, let seconds):
            return "no answer from the catch-up endpoint \(endpoint) within \(Self.seconds(seconds)) s"
        case .notAcknowledged(let endpoint, let batch, let records, let count, let attempts, let timeout):
            let numbers = records.map {
                $0.count == 1 ? "record \($0.lowerBound), " : "records \($0.lowerBound)–\($0.upperBound), "
            }
            return "batch \(batch) (\(numbers ?? "")\(count) record\(count == 1 ? "" : "s")) not acknowledged by "
                + "\(endpoint) after \(attempts) attempt\(attempts == 1 ? "" : "s") of \(Self.seconds(timeout)) s"
        case .connectionFailed(let endpoint, let reason):
            return "\(endpoint): \(reason)"
        case .closed:
            return "closed before the work was done"
        }
    }

    private static func seconds(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }
}
