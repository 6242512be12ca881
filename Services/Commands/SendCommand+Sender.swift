import Logging
import RoadSaveClient
import TerminalProgress
import Wire

extension SendCommand {
    /// Reads the file's records and hands them to the gateway in groups (whatever has been read when the reader would
    /// wait for more, so records written to a pipe as they come go on at once), and counts what the receipts say,
    /// reporting rejections with the file's line numbers.
    struct Sender {
        let options: Options
        let gateway: RoadSaveGateway
        let log: Log
        private(set) var totals = Totals()
        /// The same counts for each ingest, by its index in --endpoint (`invalid` and `behindWatermark` stay 0).
        private(set) var totalsByIngest: [Totals]
        /// Records handed over at most in one group.
        static let group = 256

        init(options: Options, gateway: RoadSaveGateway, log: Log) {
            self.options = options
            self.gateway = gateway
            self.log = log
            totalsByIngest = Array(repeating: Totals(), count: options.endpoints.count)
        }

        /// Hands every valid record of `input` to the gateway and reports the invalid ones. Returns why the file could
        /// not be read to its end, if so (a MessagePack file truncated, or with bytes that start no record: the
        /// reason names record and byte). Each record read is counted on `progress`.
        mutating func send(
            _ input: Input, progress: inout ProgressMeter
        ) async throws(CommandExit) -> RecordFileReader.Failure? {
            let reader = input.reader
            var group = Group()
            while let (number, item) = reader.next() {
                progress.advance(at: reader.position)
                switch item {
                case .record(let record):
                    group.add(record, number: number, messagePack: reader.lastRecordBytes)
                case .invalid(let error):
                    invalid(error, number: number)
                }
                if group.count >= Self.group || (reader.unreadBytes == 0 && group.count > 0) {
                    try await hand(group.items())
                    group = Group()
                }
            }
            if group.count > 0 { try await hand(group.items()) }
            return reader.failure
        }

        /// Records read and not yet handed over. A MessagePack file's records keep their bytes as read, all of a
        /// group's in one array, each item a slice of it: an array of its own for each record was an allocation a
        /// record.
        struct Group {
            private var read: [(record: SensorRecord, number: Int, bytes: Range<Int>?)] = []
            private var bytes: [UInt8] = []

            var count: Int { read.count }

            mutating func add(_ record: SensorRecord, number: Int, messagePack: UnsafeBufferPointer<UInt8>?) {
                if read.isEmpty { read.reserveCapacity(Sender.group) }
                guard let messagePack else {
                    read.append((record, number, nil))
                    return
                }
                if bytes.isEmpty { bytes.reserveCapacity(Sender.group * (messagePack.count + 16)) }
                let start = bytes.count
                bytes.append(contentsOf: messagePack)
                read.append((record, number, start..<bytes.count))
            }

            /// The items, their bytes slices of the group's array (taken once it is complete).
            func items() -> [GatewayItem] {
                read.map { GatewayItem(record: $0.record, number: $0.number, messagePack: $0.bytes.map { bytes[$0] }) }
            }
        }

        private mutating func hand(_ items: [GatewayItem]) async throws(CommandExit) {
            do {
                for receipt in try await gateway.send(items: items) { account(receipt) }
            } catch {
                throw exit(error)
            }
        }

        /// Sends what is left and waits for every acknowledgement, then ends the streams.
        mutating func finish() async throws(CommandExit) {
            do {
                for receipt in try await gateway.finish() { account(receipt) }
            } catch {
                throw exit(error)
            }
        }

        mutating func invalid(_ error: RecordError, number: Int) {
            totals.invalid += 1
            Console.err("\(options.numberName) \(number): \(error.field): \(error.reason) (not sent)")
        }

        /// The gateway's error as the command says it, with the file's line numbers.
        private func exit(_ error: RoadSaveClientError) -> CommandExit {
            switch error {
            case .notAcknowledged(let endpoint, let batch, let records, let count, let attempts, let timeout):
                return CommandExit(
                    1,
                    "batch \(batch) (\(options.lineRange(records)), \(count) record\(count == 1 ? "" : "s")) not acknowledged by \(endpoint) after \(attempts) attempt\(attempts == 1 ? "" : "s") of \(JSONText.number(timeout)) s"
                )
            case .closed where SignalFlag.signal != 0:
                let waiting = gateway.oldestUnacknowledged.map { " before \(options.lineRange($0)) were acknowledged" }
                return CommandExit(1, "interrupted by \(SignalFlag.name(SignalFlag.signal))\(waiting ?? "")")
            default:
                return CommandExit(1, "\(error)")
            }
        }

        /// Counts an acknowledgement and reports its rejections with the file's line numbers.
        mutating func account(_ receipt: RoadSaveGateway.Receipt) {
            let numbers = receipt.numbers
            let lineRange = options.lineRange(numbers.first.map { first in first...max(first, numbers.last!) })
            totals.sent += receipt.records
            totals.resent += receipt.attempts - 1
            totals.accepted += receipt.accepted
            totalsByIngest[receipt.ingest].sent += receipt.records
            totalsByIngest[receipt.ingest].resent += receipt.attempts - 1
            totalsByIngest[receipt.ingest].accepted += receipt.accepted
            var rejectedIndexes = Set<Int>()
            for rejection in receipt.rejections {
                if rejection.index == -1 {
                    // The batch could not be read at all: every record of it is refused.
                    Console.err(
                        "\(lineRange): batch \(receipt.batchID) refused: \(rejection.field): \(rejection.reason) (rejected by sensor-ingest)"
                    )
                    rejectedIndexes.formUnion(numbers.indices)
                } else if let number = rejection.number {
                    Console.err(
                        "\(options.numberName) \(number): \(rejection.field): \(rejection.reason) (rejected by sensor-ingest)"
                    )
                    rejectedIndexes.insert(rejection.index)
                } else {
                    log.warning(
                        "acknowledgement names a record the batch does not have",
                        [
                            "batch": receipt.batchID, "index": String(rejection.index),
                            "records": String(receipt.records),
                        ])
                }
            }
            totals.rejected += rejectedIndexes.count
            totalsByIngest[receipt.ingest].rejected += rejectedIndexes.count
            if receipt.accepted + rejectedIndexes.count != receipt.records {
                log.warning(
                    "acknowledgement does not add up",
                    [
                        "batch": receipt.batchID, "records": String(receipt.records),
                        "accepted": String(receipt.accepted), "rejected": String(rejectedIndexes.count),
                    ])
            }
            log.debug(
                "batch acknowledged",
                [
                    "batch": receipt.batchID, "lines": lineRange, "accepted": String(receipt.accepted),
                    "rejected": String(rejectedIndexes.count),
                ])
        }
    }
}
