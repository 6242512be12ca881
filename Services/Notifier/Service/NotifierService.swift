import Dispatch
import Foundation
import NotifierSinks
import RoadSaveModel
import ServiceKit
import Wire
import ZeroMQ

/// notifier: subscribes to detection's events and delivers each through every configured sink: a ZeroMQ PUB socket
/// for downstream subscribers (frames `[<event>.<app>.<user>, JSON]`, CONTRACT §7), webhooks and NDJSON. An event
/// redelivered upstream (same eventID) is delivered once.
public final class NotifierService: @unchecked Sendable {
    // @unchecked: the mutable state below is used only on the reactor thread; the sinks are Sendable.
    public let configuration: NotifierConfiguration
    private let log: Log
    private let context: ZMQContext
    private let reactor: Reactor
    private var tracker = SequenceTracker()
    private var publisher: ZMQSocket?
    private var recentEventIDs = RecentSet(capacity: 100_000)
    /// Asynchronous sinks, each fed in order through its own stream.
    private let sinks: [any EventSink]
    private var feeds: [AsyncStream<RoadSaveEvent>.Continuation] = []
    private var consumers: [Task<Void, Never>] = []
    private var delivered = 0

    /// Longest a graceful stop waits for the sinks to deliver what they hold.
    static let stopGrace = 10.0

    public init(configuration: NotifierConfiguration) throws {
        self.configuration = configuration
        log = Log(category: "notifier", minimumLevel: configuration.logLevel)
        context = try ZMQContext()
        reactor = Reactor(name: "notifier", context: context)
        var sinks: [any EventSink] = configuration.webhooks.map { url in
            var options = WebhookSink.Options(url: url, secret: configuration.webhookSecret)
            options.format = configuration.webhookFormat
            return WebhookSink(options: options, log: Log(category: "webhook", minimumLevel: configuration.logLevel))
        }
        if let path = configuration.ndjsonPath {
            sinks.append(try NDJSONSink(path: path, format: configuration.ndjsonFormat,
                                        log: Log(category: "ndjson", minimumLevel: configuration.logLevel)))
        }
        self.sinks = sinks
    }

    public func run() throws {
        for sink in sinks {
            let (stream, continuation) = AsyncStream<RoadSaveEvent>.makeStream(bufferingPolicy: .unbounded)
            feeds.append(continuation)
            consumers.append(Task {
                for await event in stream { await sink.deliver(event) }
            })
        }
        reactor.start { [self] loop in
            let events = try loop.socket(.sub)
            try events.setReceiveHighWaterMark(1_000_000)
            try events.subscribe(Topic.events)
            try events.connect(configuration.eventsEndpoint)
            if let endpoint = configuration.publishEndpoint {
                let publisher = try loop.socket(.pub)
                try publisher.setSendHighWaterMark(1_000_000)
                try publisher.setLinger(milliseconds: 2000)
                try publisher.bind(endpoint)
                self.publisher = publisher
            }
            loop.onReadable(events) { [self] socket in receive(socket) }
            loop.every(5) { [self] in
                for producer in tracker.silentProducers(now: Date().timeIntervalSince1970,
                                                        after: 5 * configuration.heartbeatInterval) {
                    log.warning("no events nor heartbeats from detection", ["producer": producer])
                }
            }
            log.info("running", ["events": configuration.eventsEndpoint,
                                 "subscribers": publisher?.lastEndpoint ?? "none",
                                 "sinks": sinks.map(\.name).joined(separator: ",")])
        }
        let failure = reactor.wait()
        // The reactor has stopped taking events: let the sinks deliver what they hold, within the grace period.
        for feed in feeds { feed.finish() }
        let done = DispatchSemaphore(value: 0)
        let allSinks = sinks, allConsumers = consumers, sinkLog = log
        Task {
            for consumer in allConsumers { await consumer.value }
            for sink in allSinks {
                let left = await sink.shutdown(deadline: Self.stopGrace)
                if left > 0 { sinkLog.warning("events left undelivered at stop", ["sink": sink.name, "events": String(left)]) }
            }
            done.signal()
        }
        done.wait()
        log.info("stopped", ["delivered": String(delivered)])
        if let failure { throw failure }
    }

    public func stop() {
        reactor.stop()
    }

    // MARK: On the reactor thread

    private func receive(_ socket: ZMQSocket) {
        for _ in 0..<10_000 {
            let frames: [[UInt8]]
            do {
                guard let received = try socket.receive(dontWait: true) else { return }
                frames = received
            } catch {
                log.error("event socket failed", ["error": "\(error)"])
                return
            }
            do {
                let envelope = try Envelope(frames: frames)
                switch tracker.observe(envelope.header, at: Date().timeIntervalSince1970) {
                case let .gap(missing):
                    log.warning("events lost between detection and notifier",
                                ["producer": envelope.header.producer, "missing": "\(missing.lowerBound)…\(missing.upperBound)"])
                case .restarted:
                    log.info("detection restarted", ["producer": envelope.header.producer])
                default:
                    break
                }
                guard envelope.header.kind == .event else { continue }
                deliver(try envelope.event())
            } catch {
                log.warning("unreadable message from detection", ["error": "\(error)"])
            }
        }
    }

    private func deliver(_ event: RoadSaveEvent) {
        guard recentEventIDs.insert(event.eventID) else {
            log.info("duplicate event dropped", ["eventID": event.eventID])
            return
        }
        delivered += 1
        if let publisher {
            // CONTRACT §7: [topic, body] with the topic `<event>.<app>.<user>`.
            let topic = Array("\(event.name).\(event.device.app).\(event.device.user)".utf8)
            do {
                try publisher.send([topic, Array(event.json(configuration.publishFormat).utf8)])
            } catch {
                log.error("event not published", ["eventID": event.eventID, "error": "\(error)"])
            }
        }
        for feed in feeds { feed.yield(event) }
    }
}

/// A set that remembers the most recent `capacity` strings (for dropping redelivered events).
struct RecentSet {
    private var members = Set<String>()
    private var order: [String] = []
    private var head = 0
    let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// Inserts; false when it was already there.
    mutating func insert(_ value: String) -> Bool {
        guard members.insert(value).inserted else { return false }
        order.append(value)
        if order.count - head > capacity {
            members.remove(order[head])
            head += 1
            if head > capacity {
                order.removeFirst(head)
                head = 0
            }
        }
        return true
    }
}
