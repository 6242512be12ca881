import Foundation
import RecordCodecs
import RoadSaveModel
import Testing

@testable import NotifierSinks

@Suite struct WebhookSinkTests {
    let secret = Array("whsec-7f3a9c0d1e2b4a6c".utf8)

    func sink(
        _ receiver: Receiver, path: String = "/hooks/roadsave", settlements: Settlements? = nil,
        _ configure: (inout WebhookSink.Options) -> Void = { _ in }
    ) -> WebhookSink {
        var options = WebhookSink.Options(
            url: receiver.url(path), secret: secret, initialBackoff: 0.02, maximumBackoff: 0.1)
        configure(&options)
        return WebhookSink(options: options, log: testLog) { eventID, settlement in
            settlements?.add(eventID, settlement)
        }
    }

    /// The requests answered 2xx, by eventID.
    func successes(_ requests: [Receiver.Request]) -> [String: [Receiver.Request]] {
        Dictionary(grouping: requests.filter { (200..<300).contains($0.status) }, by: \.eventID)
    }

    /// Each event answered 2xx exactly once; per device, in order, and no request for an event arrived before the
    /// device's previous event was answered 2xx (or, for dropped events, last answered).
    func expectDeliveredInOrder(
        _ requests: [Receiver.Request], _ events: [RoadSaveEvent], dropped: Set<String> = [],
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let successes = successes(requests)
        for event in events where !dropped.contains(event.eventID) {
            #expect(
                successes[event.eventID]?.count == 1, "\(event.name) \(event.eventID)", sourceLocation: sourceLocation)
        }
        for (_, deviceEvents) in Dictionary(grouping: events, by: \.device) {
            for (earlier, later) in zip(deviceEvents, deviceEvents.dropFirst()) {
                let settled = requests.filter { $0.eventID == earlier.eventID }.map(\.answered).max() ?? .infinity
                let firstSent = requests.filter { $0.eventID == later.eventID }.map(\.arrived).min() ?? .infinity
                #expect(
                    firstSent >= settled, "\(later.eventID) sent before \(earlier.eventID) settled",
                    sourceLocation: sourceLocation)
            }
        }
    }

    @Test func deliversEachEventOnceSignedWithHeadersAndBody() async throws {
        let receiver = try await Receiver.start(secret: secret)
        defer { receiver.kill() }
        let sink = sink(receiver, path: "/hooks/roadsave?tenant=t1") { $0.extraHeaders = ["X-Tenant": "t1"] }
        let events = TestEvents.journey("ana", 1) + TestEvents.journey("ben", 2)
        for event in events { await sink.deliver(event) }
        #expect(await sink.shutdown(deadline: 10) == 0)
        let stats = await sink.stats
        #expect(stats.delivered == 6)
        #expect(stats.retried == 0 && stats.failed == 0 && stats.queued == 0 && stats.abandoned == 0)

        let requests = await receiver.stop()
        #expect(requests.count == 6)
        for event in events {
            let matching = requests.filter { $0.eventID == event.eventID }
            #expect(matching.count == 1)
            let request = try #require(matching.first)
            #expect(request.object["method"] as? String == "POST")
            #expect(request.path == "/hooks/roadsave?tenant=t1")
            #expect(request.signatureValid)
            #expect(WebhookSignature.verify(body: Array(request.raw.utf8), secret: secret, header: request.signature))
            #expect(
                !WebhookSignature.verify(
                    body: Array(request.raw.utf8), secret: Array("other".utf8),
                    header: request.signature))
            #expect(request.header("content-type") == "application/json")
            #expect(request.header("x-roadsave-event") == event.name)
            #expect(request.header("user-agent") == "RoadSave-Notifier/1")
            #expect(request.header("x-tenant") == "t1")
            // The body is exactly the event's JSON, and parses to the same object.
            #expect(request.raw == event.json(.current))
            let body = try #require(request.body)
            #expect(NSDictionary(dictionary: body) == TestEvents.json(event.json(.current)))
            #expect(body["eventID"] as? String == event.eventID)
        }
        expectDeliveredInOrder(requests, events)
    }

    @Test func legacyFormat() async throws {
        let receiver = try await Receiver.start(secret: secret)
        defer { receiver.kill() }
        let sink = sink(receiver) { $0.format = .legacy }
        let events = TestEvents.journey("ana", 1)
        for event in events { await sink.deliver(event) }
        #expect(await sink.shutdown(deadline: 10) == 0)
        let requests = await receiver.stop()
        #expect(requests.count == 3)
        for event in events {
            let request = try #require(requests.first { $0.eventID == event.eventID })
            #expect(request.signatureValid)
            #expect(request.raw == event.json(.legacy))
            #expect(NSDictionary(dictionary: try #require(request.body)) == TestEvents.json(event.json(.legacy)))
        }
        let start = try #require(requests.first { $0.header("x-roadsave-event") == "tripDidStart" }?.body)
        #expect(start["tripID"] == nil)
        let crash = try #require(requests.first { $0.header("x-roadsave-event") == "crashDetected" }?.body)
        #expect(crash["timestamp"] as? String != nil)
        #expect(crash["detectedAt"] == nil)
        #expect(crash["confidence"] as? String == "High")
        #expect(crash["isTest"] as? Bool == true)
    }

    @Test func retriedAfter503sThenDeliveredOnce() async throws {
        let receiver = try await Receiver.start(secret: secret, ["--fail-first", "3"])
        defer { receiver.kill() }
        let sink = sink(receiver)
        let events = [TestEvents.crash("ana", crash: "c-1"), TestEvents.tripEnd("ana", trip: "t-1")]
        for event in events { await sink.deliver(event) }
        #expect(await sink.shutdown(deadline: 10) == 0)
        let stats = await sink.stats
        #expect(stats.delivered == 2)
        #expect(stats.retried == 3)
        #expect(stats.failed == 0)

        let requests = await receiver.stop()
        #expect(requests.map(\.status) == [503, 503, 503, 200, 200])
        #expect(requests.prefix(4).allSatisfy { $0.eventID == events[0].eventID && $0.raw == events[0].json() })
        #expect(requests.allSatisfy { $0.signatureValid })
        // The retries waited their backoff.
        let gaps = zip(requests, requests.dropFirst()).prefix(3).map { $1.arrived - $0.answered }
        #expect(gaps.allSatisfy { $0 >= 0.015 })
        expectDeliveredInOrder(requests, events)
    }

    @Test(arguments: [408, 429, 500, 502, 504])
    func retryableStatuses(_ status: Int) async throws {
        let receiver = try await Receiver.start(secret: secret, ["--fail-first", "1", "--fail-status", String(status)])
        defer { receiver.kill() }
        let sink = sink(receiver)
        await sink.deliver(TestEvents.crash("ana", crash: "c-\(status)"))
        #expect(await sink.shutdown(deadline: 10) == 0)
        #expect(await receiver.stop().map(\.status) == [status, 200])
        #expect(await sink.stats.retried == 1)
    }

    @Test func honoursRetryAfter() async throws {
        let receiver = try await Receiver.start(
            secret: secret, ["--fail-first", "1", "--fail-status", "429", "--retry-after", "1"])
        defer { receiver.kill() }
        let sink = sink(receiver) { $0.initialBackoff = 0.01 }
        await sink.deliver(TestEvents.crash("ana", crash: "c-1"))
        #expect(await sink.shutdown(deadline: 10) == 0)
        let requests = await receiver.stop()
        #expect(requests.map(\.status) == [429, 200])
        if requests.count == 2 {
            #expect(requests[1].arrived - requests[0].answered >= 0.9)
        }
    }

    @Test func permanentFailureIsNotRetried() async throws {
        let events = [
            TestEvents.tripStart("ana", trip: "t-1"), TestEvents.crash("ana", crash: "c-1"),
            TestEvents.tripEnd("ana", trip: "t-1"),
        ]
        let receiver = try await Receiver.start(secret: secret, ["--reject-event", events[1].eventID])
        defer { receiver.kill() }
        let sink = sink(receiver)
        for event in events { await sink.deliver(event) }
        #expect(await sink.shutdown(deadline: 10) == 0)
        let stats = await sink.stats
        #expect(stats.delivered == 2)
        #expect(stats.failed == 1)
        #expect(stats.retried == 0)
        let requests = await receiver.stop()
        #expect(requests.map(\.eventID) == events.map(\.eventID))
        #expect(requests.map(\.status) == [200, 400, 200])
        expectDeliveredInOrder(requests, events, dropped: [events[1].eventID])
    }

    @Test func eachEventIsSettledOnceWithItsOutcome() async throws {
        let events = [
            TestEvents.tripStart("ana", trip: "t-1"), TestEvents.crash("ana", crash: "c-1"),
            TestEvents.tripEnd("ana", trip: "t-1"), TestEvents.tripStart("ben", trip: "t-2"),
        ]
        let receiver = try await Receiver.start(
            secret: secret, ["--reject-event", events[1].eventID, "--fail-first", "2"])
        defer { receiver.kill() }
        let settlements = Settlements()
        var options = WebhookSink.Options(
            url: receiver.url("/hooks/roadsave"), secret: secret, initialBackoff: 0.02,
            maximumBackoff: 0.1)
        options.maximumConcurrentDeliveries = 1
        let sink = WebhookSink(options: options, log: testLog) { eventID, settlement in
            settlements.add(eventID, settlement)
        }
        for event in events { await sink.deliver(event) }
        #expect(await sink.shutdown(deadline: 10) == 0)
        // Retries (the two 503s) are not settlements; the 400 is the receiver's refusal, reported as such.
        let settled = settlements.all
        #expect(settled.count == 4)
        #expect(
            Dictionary(settled.map { ($0.0, $0.1) }, uniquingKeysWith: { first, _ in first }) == [
                events[0].eventID: .delivered, events[1].eventID: .droppedByReceiver(reason: "HTTP 400"),
                events[2].eventID: .delivered, events[3].eventID: .delivered,
            ])
        // Per device in order.
        let ana = settled.map(\.0).filter { id in events.prefix(3).contains { $0.eventID == id } }
        #expect(ana == events.prefix(3).map(\.eventID))
        #expect(await sink.stats.retried == 2)
    }

    @Test func redirectIsNotFollowed() async throws {
        let event = TestEvents.crash("ana", crash: "c-1")
        let receiver = try await Receiver.start(secret: secret, ["--redirect-event", event.eventID])
        defer { receiver.kill() }
        let sink = sink(receiver)
        await sink.deliver(event)
        #expect(await sink.shutdown(deadline: 10) == 0)
        #expect(await sink.stats.failed == 1)
        let requests = await receiver.stop()
        #expect(requests.map(\.status) == [302])
        #expect(requests.map(\.path) == ["/hooks/roadsave"])
    }

    @Test func classification() {
        func kind(_ status: Int, _ retryAfter: String? = nil) -> String {
            switch WebhookSink.classify(status: status, retryAfter: retryAfter) {
            case .delivered: "delivered"
            case .retry(_, let after): after.map { "retry \($0)" } ?? "retry"
            case .permanent: "permanent"
            }
        }
        #expect([200, 201, 202, 204, 299].map { kind($0) }.allSatisfy { $0 == "delivered" })
        #expect([408, 429, 500, 502, 503, 504, 599].map { kind($0) }.allSatisfy { $0 == "retry" })
        #expect(
            [301, 302, 307, 400, 401, 403, 404, 405, 410, 413, 422].map { kind($0) }.allSatisfy { $0 == "permanent" })
        #expect(kind(429, "7") == "retry 7.0")
        #expect(kind(503, " 2 ") == "retry 2.0")
        #expect(kind(503, "Wed, 21 Oct 2015 07:28:00 GMT") == "retry")
    }

    @Test func perDeviceOrderKeptUnderRetries() async throws {
        let receiver = try await Receiver.start(secret: secret, ["--fail-every", "3"])
        defer { receiver.kill() }
        let sink = sink(receiver) { $0.maximumConcurrentDeliveries = 3 }
        let users = ["ana", "ben", "cai", "dee"]
        var events: [RoadSaveEvent] = []
        for number in 1...2 { for user in users { events += TestEvents.journey(user, number) } }
        for event in events { await sink.deliver(event) }
        #expect(await sink.shutdown(deadline: 30) == 0)
        let stats = await sink.stats
        #expect(stats.delivered == 24)
        let requests = await receiver.stop()
        #expect(stats.retried == requests.count - 24)
        #expect(stats.retried >= 8)
        expectDeliveredInOrder(requests, events)
        // Per device, the 2xx answers came in the order the events were handed over.
        let successes = requests.filter { $0.status == 200 }.sorted { $0.answered < $1.answered }
        for user in users {
            let expected = events.filter { $0.device.user == user }.map(\.eventID)
            #expect(successes.compactMap { $0.body?["user"] as? String == user ? $0.eventID : nil } == expected)
        }
    }

    @Test func failingDeviceDoesNotStallOthers() async throws {
        let a1 = TestEvents.crash("ana", crash: "stuck")
        let a2 = TestEvents.tripEnd("ana", trip: "t-1")
        let others = [
            TestEvents.tripStart("ben", trip: "b-1"), TestEvents.crash("ben", crash: "b-c"),
            TestEvents.tripEnd("ben", trip: "b-1"), TestEvents.crash("cai", crash: "c-c"),
        ]
        let receiver = try await Receiver.start(secret: secret, ["--fail-event", a1.eventID])
        defer { receiver.kill() }
        // One slot only: ana's head keeps failing, and must not hold it while it waits to retry.
        let settlements = Settlements()
        let sink = sink(receiver, settlements: settlements) {
            $0.maximumConcurrentDeliveries = 1
            $0.initialBackoff = 0.2
            $0.maximumBackoff = 0.2
        }
        for event in [a1, a2] + others { await sink.deliver(event) }
        let requests = await receiver.wait(timeout: 10) { requests in
            others.allSatisfy { event in requests.contains { $0.eventID == event.eventID && $0.status == 200 } }
        }
        expectDeliveredInOrder(requests, others)
        let end = Date().addingTimeInterval(5)
        while await sink.stats.delivered < 4 && Date() < end { try await Task.sleep(for: .milliseconds(5)) }
        #expect(requests.contains { $0.eventID == a1.eventID && $0.status == 503 })
        #expect(!requests.contains { $0.eventID == a2.eventID })
        #expect(await sink.stats.delivered == 4)
        #expect(await sink.shutdown(deadline: 0.3) == 2)
        // ana's two were never settled: they stay with the caller.
        #expect(Set(settlements.all.map(\.0)) == Set(others.map(\.eventID)))
        let all = await receiver.stop()
        #expect(!all.contains { $0.eventID == a2.eventID })
    }

    @Test func devicesTakeTurns() async throws {
        let receiver = try await Receiver.start(secret: secret, ["--delay", "0.05"])
        defer { receiver.kill() }
        let sink = sink(receiver) { $0.maximumConcurrentDeliveries = 1 }
        let backlog = (1...5).flatMap { TestEvents.journey("ana", $0) }
        let other = TestEvents.crash("ben", crash: "b-1")
        for event in backlog + [other] { await sink.deliver(event) }
        #expect(await sink.shutdown(deadline: 30) == 0)
        let requests = await receiver.stop()
        expectDeliveredInOrder(requests, backlog + [other])
        // ben's crash waits for ana's request on the wire, not for ana's 15-event backlog.
        let position = requests.sorted { $0.arrived < $1.arrived }.firstIndex { $0.eventID == other.eventID }
        #expect(position == 1)
    }

    @Test func shutdownWaitsForDeliveriesInFlight() async throws {
        let receiver = try await Receiver.start(secret: secret, ["--delay", "0.5"])
        defer { receiver.kill() }
        let sink = sink(receiver)
        let events = [
            TestEvents.crash("ana", crash: "c-1"), TestEvents.crash("ben", crash: "c-2"),
            TestEvents.tripEnd("ben", trip: "t-2"),
        ]
        for event in events { await sink.deliver(event) }
        #expect(await sink.shutdown(deadline: 10) == 0)
        // On the receiver's clock (wall time, as `Date`): shutdown returned after the last answer was given, each
        // held 0.5 s, ben's two one after the other (`expectDeliveredInOrder`).
        let returned = Date().timeIntervalSince1970
        #expect(await sink.stats.delivered == 3)
        let requests = await receiver.stop()
        #expect(requests.count == 3)
        let lastAnswer = requests.map(\.answered).max() ?? .infinity
        #expect(returned >= lastAnswer, "shutdown returned \(lastAnswer - returned) s before the last answer")
        expectDeliveredInOrder(requests, events)
    }

    @Test func shutdownDeadlineReportsWhatIsLeft() async throws {
        // Held a minute (and a request timeout as long): a shutdown that waited for it, rather than its deadline,
        // would take a minute, far beyond the bound below, which leaves a busy machine plenty of room.
        let receiver = try await Receiver.start(secret: secret, ["--delay", "60"])
        defer { receiver.kill() }
        let settlements = Settlements()
        let sink = sink(receiver, settlements: settlements) { $0.timeout = 60 }
        let events = TestEvents.journey("ana", 1)
        for event in events { await sink.deliver(event) }
        let start = Date()
        #expect(await sink.shutdown(deadline: 0.5) == 3)
        let elapsed = Date().timeIntervalSince(start)
        #expect(elapsed >= 0.45 && elapsed < 20, "\(elapsed) s")
        #expect(await sink.stats.abandoned == 3)
        #expect(await sink.stats.queued == 0)
        // None settled: the caller still has them all.
        #expect(settlements.all.isEmpty)
        // Refused after shutdown, and not settled either.
        let late = TestEvents.crash("ana", crash: "late")
        await sink.deliver(late)
        #expect(await sink.stats.rejectedAfterShutdown == 1)
        #expect(await sink.stats.queued == 0)
        #expect(settlements.all.isEmpty)
        #expect(await sink.shutdown(deadline: 1) == 3)
    }

    @Test func immediateShutdownWithRequestsStarting() async throws {
        // Shutdown right after requests were started, before their tasks ran: the session must not be invalidated
        // under them (swift-corelibs-foundation traps on a request to an invalidated session).
        let receiver = try await Receiver.start(secret: secret)
        defer { receiver.kill() }
        for round in 0..<40 {
            let settlements = Settlements()
            let sink = sink(receiver, settlements: settlements)
            let events = (0..<16).map { TestEvents.crash("u\($0)", crash: "r\(round)-\($0)") }
            for event in events { await sink.deliver(event) }
            let left = await sink.shutdown(deadline: 0)
            let stats = await sink.stats
            #expect(left + stats.delivered == events.count)
            #expect(settlements.all.count == events.count - left)
        }
    }

    @Test func requestTimeoutIsRetried() async throws {
        // The first request held a minute, the others answered at once; a timeout of 2 s leaves a busy machine room
        // to answer the retry in time, and a delivery that waited for the first answer would take a minute.
        let receiver = try await Receiver.start(secret: secret, ["--delay", "60", "--delay-first", "1"])
        defer { receiver.kill() }
        let sink = sink(receiver) { $0.timeout = 2 }
        await sink.deliver(TestEvents.crash("ana", crash: "c-1"))
        let start = Date()
        #expect(await sink.shutdown(deadline: 50) == 0)
        #expect(Date().timeIntervalSince(start) < 30)
        #expect(await sink.stats.delivered == 1)
        #expect(await sink.stats.retried == 1)
        // Only the retry was answered in time (the first request is still being held by the receiver).
        #expect(await receiver.stop().map(\.status) == [200])
    }

    @Test func unreachableEndpointIsRetriedUntilShutdown() async throws {
        // Nothing listens on port 9 of loopback: connection refused, every time.
        let settlements = Settlements()
        let sink = WebhookSink(
            options: .init(
                url: URL(string: "http://127.0.0.1:9/hook")!, secret: secret,
                initialBackoff: 0.02, maximumBackoff: 0.05), log: testLog
        ) { eventID, settlement in
            settlements.add(eventID, settlement)
        }
        let event = TestEvents.crash("ana", crash: "c-1")
        await sink.deliver(event)
        let end = Date().addingTimeInterval(10)
        while await sink.stats.retried < 2 && Date() < end { try await Task.sleep(for: .milliseconds(10)) }
        #expect(await sink.stats.retried >= 2)
        #expect(await sink.stats.failed == 0)
        #expect(await sink.shutdown(deadline: 0.1) == 1)
        // Never given up on: left unsettled, with the caller.
        #expect(settlements.all.isEmpty)
    }

    @Test func eventAlreadyHeldIsADuplicate() async throws {
        let receiver = try await Receiver.start(secret: secret, ["--delay", "30"])
        defer { receiver.kill() }
        let sink = sink(receiver) {
            $0.maximumConcurrentDeliveries = 1
            $0.timeout = 20
        }
        let onTheWire = TestEvents.tripStart("zed", trip: "z-1")
        let crash1 = TestEvents.crash("ana", crash: "c-1")
        for event in [onTheWire, crash1] { await sink.deliver(event) }
        await sink.deliver(crash1) // already queued: a duplicate
        let stats = await sink.stats
        #expect(stats.duplicatesIgnored == 1)
        #expect(stats.queued == 2)
        #expect(await sink.shutdown(deadline: 0) == 2)
    }

    @Test func logsAndDescriptionsHideCredentials() {
        let url = URL(string: "https://user:pa55word@hooks.example.com:8443/services/T000/B000/XXXXSECRET?token=abc")!
        let options = WebhookSink.Options(
            url: url, secret: Array("topsecret-value".utf8),
            extraHeaders: ["Authorization": "Bearer gateway-token"])
        let sink = WebhookSink(options: options, log: testLog)
        for text in [sink.name, options.description] {
            #expect(text.contains("hooks.example.com:8443"))
            for secret in ["pa55word", "user", "XXXXSECRET", "token=abc", "topsecret", "gateway-token"] {
                #expect(!text.contains(secret), "\(text) shows \(secret)")
            }
        }
        #expect(options.problems.isEmpty)
        #expect(!WebhookSink.Options(url: URL(string: "ftp://example.com/x")!, secret: []).problems.isEmpty)
        #expect(
            WebhookSink.Options(url: URL(string: "http://example.com/x")!, secret: [1], timeout: 0).problems.count == 1)
    }
}

/// Settlements reported by a sink under test, in order.
final class Settlements: @unchecked Sendable {
    // @unchecked: `entries` is only touched with `lock` held.
    private let lock = NSLock()
    private var entries: [(String, WebhookSink.Settlement)] = []

    func add(_ eventID: String, _ settlement: WebhookSink.Settlement) {
        lock.withLock { entries.append((eventID, settlement)) }
    }

    var all: [(String, WebhookSink.Settlement)] { lock.withLock { entries } }
}
