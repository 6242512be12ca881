import GatewayKit
import Logging
import RoadSaveModel
import ServiceKit
import SystemKit
import TerminalProgress
import Wire
import ZeroMQ

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

extension SendCommand {
    /// Reads records into batches, one being built for each ingest (a record goes to its device's, `IngestRoute`),
    /// paces them, and hands each to the gateway, which keeps up to --window of them awaiting acknowledgement on
    /// each link.
    struct Sender {
        let options: Options
        let gateway: Gateway
        let log: Log
        private(set) var totals = Totals()
        /// The same counts for each ingest, by its index in --endpoint (`invalid` and `behindWatermark` stay 0).
        private(set) var totalsByIngest: [Totals]
        /// The batch being built for each ingest.
        private var batches: [Batch] = []
        private var validCount = 0
        private var firstTime: Double?
        private let start = MonotonicClock.now()
        /// Paced batches are cut when their records span more than this (seconds of pace).
        static let paceGranularity = 0.25

        init(options: Options, gateway: Gateway, log: Log) {
            self.options = options
            self.gateway = gateway
            self.log = log
            totalsByIngest = Array(repeating: Totals(), count: options.endpoints.count)
            batches = (0..<options.endpoints.count).map { _ in newBatch() }
        }

        private func newBatch() -> Batch {
            var batch = Batch()
            batch.noun = options.numberName
            return batch
        }

        mutating func invalid(_ error: RecordError, number: Int) {
            totals.invalid += 1
            Console.err("\(options.numberName) \(number): \(error.field): \(error.reason) (not sent)")
        }

        mutating func take(_ record: SensorRecord, raw: UnsafeBufferPointer<UInt8>?, number: Int) throws(CommandExit) {
            let due = dueTime(of: record)
            validCount += 1
            // A paced batch of any ingest is cut once it spans the granularity, so that no ingest's records wait for
            // the next record of one of its own devices.
            if let due { try flush(where: { due - ($0.firstDue ?? due) > Self.paceGranularity }) }
            let ingest = options.route.index(of: record.device)
            if batches[ingest].isEmpty {
                batches[ingest].firstDue = due
                if raw != nil { batches[ingest].raw.reserveCapacity(options.batch * 128) }
            }
            batches[ingest].lastDue = due.map { max($0, batches[ingest].lastDue ?? $0) }
            if !gateway.noteRead(record.t, for: ingest) {
                totals.behindWatermark += 1
                if totals.behindWatermark <= Self.behindWatermarkReports {
                    Console.err(
                        "\(options.numberName) \(number): t: \(ISO8601.string(fromSeconds: record.t)) is behind the watermark already sent (the input is more out of order than --max-disorder \(JSONText.number(options.maximumDisorder)) s): applied if its device sent nothing newer before it (a phone's uploaded buffer), else too late"
                    )
                }
            }
            batches[ingest].devices.insert(record.device)
            batches[ingest].records.append(record)
            batches[ingest].lines.append(number)
            if let raw { batches[ingest].raw.append(contentsOf: raw) }
            if batches[ingest].records.count >= options.batch { try flush(ingest) }
        }

        /// Records behind the watermark reported one by one; the rest are counted in the summary.
        static let behindWatermarkReports = 20

        /// Sends what is left and waits for every acknowledgement.
        mutating func finish() throws(CommandExit) {
            try flush(where: { _ in true })
            do {
                try gateway.finish()
            } catch {
                countCompleted()
                throw error
            }
            countCompleted()
            if totals.behindWatermark > Self.behindWatermarkReports {
                Console.err(
                    "roadsave send: \(totals.behindWatermark) \(options.numberName)s behind the watermark already sent (--max-disorder)"
                )
            }
        }

        /// Seconds after the start at which the record is due, for --rate and --realtime.
        private mutating func dueTime(of record: SensorRecord) -> Double? {
            if let rate = options.rate { return Double(validCount) / rate }
            if options.realtime {
                let first = firstTime ?? record.t
                firstTime = first
                return max(0, record.t - first)
            }
            return nil
        }

