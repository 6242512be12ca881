import Dispatch
import Feeds
import Foundation
import Logging
import Metrics
import NotifierSinks
import ServiceKit
import Storage
import Wire
import ZeroMQ

/// What the notifier does on its reactor thread (`NotifierService` is the shell that runs it): the store, the
/// upstream feeds, the outlets, the live and catch-up sockets, the figures. Not `Sendable`: it is reached only through
/// the service's `ReactorBound`, or from the reactor thread's own handlers and timers.
final class NotifierServing {
    let configuration: NotifierConfiguration
    let log: Log
    let reactor: Reactor
    private let ndjsonSink: NDJSONSink?

    var store: NotifierStore?
    private(set) var outlets: [any SinkOutlet] = []
    var upstreams: [UpstreamFeed] = []
    private(set) var publisher: ZMQSocket?
    private(set) var catchUpSocket: ZMQSocket?
    var catchUp: CatchUpServer?
    /// The CurveZMQ authenticator of the PUB and catch-up sockets (subscriber keys), when the service has keys.
    private var zap: ZAPHandler?
    /// How the live socket keeps limited subscriber keys to their applications (by the libzmq version).
    private let liveFiltering: LiveFiltering
    private let libzmqVersion: (major: Int32, minor: Int32, patch: Int32)
    /// The live socket's subscriptions, when subscribers have keys and libzmq's manual mode is safe.
    private var subscriptionGate: SubscriptionGate?
    /// The subscriber entries when the live socket was last bound: a reload that removes or changes one drops every
    /// connection (the socket is bound again), since libzmq asks ZAP only at the handshake and cannot drop one
    /// connection's subscriptions from outside.
    private var liveEntriesAtBind: [String: CurveAllowList.Entry] = [:]
    var pendingReports: [String: OutletReport] = [:]
    var flushPosted = false
    var stopping = false
    /// /metrics, /healthz and /readyz, and what the notifier counts for them.
    private var metrics: ServiceMetrics?
    var counters = NotifierMetrics()

    /// Most outbox entries in one sink's hands.
    static let window = 1000
    /// The largest frame accepted from detection's outbox feed (an item is one event: a few KiB) and on the catch-up
    /// and PUB sockets (a request, a subscription: small). ZMQ_MAXMSGSIZE: a peer sending more is disconnected.
    static let maximumEventFrameBytes: Int64 = 16 << 20
    static let maximumRequestBytes: Int64 = 64 << 10
    /// Messages queued per subscriber in libzmq (ZMQ_SNDHWM of the PUB): a subscriber that does not keep up loses
    /// what is over it (it catches up by position on the catch-up endpoint), and the notifier's memory stays bounded.
    static let subscriberQueue: Int32 = 10_000
    /// Most events asked for in one fetch.
    static let fetchSize = 256
    /// Pause before asking again after an error (of the feed or of the store).
    static let retryPause = 1.0
    /// Longest a graceful stop lets the sinks finish what is in flight (what is left stays in the outboxes).
    static let stopGrace = 2.0
    /// How often old events are deleted.
    static let retentionInterval = 60.0

    init(
        configuration: NotifierConfiguration, libzmqVersion: (major: Int32, minor: Int32, patch: Int32), log: Log,
        ndjsonSink: NDJSONSink?, reactor: Reactor
    ) {
        self.configuration = configuration
        self.libzmqVersion = libzmqVersion
        liveFiltering = LiveFiltering.choose(keys: configuration.curve != nil, libzmq: libzmqVersion)
        self.log = log
        self.ndjsonSink = ndjsonSink
        self.reactor = reactor
    }

    /// The store's file.
    var storePath: String { DataDirectory.file(NotifierStore.fileName, in: configuration.dataDirectory) }

    /// The reactor's setup: the store, the sockets, the outlets and feeds, then the metrics' posts.
    func start(_ loop: ReactorLoop, metrics: ServiceMetrics) throws {
        self.metrics = metrics
        try setUp(loop)
        self.metrics?.start(on: loop, service: "notifier") { [self] in
            (metricFamilies(now: loop.now), notReady(now: loop.now))
        }
    }

