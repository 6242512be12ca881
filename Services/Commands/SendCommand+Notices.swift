import Logging
import RoadSaveClient
import SystemKit
import Wire

extension SendCommand {
    /// The gateway's notices as send's log lines and warnings (on the gateway's thread: each is one `write(2)`), with
    /// the counts the summary needs.
    final class Notices: Sendable {
        let options: Options
        let log: Log
        private struct Counts {
            var behindWatermark = 0
            var rateRefusals: [String: Int] = [:]
        }
        private let counts = Locked(Counts())

        /// Records behind the watermark reported one by one; the rest are counted in the summary.
        static let behindWatermarkReports = 20

        init(options: Options, log: Log) {
            self.options = options
            self.log = log
        }

        /// Records read below a watermark already sent.
        var behindWatermark: Int { counts.withLock { $0.behindWatermark } }

        /// Rate refusals of the ingest at `endpoint` (nil: of every ingest).
        func rateRefusals(_ endpoint: String?) -> Int {
            counts.withLock { counts in
                endpoint.map { counts.rateRefusals[$0] ?? 0 } ?? counts.rateRefusals.values.reduce(0, +)
            }
        }

        func log(_ notice: GatewayNotice) {
            switch notice {
            case .connecting(let endpoint):
                log.info(
                    "connecting",
                    [
                        "endpoint": endpoint, "format": options.format.rawValue,
                        "batch": String(options.batch), "window": String(options.window),
                    ])
            case .noAcknowledgement(let endpoint, let batch, let attempt, let attempts, let pause):
                note(
                    .warning, "no acknowledgement, sending the batch again",
                    [
                        ("batch", batch.id), ("lines", lines(batch)), ("attempt", "\(attempt)/\(attempts)"),
                        ("pause", JSONText.number(pause)),
                    ], endpoint: endpoint)
            case .connectionEnded(let endpoint, let batch, let attempt, let attempts):
                note(
                    .warning,
                    "the connection to sensor-ingest ended before the batch was acknowledged: sending it again",
                    [("batch", batch.id), ("lines", lines(batch)), ("attempt", "\(attempt)/\(attempts)")],
                    endpoint: endpoint)
            case .notQueued(let endpoint, let batch):
                log.warning(
                    "batch not queued within the timeout (sensor-ingest gone or full)",
                    ["batch": batch, "endpoint": endpoint])
            case .storeRefused(let endpoint, let batch, let pause, let reason):
                note(
                    .warning, "sensor-ingest could not store the batch: sending it again after the pause",
                    [("batch", batch), ("pause", JSONText.number(pause)), ("reason", reason)], endpoint: endpoint)
            case .rateLimited(let endpoint, let batch, let pause, let reason, _):
                let first = counts.withLock { counts -> Bool in
                    counts.rateRefusals[endpoint, default: 0] += 1
                    return counts.rateRefusals[endpoint] == 1
                }
                if first {
                    note(
                        .warning,
                        "sensor-ingest limits this gateway's rate: batches wait and are sent again as it asks",
                        [("batch", batch), ("pause", JSONText.number(pause)), ("reason", reason)], endpoint: endpoint)
                } else {
                    note(
                        .debug, "rate limited, sending the batch again after the pause",
                        [("batch", batch), ("pause", JSONText.number(pause))], endpoint: endpoint)
                }
            case .lateAcknowledgement(let endpoint, let batch):
                note(.debug, "acknowledgement of an earlier send skipped", [("batch", batch)], endpoint: endpoint)
            case .unexpectedReply(let endpoint, let frames):
                note(
                    .warning, "reply that is not [batchID, ack] ignored", [("frames", String(frames))],
                    endpoint: endpoint)
            case .behindWatermark(let number, let t):
                let count = counts.withLock { counts -> Int in
                    counts.behindWatermark += 1
                    return counts.behindWatermark
                }
                if count <= Self.behindWatermarkReports {
                    Console.err(
                        "\(options.numberName) \(number): t: \(ISO8601.string(fromSeconds: t)) is behind the watermark already sent (the input is more out of order than --max-disorder \(JSONText.number(options.maximumDisorder)) s): applied if its device sent nothing newer before it (a phone's uploaded buffer), else too late"
                    )
                }
            case .waitingForRecordTime(let seconds):
                log.info("waiting for the records' time", ["seconds": JSONText.number(seconds)])
            }
        }

        private func lines(_ batch: GatewayNotice.Batch) -> String {
            options.lineRange(batch.first.map { first in first...max(first, batch.last ?? first) })
        }

        /// A log line of one ingest's link, naming its endpoint when there are several.
        private func note(
            _ level: Log.Level, _ message: String, _ fields: [(String, String)], endpoint: String
        ) {
            var pairs = fields
            if options.endpoints.count > 1 { pairs.append(("endpoint", endpoint)) }
            log.write(level, message, pairs: pairs)
        }
    }
}
