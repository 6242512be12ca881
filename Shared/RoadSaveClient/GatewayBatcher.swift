import RecordCodecs
import SystemKit

/// Puts the records handed to a gateway into batches, one being built for each ingest (a record goes to its device's,
/// `IngestRoute`), paces them, and hands each to the links, which keep up to the window of them awaiting
/// acknowledgement on each ingest. On the engine's thread.
final class GatewayBatcher {
    let settings: GatewaySettings
    let links: GatewayLinks
    /// The batch being built for each ingest.
    private var batches: [GatewayBatch]
    /// Batches handed to the links so far (each one's number), and how many of them to each ingest.
    private(set) var batchCount = 0
    private(set) var batchesByIngest: [Int]
    private var validCount = 0
    private var firstTime: Double?
    private let start = MonotonicClock.now()
    /// Paced batches are cut when their records span more than this (seconds of pace).
    static let paceGranularity = 0.25

    init(settings: GatewaySettings, links: GatewayLinks) {
        self.settings = settings
        self.links = links
        batches = Array(repeating: GatewayBatch(), count: settings.endpoints.count)
        batchesByIngest = Array(repeating: 0, count: settings.endpoints.count)
    }

    func take(_ item: GatewayItem) throws(RoadSaveClientError) {
        let record = item.record
        let due = dueTime(of: record)
        validCount += 1
        // A paced batch of any ingest is cut once it spans the granularity, so that no ingest's records wait for the
        // next record of one of its own devices.
        if let due { try flush(where: { due - ($0.firstDue ?? due) > Self.paceGranularity }) }
        let ingest = settings.route.index(of: record.device)
        if batches[ingest].isEmpty {
            batches[ingest].firstDue = due
            // Made to size once: grown a record at a time they would move a dozen times a batch.
            batches[ingest].records.reserveCapacity(settings.batchSize)
            batches[ingest].numbers.reserveCapacity(settings.batchSize)
            if let raw = item.messagePack {
                batches[ingest].raw.reserveCapacity(settings.batchSize * max(128, raw.count + raw.count / 4))
            }
        }
        batches[ingest].lastDue = due.map { max($0, batches[ingest].lastDue ?? $0) }
        if !links.noteRead(record.t, for: ingest) {
            settings.notify(.behindWatermark(number: item.number, t: record.t))
        }
        batches[ingest].records.append(record)
        batches[ingest].numbers.append(item.number)
        if let raw = item.messagePack { batches[ingest].raw.append(contentsOf: raw) }
        if batches[ingest].records.count >= settings.batchSize { try flush(ingest) }
    }

    /// Sends every batch being built, full or not.
    func flushAll() throws(RoadSaveClientError) {
        try flush(where: { _ in true })
    }

    /// Sends what is left and waits for every acknowledgement, then ends the streams.
    func finish() throws(RoadSaveClientError) {
        try flushAll()
        try links.finish()
    }

    /// Seconds after the start at which the record is due, with a pace.
    private func dueTime(of record: SensorRecord) -> Double? {
        switch settings.pace {
        case .recordsPerSecond(let rate)?:
            return Double(validCount) / rate
        case .recordTimes?:
            let first = firstTime ?? record.t
            firstTime = first
            return max(0, record.t - first)
        case nil:
            return nil
        }
    }

    /// Sends the batches being built for which `cut` holds, the one due first first (in the order of the ingests when
    /// not paced).
    private func flush(where cut: (GatewayBatch) -> Bool) throws(RoadSaveClientError) {
        let chosen = batches.indices.filter { !batches[$0].isEmpty && cut(batches[$0]) }
        let byDue = chosen.sorted { (batches[$0].firstDue ?? 0, $0) < (batches[$1].firstDue ?? 0, $1) }
        for ingest in byDue { try flush(ingest) }
    }

    private func flush(_ ingest: Int) throws(RoadSaveClientError) {
        guard !batches[ingest].isEmpty else { return }
        let current = batches[ingest]
        batches[ingest] = GatewayBatch()
        let number = batchCount + 1
        // From now on the batch is one the watermark waits for, also while it waits for its time.
        links.seal(number, for: ingest)
        if let due = current.lastDue {
            let wait = start + due - MonotonicClock.now()
            if wait > 5 { settings.notify(.waitingForRecordTime(seconds: (wait * 10).rounded() / 10)) }
            // Acknowledgements are taken while waiting.
            try links.wait(until: start + due)
        }
        batchCount = number
        batchesByIngest[ingest] += 1
        try links.submit(current, number: number, to: ingest)
    }
}