    // MARK: CurveZMQ

    /// With keys: the ZAP handler (made once, bound before the sockets it guards) answers for `socket` by the subscriber
    /// role, and SIGHUP re-reads its allow-list. Without: a warning, since anyone who reaches the port may read events.
    /// `unlimitedKeysOnly`: why keys limited to applications are refused on this socket (`LiveFiltering`).
    private func secure(_ socket: ZMQSocket, loop: ReactorLoop, unlimitedKeysOnly: String? = nil) throws {
        try ServiceZAP.secure(
            socket, role: .subscriber, keys: configuration.curve, handler: &zap, loop: loop,
            reactor: reactor, log: log, clients: "subscribers", unlimitedKeysOnly: unlimitedKeysOnly)
    }

    static func subscriberEntries(_ list: CurveAllowList) -> [String: CurveAllowList.Entry] {
        Dictionary(
            list.entries.filter { $0.role == .subscriber }.map { ($0.name, $0) },
            uniquingKeysWith: { first, _ in first })
    }

    /// After SIGHUP: libzmq asks ZAP only at the handshake, and cannot drop one connection's subscriptions from outside,
    /// so when a subscriber key was removed or changed the live socket is bound again. Every subscriber reconnects
    /// (libzmq's SUB does so by itself and subscribes again; what it missed meanwhile is in catch-up), and a removed
    /// key is refused at its new handshake.
    private func subscriberKeysReloaded(_ loop: ReactorLoop) {
        guard let zap, let publisher, liveFiltering != .none, !stopping else { return }
        let entries = Self.subscriberEntries(zap.allowList)
        guard liveEntriesAtBind.contains(where: { name, old in entries[name] != old }) else { return }
        let endpoint = publisher.lastEndpoint
        do {
            try publisher.unbind(endpoint)
        } catch {
            log.error("subscriber socket not bound again after a key was removed or changed", ["error": "\(error)"])
            return
        }
        // The unbind is only queued as a command to the socket: carried out now, not at the next publish (which would
        // drop every connection first and reach nobody). The reactor watches the socket's descriptor for the rest of
        // the closing handshake.
        publisher.processCommands()
        subscriptionGate?.rebound()
        liveEntriesAtBind = entries
        log.info("a subscriber key was removed or changed: every subscriber connection dropped", ["endpoint": endpoint])
        bindAgain(publisher, endpoint: endpoint, loop: loop, attempt: 1)
    }

    /// The old listener closes on libzmq's I/O thread: until then the port is taken, so binding is retried briefly.
    private func bindAgain(_ publisher: ZMQSocket, endpoint: String, loop: ReactorLoop, attempt: Int) {
        do {
            try publisher.bind(endpoint)
        } catch {
            guard attempt < 50 else {
                return log.error("subscriber socket not bound again", ["endpoint": endpoint, "error": "\(error)"])
            }
            _ = loop.schedule(after: 0.1) { [unowned self] in
                bindAgain(publisher, endpoint: endpoint, loop: loop, attempt: attempt + 1)
            }
        }
    }

    // MARK: On the reactor thread

