import Foundation
import SystemKit
import ZeroMQ

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A gateway's work, on a thread of its own: its sockets, batches, re-sends and watermarks (`GatewayLinks`,
/// `GatewayBatcher`), and the calls async code posts to it (`EngineInbox`), each answered through an `EngineReply`.
/// Between calls the thread goes on taking acknowledgements, sending again what is due and sending headers alone.
/// A call that fails (a batch out of attempts, a refused key) leaves the gateway failed: every later call gets the
/// same error. `finish` ends the thread once answered (later calls get `closed`). The engine never touches Swift's
/// cooperative pool.
final class GatewayEngine: Sendable {
    enum Call: Sendable {
        case add([GatewayItem], EngineReply<[RoadSaveGateway.Receipt]>)
        case flush(EngineReply<[RoadSaveGateway.Receipt]>)
        case finish(EngineReply<[RoadSaveGateway.Receipt]>)
        case receipts(EngineReply<[RoadSaveGateway.Receipt]>)
        case close
    }

    /// What the callers may read without a call: kept current by the engine thread.
    struct Snapshot: Sendable {
        /// Batches handed to the links, in all and per ingest.
        var batches = 0
        var batchesByIngest: [Int] = []
        /// The numbers of the first and last record of the oldest batch awaiting acknowledgement.
        var oldestWaiting: ClosedRange<Int>?
    }

    let inbox = EngineInbox<Call>()
    private let cancelled = Locked(false)
    let snapshot = Locked(Snapshot())

    /// Starts the thread: it connects to every ingest, then takes calls until `close`.
    init(settings: GatewaySettings) {
        snapshot.withLock { $0.batchesByIngest = Array(repeating: 0, count: settings.endpoints.count) }
        let runID = Self.runID()
        let thread = Thread { [self] in
            run(settings, runID: runID)
            inbox.shut()
        }
        thread.name = "roadsave-gateway"
        thread.start()
    }

    /// `gw-<pid>-<random>`: the batchIDs' prefix, and the stream's name when none is given.
    private static func runID() -> String {
        "gw-\(getpid())-" + String(UInt32.random(in: 0...UInt32.max), radix: 16)
    }

    /// Makes the call in hand, and every later one, fail with `closed` (a caller's task was cancelled).
    func cancel() {
        cancelled.withLock { $0 = true }
    }

    private func run(_ settings: GatewaySettings, runID: String) {
        let context: ZMQContext
        do {
            context = try ZMQContext()
        } catch {
            fail(everything: .connectionFailed(endpoint: settings.endpoints[0], reason: "\(error)"))
            return
        }
        defer { context.terminate() }
        var failure: RoadSaveClientError?
        let links: GatewayLinks
        do {
            links = try GatewayLinks(
                settings: settings, context: context, runID: runID, wake: inbox.readEnd,
                shouldStop: { [cancelled] in cancelled.withLock { $0 } || settings.interruption?() != nil })
        } catch {
            fail(everything: error)
            return
        }
        defer { links.close() }
        let batcher = GatewayBatcher(settings: settings, links: links)
        while true {
            for call in inbox.take() {
                let reply: EngineReply<[RoadSaveGateway.Receipt]>
                let work: () throws(RoadSaveClientError) -> Void
                switch call {
                case .close:
                    return
                case .add(let items, let answer):
                    reply = answer
                    work = { () throws(RoadSaveClientError) in for item in items { try batcher.take(item) } }
                case .flush(let answer):
                    reply = answer
                    work = batcher.flushAll
                case .finish(let answer):
                    reply = answer
                    work = batcher.finish
                case .receipts(let answer):
                    // Also after a failure: the receipts taken before it.
                    answer.resume(.success(links.takeCompleted()))
                    continue
                }
                if failure == nil {
                    do {
                        try work()
                    } catch {
                        failure = error
                    }
                }
                update(batcher, links)
                if let failure {
                    // The receipts taken before the failure stay for `takeReceipts`.
                    reply.resume(.failure(failure))
                } else {
                    reply.resume(.success(links.takeCompleted()))
                    // The stream is over: nothing more goes out (a later header would speak for an ended stream).
                    if case .finish = call { return }
                }
            }
            if failure == nil {
                do {
                    try links.service(until: nil, idle: true)
                } catch {
                    failure = error
                    update(batcher, links)
                }
            } else {
                _ = try? ZMQPoller.poll([ZMQPollItem(fileDescriptor: inbox.readEnd)], timeoutMilliseconds: 100)
            }
        }
    }

    private func update(_ batcher: GatewayBatcher, _ links: GatewayLinks) {
        let oldest = links.oldestWaiting.flatMap { batch in
            batch.numbers.first.flatMap { first in batch.numbers.last.map { first...max(first, $0) } }
        }
        snapshot.withLock {
            $0.batches = batcher.batchCount
            $0.batchesByIngest = batcher.batchesByIngest
            $0.oldestWaiting = oldest
        }
    }

    /// The engine could not start: every call fails with `error`.
    private func fail(everything error: RoadSaveClientError) {
        while true {
            for call in inbox.take() {
                switch call {
                case .close: return
                case .add(_, let reply), .flush(let reply), .finish(let reply), .receipts(let reply):
                    reply.resume(.failure(error))
                }
            }
            _ = try? ZMQPoller.poll([ZMQPollItem(fileDescriptor: inbox.readEnd)], timeoutMilliseconds: 100)
        }
    }
}