        /// Sends the batches being built for which `cut` holds, the one due first first (in the order of the
        /// ingests when not paced).
        private mutating func flush(where cut: (Batch) -> Bool) throws(CommandExit) {
            let chosen = batches.indices.filter { !batches[$0].isEmpty && cut(batches[$0]) }
            let byDue = chosen.sorted { (batches[$0].firstDue ?? 0, $0) < (batches[$1].firstDue ?? 0, $1) }
            for ingest in byDue { try flush(ingest) }
        }

        private mutating func flush(_ ingest: Int) throws(CommandExit) {
            guard !batches[ingest].isEmpty else { return }
            let current = batches[ingest]
            batches[ingest] = newBatch()
            let number = totals.batches + 1
            // From now on the batch is one the watermark waits for, also while it waits for its time.
            gateway.seal(number, for: ingest)
            if let due = current.lastDue {
                let wait = start + due - MonotonicClock.now()
                if wait > 5 {
                    log.info("waiting for the records' time", ["seconds": JSONText.number((wait * 10).rounded() / 10)])
                }
                // Acknowledgements are taken while waiting.
                do {
                    try gateway.wait(until: start + due, before: current)
                } catch {
                    countCompleted()
                    throw error
                }
            }
            totals.batches = number
            totalsByIngest[ingest].batches += 1
            do {
                try gateway.submit(current, number: number, to: ingest)
            } catch {
                countCompleted()
                throw error
            }
            countCompleted()
        }

        /// Counts the acknowledgements the gateway took: after each call, and also when the call threw (what was
        /// acknowledged is in a journal, and the summary says so).
        private mutating func countCompleted() {
            for completion in gateway.takeCompleted() { account(completion) }
        }

        /// Counts an acknowledgement and reports its rejections with the file's line numbers.
        private mutating func account(_ completion: Completion) {
            let (ack, batch, batchID) = (completion.acknowledgement, completion.batch, completion.batchID)
            totals.sent += batch.records.count
            totals.resent += completion.attempts - 1
            totals.accepted += ack.accepted
            totalsByIngest[completion.ingest].sent += batch.records.count
            totalsByIngest[completion.ingest].resent += completion.attempts - 1
            totalsByIngest[completion.ingest].accepted += ack.accepted
            var rejectedIndexes = Set<Int>()
            for rejection in ack.rejected {
                if rejection.index == -1 {
                    // The batch could not be read at all: every record of it is refused.
                    Console.err(
                        "\(batch.lineRange): batch \(batchID) refused: \(rejection.field): \(rejection.reason) (rejected by sensor-ingest)"
                    )
                    rejectedIndexes.formUnion(batch.records.indices)
                } else if batch.lines.indices.contains(rejection.index) {
                    Console.err(
                        "\(batch.noun) \(batch.lines[rejection.index]): \(rejection.field): \(rejection.reason) (rejected by sensor-ingest)"
                    )
                    rejectedIndexes.insert(rejection.index)
                } else {
                    log.warning(
                        "acknowledgement names a record the batch does not have",
                        ["batch": batchID, "index": String(rejection.index), "records": String(batch.records.count)])
                }
            }
            totals.rejected += rejectedIndexes.count
            totalsByIngest[completion.ingest].rejected += rejectedIndexes.count
            if ack.accepted + rejectedIndexes.count != batch.records.count {
                log.warning(
                    "acknowledgement does not add up",
                    [
                        "batch": batchID, "records": String(batch.records.count), "accepted": String(ack.accepted),
                        "rejected": String(rejectedIndexes.count),
                    ])
            }
            log.debug(
                "batch acknowledged",
                [
                    "batch": batchID, "lines": batch.lineRange, "accepted": String(ack.accepted),
                    "rejected": String(rejectedIndexes.count),
                ])
        }
    }
}
