import Foundation
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

    private struct Item: Sendable {
        var sequence: UInt64
        var event: RoadSaveEvent
        var eventID: String
        var request: URLRequest
        var attempts = 0
    }

    private enum Phase {
        case idle, inFlight, backingOff
    }

    private struct DeviceQueue {
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
    private let log: Log
    private let session: URLSession
    private let onSettled: SettledHandler?

    private var devices: [DeviceID: DeviceQueue] = [:]
    private var ready = Ring<DeviceID>()
    private var held = 0
    private var heldIDs: Set<String> = []
    private var nextSequence: UInt64 = 0
    private var nextToken: UInt64 = 0
    /// The outcome boxes of the attempts on the wire (offered "shut down" at stop, to release their waiters at once).
    private var attempts: [UInt64: FirstOutcome] = [:]
    /// The tasks running `data(for:)`, until each has returned (even after its attempt timed out): all are awaited
    /// before the session is invalidated.
    private var network: [UInt64: Task<Void, Never>] = [:]
    private var inFlight = 0
    private var counters = Stats()

    private var closing = false
    private var stopped = false
    private var drainWaiters: [CheckedContinuation<Void, Never>] = []
    private var deadlineTask: Task<Void, Never>?
    private var abandonedCount = 0

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

    // MARK: Accepting

    public func deliver(_ event: RoadSaveEvent) async {
        accept(event)
    }

    private func accept(_ event: RoadSaveEvent) {
        let eventID = event.eventID
        if closing {
            // Not settled: the caller still has it.
            counters.rejectedAfterShutdown += 1
            log.error(
                "event refused: the sink is shutting down",
                ["sink": name, "event": event.name, "eventID": eventID, "device": event.device.description])
            return
        }
        if heldIDs.contains(eventID) {
            counters.duplicatesIgnored += 1
            log.debug("duplicate event ignored: already queued", ["sink": name, "eventID": eventID])
            return
        }
        let body = Array(event.json(options.format).utf8)
        var request = URLRequest(
            url: options.url, cachePolicy: .reloadIgnoringLocalCacheData,
            timeoutInterval: Self.libraryTimeout(options.timeout))
        request.httpMethod = "POST"
        for (field, value) in options.extraHeaders { request.setValue(value, forHTTPHeaderField: field) }
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue(
            WebhookSignature.sign(body: body, secret: options.secret),
            forHTTPHeaderField: options.signatureHeader)
        request.setValue(event.name, forHTTPHeaderField: "X-RoadSave-Event")
        request.setValue(eventID, forHTTPHeaderField: "X-RoadSave-Event-ID")
        request.setValue("RoadSave-Notifier/1", forHTTPHeaderField: "User-Agent")
        request.httpBody = Data(body)

        nextSequence += 1
        let item = Item(sequence: nextSequence, event: event, eventID: eventID, request: request)
        devices[event.device, default: DeviceQueue()].items.append(item)
        held += 1
        heldIDs.insert(eventID)
        makeReady(event.device)
        pump()
    }

    /// Bookkeeping for an event that leaves the queue (delivered or dropped by the receiver).
    private func forget(_ item: Item) {
        held -= 1
        heldIDs.remove(item.eventID)
    }

    // MARK: Scheduling

    /// Puts the device on the ready list if its head can be sent now; forgets a device with nothing left.
    private func makeReady(_ device: DeviceID) {
        guard var queue = devices[device] else { return }
        if queue.items.isEmpty && queue.phase == .idle {
            queue.timer?.task.cancel()
            devices[device] = nil
            return
        }
        if queue.phase == .idle && !queue.isReady && !queue.items.isEmpty {
            queue.isReady = true
            ready.append(device)
            devices[device] = queue
        }
    }

    /// Starts requests for ready devices while slots are free.
    private func pump() {
        while !stopped && inFlight < options.maximumConcurrentDeliveries, let device = ready.popFirst() {
            guard var queue = devices[device] else { continue }
            queue.isReady = false
            guard queue.phase == .idle, var item = queue.items.first else {
                devices[device] = queue
                makeReady(device)
                continue
            }
            item.attempts += 1
            queue.items[0] = item
            queue.phase = .inFlight
            devices[device] = queue
            inFlight += 1
            nextToken += 1
            let token = nextToken
            let session = session
            let request = item.request
            let timeout = options.timeout
            let sequence = item.sequence
            let outcome = FirstOutcome()
            // Never cancelled (see `FirstOutcome`): it ends with the request, bounded by URLSession's own timeout.
            network[token] = Task.detached {
                outcome.offer(await Self.send(session: session, request: request))
                await self.networkEnded(token: token)
            }
            attempts[token] = outcome
            Task {
                let timer = Task.detached {
                    try? await Task.sleep(for: .seconds(timeout))
                    if !Task.isCancelled {
                        outcome.offer(.retry(reason: "timed out after \(timeout)s", retryAfter: nil))
                    }
                }
                let result = await outcome.wait()
                timer.cancel()
                self.finished(device: device, sequence: sequence, token: token, outcome: result)
            }
        }
    }

    private func networkEnded(token: UInt64) {
        network[token] = nil
    }

    private func finished(device: DeviceID, sequence: UInt64, token: UInt64, outcome: Outcome) {
        attempts[token] = nil
        guard !stopped else { return }
        inFlight -= 1
        defer {
            makeReady(device)
            pump()
            checkDrained()
        }
        guard var queue = devices[device], let item = queue.items.first, item.sequence == sequence else {
            // Cannot happen: only a settled head leaves its queue.
            log.error("internal: finished request has no queued event", ["sink": name, "device": device.description])
            return
        }
        queue.phase = .idle
        switch outcome {
        case .delivered(let status):
            _ = queue.items.popFirst()
            devices[device] = queue
            forget(item)
            counters.delivered += 1
            onSettled?(item.eventID, .delivered)
            log.debug(
                "event delivered",
                [
                    "sink": name, "event": item.event.name, "eventID": item.eventID,
                    "status": String(status), "attempts": String(item.attempts),
                ])

        case .permanent(let reason):
            _ = queue.items.popFirst()
            devices[device] = queue
            forget(item)
            counters.failed += 1
            onSettled?(item.eventID, .droppedByReceiver(reason: reason))
            log.error(
                "event dropped by the receiver: permanent answer, not retried",
                [
                    "sink": name, "reason": reason, "event": item.event.name, "eventID": item.eventID,
                    "device": device.description, "attempts": String(item.attempts),
                ])

        case .retry(let reason, let retryAfter):
            // Retried without end: only the caller decides to stop (by shutting the sink down).
            let delay = backoff(attempts: item.attempts, retryAfter: retryAfter)
            nextToken += 1
            let timerToken = nextToken
            queue.phase = .backingOff
            queue.timer = (
                timerToken,
                Task {
                    try? await Task.sleep(for: .seconds(delay))
                    self.backoffEnded(device: device, token: timerToken)
                }
            )
            devices[device] = queue
            counters.retried += 1
            // A warning for the first failure and every tenth; the others at info, so a long outage doesn't flood.
            log.write(
                item.attempts == 1 || item.attempts % 10 == 0 ? .warning : .info, "delivery failed, will retry",
                [
                    "sink": name, "reason": reason, "event": item.event.name, "eventID": item.eventID,
                    "device": device.description, "attempts": String(item.attempts),
                    "retryIn": String(format: "%.2fs", delay),
                ])
        }
    }

    private func backoffEnded(device: DeviceID, token: UInt64) {
        guard !stopped, var queue = devices[device], queue.timer?.token == token else { return }
        queue.timer = nil
        queue.phase = .idle
        devices[device] = queue
        makeReady(device)
        pump()
    }

    /// Exponential backoff with up to 10 % jitter, or the server's `Retry-After` when that is longer.
    private func backoff(attempts: Int, retryAfter: Double?) -> Double {
        let exponent = Double(min(max(attempts - 1, 0), 40))
        var delay = min(options.maximumBackoff, options.initialBackoff * pow(2, exponent))
        delay += delay * Double.random(in: 0...0.1)
        if let retryAfter, retryAfter.isFinite {
            delay = max(delay, min(max(retryAfter, 0), options.maximumRetryAfter))
        }
        return delay
    }

    // MARK: HTTP

    /// The timeout given to URLSession itself: whole seconds, longer than `timeout`. swift-corelibs-foundation truncates
    /// it to whole seconds (`Int(timeoutInterval) * 1000` ms), so 0.3 s would time every request out at once; the
    /// sink's own timer (in `pump`) enforces the real `timeout`.
    nonisolated static func libraryTimeout(_ timeout: Double) -> Double {
        guard timeout.isFinite else { return 3600 }
        return max(1, timeout.rounded(.up)) + 1
    }

    /// One request, classified. Runs to its end: it is never cancelled (see `FirstOutcome`), and URLSession's own
    /// timeout (`libraryTimeout`) bounds it; the sink's `timeout` is enforced by a timer racing it.
    nonisolated static func send(session: URLSession, request: URLRequest) async -> Outcome {
        do {
            let (_, response) = try await session.data(for: request)
            guard let http = response as? HTTPURLResponse else {
                return .retry(reason: "not an HTTP response", retryAfter: nil)
            }
            return classify(status: http.statusCode, retryAfter: http.value(forHTTPHeaderField: "Retry-After"))
        } catch let error as URLError {
            // The code and its text, not the error's description: that carries the full URL.
            return .retry(
                reason: "network error \(error.code.rawValue): \(error.localizedDescription)", retryAfter: nil)
        } catch {
            return .retry(reason: "network error: \(type(of: error))", retryAfter: nil)
        }
    }

    /// 2xx: delivered; 408, 429, 5xx (and anything unexpected): retried; other 4xx and 3xx: permanent.
    nonisolated static func classify(status: Int, retryAfter: String?) -> Outcome {
        switch status {
        case 200..<300:
            return .delivered(status: status)
        case 408, 429, 500..<600:
            let seconds = retryAfter.flatMap { Double($0.trimmingCharacters(in: .whitespaces)) }
            return .retry(reason: "HTTP \(status)", retryAfter: seconds)
        case 300..<400:
            return .permanent(reason: "HTTP \(status) (redirects are not followed)")
        case 400..<500:
            return .permanent(reason: "HTTP \(status)")
        default:
            return .retry(reason: "HTTP \(status)", retryAfter: nil)
        }
    }

    // MARK: Shutdown

    /// Stops accepting events, keeps delivering (with retries) what is held until all of it is settled or `deadline`
    /// seconds passed, then abandons what is left (requests on the wire included) and returns how many events were left
    /// unsettled (the caller still has them).
    public func shutdown(deadline: Double) async -> Int {
        if stopped { return abandonedCount }
        closing = true
        if held > 0 {
            if deadlineTask == nil {
                let seconds = max(0, deadline)
                deadlineTask = Task {
                    try? await Task.sleep(for: .seconds(seconds))
                    self.deadlineReached()
                }
            }
            await withCheckedContinuation { continuation in
                drainWaiters.append(continuation)
            }
        }
        if !stopped { stop() }
        return abandonedCount
    }

    private func checkDrained() {
        if closing && held == 0 { resumeWaiters() }
    }

    private func deadlineReached() {
        resumeWaiters()
    }

    private func resumeWaiters() {
        let waiters = drainWaiters
        drainWaiters.removeAll()
        for waiter in waiters { waiter.resume() }
    }

    private func stop() {
        stopped = true
        deadlineTask?.cancel()
        for outcome in attempts.values { outcome.offer(.retry(reason: "shut down", retryAfter: nil)) }
        attempts.removeAll()
        let onTheWire = Array(network.values)
        for (_, queue) in devices { queue.timer?.task.cancel() }
        devices.removeAll()
        ready.removeAll()
        heldIDs.removeAll()
        abandonedCount = held
        held = 0
        inFlight = 0
        if abandonedCount > 0 {
            log.info(
                "shutdown: events left undelivered, kept by the caller",
                ["sink": name, "events": String(abandonedCount)])
        }
        // Requests on the wire are not cancelled (see `FirstOutcome`): they end by themselves within URLSession's
        // timeout, and may still reach the receiver (which drops duplicates by eventID). The session is invalidated once
        // they have: swift-corelibs-foundation traps (`fatalError("Session invalidated")`) on a `data(for:)` after
        // invalidation, and a request task may have been created but not yet reached that call. Every such task is in
        // `onTheWire` (none start once `stopped` is set).
        let session = session
        Task.detached {
            for task in onTheWire { await task.value }
            session.finishTasksAndInvalidate()
        }
        resumeWaiters()
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

/// The first of several offered outcomes (the request's, its timer's, or shutdown's); later offers are ignored.
///
/// Why not a task group racing `data(for:)` against a timer and cancelling the loser: cancelling a Swift task inside
/// swift-corelibs-foundation's `URLSession.data(for:)` while that request completes deadlocks (seen with gdb: the
/// cancellation handler holds the task's status lock and waits for the session's work queue in
/// `URLSessionTask.cancel()`, while the completion holds the work queue and waits for the status lock to resume the
/// continuation). With 2 cores that stalls every thread of the cooperative pool, and with it the whole service. So the
/// task running `data(for:)` is never cancelled; a timed-out request is abandoned (it ends by URLSession's own timeout).
final class FirstOutcome: Sendable {
    private struct State {
        var result: WebhookSink.Outcome?
        var waiter: CheckedContinuation<WebhookSink.Outcome, Never>?
    }

    private let state = Locked(State())

    func offer(_ outcome: WebhookSink.Outcome) {
        let waiter: CheckedContinuation<WebhookSink.Outcome, Never>? = state.withLock { state in
            guard state.result == nil else { return nil }
            state.result = outcome
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: outcome)
    }

    /// Waits for the first outcome (one waiter only).
    func wait() async -> WebhookSink.Outcome {
        await withCheckedContinuation { continuation in
            let ready: WebhookSink.Outcome? = state.withLock { state in
                if let result = state.result { return result }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