    private func setUp(_ loop: ReactorLoop) throws {
        var keys: [String] = []
        if configuration.publishEndpoint != nil { keys.append(PublisherOutlet.sinkKey) }
        keys += configuration.webhooks.map(WebhookOutlet.key(for:))
        if let ndjsonSink { keys.append(NDJSONOutlet.key(for: ndjsonSink.path)) }
        let store = try NotifierStore(path: storePath, sinks: keys, log: log)
        self.store = store
        loop.onStop { store.close() }
        let report: (OutletReport) -> Void = { [unowned self] report in received(report) }

        if let endpoint = configuration.publishEndpoint {
            // With keys on libzmq >= 4.3.5, an XPUB whose subscriptions the service applies itself (SubscriptionGate):
            // a key limited to applications gets only their topics, whatever prefix it asks for. On older libzmq
            // (manual mode unsafe, `LiveFiltering`) a PUB that only keys of every application may join. Without keys a
            // plain PUB: plaintext subscribers have no key to limit.
            let publisher = try loop.socket(liveFiltering == .manual ? .xpub : .pub)
            try publisher.setSendHighWaterMark(Self.subscriberQueue)
            try publisher.setMaximumMessageSize(Self.maximumRequestBytes)
            try publisher.setLinger(milliseconds: 2000)
            try secure(
                publisher, loop: loop,
                unlimitedKeysOnly: liveFiltering == .unlimitedKeysOnly ? LiveFiltering.refusal : nil)
            if let zap {
                if liveFiltering == .manual {
                    subscriptionGate = try SubscriptionGate(socket: publisher, loop: loop, log: log) {
                        [unowned self] peer in
                        try? self.zap?.entry(for: peer, role: .subscriber).get()
                    }
                } else {
                    let version = libzmqVersion
                    log.warning(
                        "subscriber keys limited to applications are refused on the live socket: libzmq before "
                            + "4.3.5 cannot filter per subscription safely (libzmq 2df7ab6a); they follow live by "
                            + "catch-up long-poll (waitMs, roadsave tail --via-catch-up)",
                        ["libzmq": "\(version.major).\(version.minor).\(version.patch)"])
                }
                liveEntriesAtBind = Self.subscriberEntries(zap.allowList)
                let reactor = reactor
                let bound = ReactorBound(WeakReference(self), on: reactor)
                ReloadRequests.onReload {
                    // Posted after the ZAP handler's own reload (registered first).
                    reactor.post { loop in bound.value.object?.subscriberKeysReloaded(loop) }
                }
            }
            try OutsideSockets.watch(publisher, name: "subscribers", loop: loop, log: log)
            try publisher.bind(endpoint)
            self.publisher = publisher
            outlets.append(
                PublisherOutlet(
                    socket: publisher, format: configuration.publishFormat, capacity: Self.window,
                    log: log, withholds: { [unowned self] in subscriptionGate?.withholds($0) ?? false },
                    report: report))
        }
        for url in configuration.webhooks {
            var options = WebhookSink.Options(url: url, secret: configuration.webhookSecret)
            options.format = configuration.webhookFormat
            options.maximumBackoff = configuration.webhookMaximumBackoff
            options.initialBackoff = min(options.initialBackoff, options.maximumBackoff)
            outlets.append(
                WebhookOutlet(
                    options: options, capacity: Self.window, reactor: reactor,
                    log: Log(category: "webhook", minimumLevel: configuration.logLevel), report: report))
        }
        if let ndjsonSink {
            let key = NDJSONOutlet.key(for: ndjsonSink.path)
            let recorded = try store.sinkState(key).flatMap { Int64($0) }
            let offset = try ndjsonSink.recover(committedOffset: recorded)
            if let offset, offset != recorded { try store.complete(sink: key, positions: [], state: String(offset)) }
            outlets.append(
                NDJSONOutlet(
                    sink: ndjsonSink, offset: offset, capacity: Self.window, reactor: reactor, loop: loop,
                    log: Log(category: "ndjson", minimumLevel: configuration.logLevel), report: report))
        }
        if let endpoint = configuration.catchUpEndpoint {
            let socket = try loop.socket(.router)
            try secure(socket, loop: loop)
            try socket.setMaximumMessageSize(Self.maximumRequestBytes)
            // A reply to a peer that is gone fails, so its held long-polls are dropped (CatchUpServer).
            try socket.setRouterMandatory(true)
            try OutsideSockets.watch(socket, name: "catch-up", loop: loop, log: log)
            try socket.bind(endpoint)
            catchUpSocket = socket
            catchUp = CatchUpServer(
                socket: socket, loop: loop, store: store, format: configuration.publishFormat,
                retentionAge: configuration.retentionAge, log: log, zap: zap)
        }
        for (index, endpoint) in configuration.eventsEndpoints.enumerated() {
            let upstream = UpstreamFeed(endpoint: endpoint, silentAfter: upstreamSilentAfter, now: loop.now)
            upstream.client = try FeedClient(
                loop: loop, endpoint: endpoint, log: log,
                maximumFrameBytes: Self.maximumEventFrameBytes,
                curve: configuration.eventsCurve?[index]
            ) { [unowned self] header, items in
                replied(upstream, loop: loop, header: header, items: items)
            }
            upstreams.append(upstream)
            fetch(upstream)
        }
        expireOldEvents()
        loop.every(Self.retentionInterval) { [unowned self] in expireOldEvents() }
        loop.every(0.5) { [unowned self] in checkSilence(loop) }
        var outboxes: [String: Int] = [:]
        for outlet in outlets { outboxes[outlet.key] = try store.outboxCount(sink: outlet.key) }
        counters.opened(outboxes: outboxes)
        // What the last run left in the outboxes goes first.
        for outlet in outlets { pump(outlet, loop: loop) }
        log.info(
            "running",
            [
                "events": configuration.eventsEndpoints.joined(separator: ","),
                "subscribers": publisher?.lastEndpoint ?? "none",
                "catchUp": catchUpSocket?.lastEndpoint ?? "none",
                "sinks": outlets.map(\.name).joined(separator: ","), "store": storePath,
                "head": String((try? store.head()) ?? 0),
            ])
    }

