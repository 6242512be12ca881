import Foundation
import Logging
import RecordCodecs
import RoadSaveModel
import SystemKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Events as signed HTTP POSTs to one URL.
///
/// Each request carries the event's JSON in the sink's format (`Content-Type: application/json`), the signature
/// header (`sha256=` + hex HMAC-SHA256 of the exact body bytes under the shared secret, see `WebhookSignature`),
/// `X-RoadSave-Event` (the event's name), `X-RoadSave-Event-ID` (stable across retries: receivers drop duplicates by
/// it) and `User-Agent: RoadSave-Notifier/1`. A 2xx answer delivers the event. Network errors, timeouts, 408, 429 and
/// 5xx are retried with exponential backoff plus up to 10 % jitter (`Retry-After` seconds are honoured, up to
/// `maximumRetryAfter`); any other answer (other 4xx, and 3xx, since redirects are not followed: a signed alert is
/// never re-sent to a host it was not configured for) is permanent: the receiver refused the event, so it is logged as
/// dropped by the receiver (with the status and eventID), not retried, and counted as failed. Delivery is at least
/// once: a request that timed out may have arrived, and is sent again with the same eventID.
///
/// Every event handed over is settled exactly once through `onSettled` (delivered, or dropped by the receiver), except
/// those still held at shutdown or refused after it began. The sink keeps no durability of its own: it never gives up
/// on an event and never drops one to bound its memory. The caller owns both (the notifier keeps each event in its
/// outbox until it is settled, and bounds what it hands over by its outbox window).
///
/// ## Ordering and concurrency
///
/// - Every device (app, user) has its own FIFO queue, and only its head is ever on the wire or waiting to be retried:
///   an event is never sent before the device's earlier events were delivered or dropped.
/// - Devices with a sendable head wait their turn in one FIFO "ready" list; at most `maximumConcurrentDeliveries`
///   requests are in flight at once (one per device at most), each bounded by `timeout`.
/// - A device that delivered one event goes to the back of the ready list, so a device with a long backlog takes turns
///   with the others (round robin) instead of holding a slot for all of its events.
/// - A device whose head failed releases its slot while it waits out its backoff (a timer puts it back on the ready
///   list), so a slow or failing device occupies a slot for at most `timeout` per attempt, and never stalls the other
///   devices' events.
/// - An event whose eventID is already held is a duplicate and is ignored (counted in `stats.duplicatesIgnored`).
/// - All of this state lives in the actor; HTTP runs in detached tasks on URLSession's async `data(for:)`, raced by a
///   timer (see `FirstOutcome` for why the loser is abandoned, never cancelled), and backoff waits are `Task.sleep`s:
///   nothing blocks a thread. A request abandoned at its timeout or at shutdown may still arrive: delivery is at least
///   once, and receivers drop duplicates by `X-RoadSave-Event-ID`.
public actor WebhookSink: EventSink {
    public struct Options: Sendable, CustomStringConvertible {
        public var url: URL
        /// The HMAC key shared with the receiver. Never logged or printed (see `description`).
        public var secret: [UInt8]
        public var format: EventFormat
        /// Seconds for one request, from sending to the whole answer.
        public var timeout: Double
        /// Seconds before the first retry; doubled on each further one, up to `maximumBackoff`.
        public var initialBackoff: Double
        public var maximumBackoff: Double
        /// Requests in flight at once (over all devices).
        public var maximumConcurrentDeliveries: Int
        /// The longest `Retry-After` honoured, in seconds (a longer one waits this long).
        public var maximumRetryAfter: Double
        public var signatureHeader: String
        /// Sent with every request (e.g. an `Authorization` for a gateway in front of the receiver); values never logged.
        /// They cannot replace the headers the sink sets itself.
        public var extraHeaders: [String: String]

        public init(
            url: URL, secret: [UInt8], format: EventFormat = .current, timeout: Double = 5,
            initialBackoff: Double = 0.5, maximumBackoff: Double = 30, maximumConcurrentDeliveries: Int = 8,
            maximumRetryAfter: Double = 300, signatureHeader: String = "X-RoadSave-Signature",
            extraHeaders: [String: String] = [:]
        ) {
            self.url = url
            self.secret = secret
            self.format = format
            self.timeout = timeout
            self.initialBackoff = initialBackoff
            self.maximumBackoff = maximumBackoff
            self.maximumConcurrentDeliveries = maximumConcurrentDeliveries
            self.maximumRetryAfter = maximumRetryAfter
            self.signatureHeader = signatureHeader
            self.extraHeaders = extraHeaders
        }

        /// What is wrong with these options, for the caller to refuse at startup (empty when they are usable).
        public var problems: [String] {
            var problems: [String] = []
            let scheme = url.scheme?.lowercased()
            if scheme != "http" && scheme != "https" { problems.append("the webhook URL must be http or https") }
            if url.host == nil || url.host?.isEmpty == true { problems.append("the webhook URL has no host") }
            if secret.isEmpty { problems.append("the webhook secret is empty") }
            if !(timeout > 0) { problems.append("the timeout must be positive") }
            if !(initialBackoff > 0) || !(maximumBackoff >= initialBackoff) {
                problems.append("backoffs must be positive, the maximum at least the initial one")
            }
            if maximumConcurrentDeliveries < 1 { problems.append("maximumConcurrentDeliveries must be at least 1") }
            if signatureHeader.isEmpty { problems.append("the signature header name is empty") }
            return problems
        }

        /// For logs: the URL without credentials, query or full path; no secret, no extra header values.
        public var description: String {
            var text = "webhook \(WebhookSink.displayURL(url)) format=\(format.rawValue) timeout=\(timeout)s"
            text += " backoff=\(initialBackoff)…\(maximumBackoff)s concurrency=\(maximumConcurrentDeliveries)"
            text += " secret=<\(secret.count) bytes>"
            if !extraHeaders.isEmpty { text += " extraHeaders=\(extraHeaders.keys.sorted().joined(separator: ","))" }
            return text
        }
    }

    public struct Stats: Sendable, Equatable {
        /// Events answered with a 2xx.
        public var delivered = 0
        /// Retries scheduled (attempts after an event's first).
        public var retried = 0
        /// Events refused for good by the receiver (a permanent answer).
        public var failed = 0
        /// Events already held when handed over again.
        public var duplicatesIgnored = 0
        /// Events handed over after shutdown began.
        public var rejectedAfterShutdown = 0
        /// Events held now: waiting, backing off or in flight.
        public var queued = 0
        /// Requests on the wire now.
        public var inFlight = 0
        /// Events left undelivered by shutdown.
        public var abandoned = 0
    }

    // MARK: State

    struct Item: Sendable {
        var sequence: UInt64
        var event: RoadSaveEvent
        var eventID: String
        var request: URLRequest
        var attempts = 0
    }

    enum Phase {
        case idle, inFlight, backingOff
    }

    struct DeviceQueue {
        var items = Ring<Item>()
        var phase = Phase.idle
        var isReady = false
        /// The backoff timer of the head (its token, to ignore a timer that fired after being superseded).
        var timer: (token: UInt64, task: Task<Void, Never>)?
    }

    enum Outcome: Sendable {
        case delivered(status: Int)
        case retry(reason: String, retryAfter: Double?)
        case permanent(reason: String)
    }

    /// How an event left the sink.
    public enum Settlement: Sendable, Equatable {
        /// Answered 2xx.
        case delivered
        /// Refused with a permanent answer (4xx other than 408 and 429, or 3xx): not retried.
        case droppedByReceiver(reason: String)
    }

    /// Called (on the sink's actor) once for each event that leaves the sink, with its eventID.
    public typealias SettledHandler = @Sendable (_ eventID: String, _ settlement: Settlement) -> Void

    public nonisolated let name: String
    public nonisolated let options: Options
    let log: Log
    let session: URLSession
    let onSettled: SettledHandler?

    var devices: [DeviceID: DeviceQueue] = [:]
    var ready = Ring<DeviceID>()
    var held = 0
    var heldIDs: Set<String> = []
    var nextSequence: UInt64 = 0
    var nextToken: UInt64 = 0
    /// The outcome boxes of the attempts on the wire (offered "shut down" at stop, to release their waiters at once).
    var attempts: [UInt64: FirstOutcome] = [:]
    /// The tasks running `data(for:)`, until each has returned (even after its attempt timed out): all are awaited
    /// before the session is invalidated.
    var network: [UInt64: Task<Void, Never>] = [:]
    var inFlight = 0
    var counters = Stats()

    var closing = false
    var stopped = false
    var drainWaiters: [CheckedContinuation<Void, Never>] = []
    var deadlineTask: Task<Void, Never>?
    var abandonedCount = 0

    public init(options: Options, log: Log, onSettled: SettledHandler? = nil) {
        self.onSettled = onSettled
        var options = options
        options.maximumConcurrentDeliveries = max(1, options.maximumConcurrentDeliveries)
        self.options = options
        self.log = log
        self.name = "webhook(\(Self.displayURL(options.url)))"

        let configuration = URLSessionConfiguration.ephemeral
        // Twice the slots: an abandoned (timed-out) request holds its connection until URLSession's own timeout, and
        // must not make the next attempt queue inside URLSession.
        configuration.httpMaximumConnectionsPerHost = 2 * options.maximumConcurrentDeliveries
        configuration.timeoutIntervalForRequest = Self.libraryTimeout(options.timeout)
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        self.session = URLSession(configuration: configuration, delegate: RedirectRefuser(), delegateQueue: nil)

        Sodium.ensureInitialised()
        for problem in options.problems {
            log.error("webhook misconfigured: \(problem)", ["sink": name])
        }
    }

    /// The URL for logs: scheme, host and port, and the path masked (webhook paths often embed tokens); never the
    /// user, password, query or fragment.
    public nonisolated static func displayURL(_ url: URL) -> String {
        var text = (url.scheme ?? "?") + "://" + (url.host ?? "?")
        if let port = url.port { text += ":\(port)" }
        let path = url.path
        if !path.isEmpty && path != "/" { text += "/" + Secret.mask(String(path.dropFirst())) }
        return text
    }

    public var stats: Stats {
        var stats = counters
        stats.queued = held
        stats.inFlight = inFlight
        stats.abandoned = abandonedCount
        return stats
    }
}

/// Refuses redirects: the receiver's 3xx becomes the answer (a permanent failure) instead of the signed body going to
/// wherever it points.
private final class RedirectRefuser: NSObject, URLSessionTaskDelegate, Sendable {
    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
}
