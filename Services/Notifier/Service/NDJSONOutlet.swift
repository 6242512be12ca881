import Foundation
import Logging
import NotifierSinks
import ZeroMQ

/// The NDJSON file fed from its outbox, so that the file holds each event exactly once across crashes:
/// - a batch of lines is appended in one write and fsync'd (on the sink's writer queue), then its outbox rows are
///   deleted and the file's new size recorded in one transaction;
/// - at start the file is cut back to the recorded size (`NDJSONSink.recover`): lines written after it belong to
///   rows that are still in the outbox, and are written again.
/// For standard output (`-`), a device or a FIFO nothing can be cut: delivery there is at least once.
///
/// Lives on the reactor thread (made there, not `Sendable`); write completions reach it through `Reactor.post` and a
/// `ReactorBound`.
final class NDJSONOutlet: SinkOutlet {
    let key: String
    var name: String { sink.name }
    var window: OutboxWindow
    private let sink: NDJSONSink
    private let reactor: Reactor
    private let loop: ReactorLoop
    private let log: Log
    private let report: (OutletReport) -> Void
    private var pending: [StoredEvent] = []
    private var writing: [StoredEvent]?
    /// The file's size after the last batch written (nil: not a regular file).
    private var writtenOffset: Int64?
    private var failuresInARow = 0
    private var retry: TimerID?
    private var stopping = false
    /// Most lines in one write.
    static let batchLimit = 1000

    /// The outbox key of an NDJSON output: its absolute path (`-` for standard output).
    static func key(for path: String) -> String {
        path == "-" ? "ndjson:-" : "ndjson:" + URL(fileURLWithPath: path).standardizedFileURL.path
    }

    /// `committedOffset`: the size recorded with the last deletion (see `NDJSONSink.recover`, already applied).
    init(
        sink: NDJSONSink, offset: Int64?, capacity: Int, reactor: Reactor, loop: ReactorLoop, log: Log,
        report: @escaping (OutletReport) -> Void
    ) {
        self.sink = sink
        key = Self.key(for: sink.path)
        writtenOffset = offset
        window = OutboxWindow(capacity: capacity)
        self.reactor = reactor
        self.loop = loop
        self.log = log
        self.report = report
    }

    func take(_ entries: [StoredEvent]) {
        pending += entries
        writeNext()
    }

    private func writeNext() {
        guard writing == nil, retry == nil, !stopping, !pending.isEmpty else { return }
        let batch = Array(pending.prefix(Self.batchLimit))
        pending.removeFirst(batch.count)
        writing = batch
        let reactor = reactor
        let bound = ReactorBound(self, on: reactor)
        sink.appendDurably(batch.map(\.event), expectedOffset: writtenOffset) { result in
            reactor.post { _ in bound.value.written(result) }
        }
    }

    /// On the reactor thread.
    private func written(_ result: Result<Int64?, NDJSONSink.WriteError>) {
        guard let batch = writing else { return }
        writing = nil
        switch result {
        case .success(let offset):
            if failuresInARow > 0 { log.info("writes succeed again", ["sink": name]) }
            failuresInARow = 0
            writtenOffset = offset
            report(OutletReport(sink: key, taken: batch.map(\.position), state: offset.map { String($0) }))
            writeNext()
        case .failure(let error):
            failuresInARow += 1
            // The first failure in a row, then every tenth: a full disk doesn't flood the log.
            if failuresInARow == 1 || failuresInARow % 10 == 0 {
                log.error(
                    "write failed: the events stay in the outbox and are written again",
                    [
                        "sink": name, "error": error.description, "events": String(batch.count),
                        "failuresInARow": String(failuresInARow),
                    ])
            }
            pending.insert(contentsOf: batch, at: 0)
            let delay = min(5, 0.1 * Double(1 << min(failuresInARow, 6)))
            retry = loop.schedule(after: delay) { [self] in
                retry = nil
                writeNext()
            }
        }
    }

    func stopTaking() {
        stopping = true
        if let retry { loop.cancel(retry) }
        retry = nil
    }

    func finisher(deadline: Double) -> @Sendable () async -> Void {
        let sink = sink
        return {
            // The batch being written completes (and is reported) before the file is closed.
            await sink.close()
        }
    }
}