    // MARK: Metrics

    /// What /metrics shows of the notifier (posted by `ServiceMetrics` from the loop).
    private func metricFamilies(now: Double) -> [MetricFamily] {
        var webhooks: [String: WebhookSink.Stats] = [:]
        for case let outlet as WebhookOutlet in outlets {
            outlet.refreshStats()
            if let stats = outlet.lastStats { webhooks[outlet.key] = stats }
        }
        if let catchUp { counters.setCatchUps(catchUp.requests) }
        return counters.families(
            .init(
                webhooks: webhooks,
                heldCatchUps: catchUp?.held.count ?? 0,
                silentUpstreams: upstreams.filter(\.hearing.isSilent).count))
            + FeedLinkMetrics.families(
                service: "notifier",
                links: upstreams.compactMap { upstream in
                    upstream.client.map {
                        FeedLinkMetrics.Link(
                            endpoint: upstream.endpoint, statistics: $0.statistics,
                            unanswered: upstream.hearing.unanswered(at: now))
                    }
                })
    }

    /// Why the notifier is not ready (nothing when it is): its store and sockets, and every detection feed answered
    /// and read to its head at its last answer.
    private func notReady(now: Double) -> [String] {
        var reasons: [String] = []
        if store == nil { reasons.append("store not open") }
        if (configuration.publishEndpoint != nil && publisher == nil)
            || (configuration.catchUpEndpoint != nil && catchUp == nil)
        {
            reasons.append("sockets not bound")
        }
        if stopping { reasons.append("stopping") }
        for upstream in upstreams {
            if upstream.hearing.isSilent {
                reasons.append(
                    "no answer from detection's feed at \(upstream.endpoint) for \(Int(upstream.hearing.unanswered(at: now))) s"
                )
            } else if !upstream.caughtUp {
                reasons.append("behind detection's feed at \(upstream.endpoint)")
            }
        }
        return reasons
    }

    // MARK: Stopping

    func beginStopping(_ loop: ReactorLoop) {
        guard !stopping else { return }
        stopping = true
        for upstream in upstreams {
            if let retry = upstream.retry { loop.cancel(retry) }
            // Closed but kept: FeedClient.close() leaves its resend timer (which holds it unowned) on the loop.
            upstream.client?.close()
        }
        for outlet in outlets { outlet.stopTaking() }
        catchUp?.answerEveryHeld()
        let finishers = outlets.map { $0.finisher(deadline: Self.stopGrace) }
        let reactor = reactor
        let bound = ReactorBound(self, on: reactor)
        Task {
            await withTaskGroup(of: Void.self) { group in
                for finisher in finishers { group.addTask { await finisher() } }
            }
            // After the sinks' last reports (posted before this).
            reactor.post { loop in
                bound.value.flushReports(loop)
                loop.stop()
            }
        }
    }
}
