import Foundation
import Logging
import ZeroMQ

/// Feeding the sinks: what each outlet reads from its outbox, how the outlets' reports are stored (one transaction a
/// round), and when old events leave the store.
extension NotifierServing {
    /// Reads the sink's outbox while its window has room.
    func pump(_ outlet: any SinkOutlet, loop: ReactorLoop) {
        guard let store else { return }
        while !stopping, let count = outlet.window.entriesToRead {
            let entries: [StoredEvent]
            do {
                entries = try store.outbox(sink: outlet.key, after: outlet.window.lastRead, limit: count)
            } catch {
                log.error("cannot read the outbox; trying again shortly", ["sink": outlet.name, "error": "\(error)"])
                _ = loop.schedule(after: Self.retryPause) { [unowned self] in pump(outlet, loop: loop) }
                return
            }
            outlet.window.read(entries.map(\.position), asked: count)
            guard !entries.isEmpty else { return }
            outlet.take(entries)
        }
    }

    /// An outlet's report: kept, and stored with the others of this round in one transaction.
    func received(_ report: OutletReport) {
        var pending = pendingReports[report.sink] ?? OutletReport(sink: report.sink)
        pending.taken += report.taken
        pending.released += report.released
        if let state = report.state { pending.state = state }
        pendingReports[report.sink] = pending
        guard !flushPosted else { return }
        flushPosted = true
        let bound = ReactorBound(self, on: reactor)
        reactor.post { loop in bound.value.flushReports(loop) }
    }

    func flushReports(_ loop: ReactorLoop) {
        flushPosted = false
        guard let store, !pendingReports.isEmpty else { return }
        let reports = pendingReports
        pendingReports = [:]
        do {
            try store.inOneTransaction {
                for report in reports.values where !report.taken.isEmpty || report.state != nil {
                    try store.complete(sink: report.sink, positions: report.taken, state: report.state)
                }
            }
        } catch {
            // The sinks took these events: they are delivered again after the next start (at least once).
            log.error(
                "outbox entries of delivered events not deleted",
                ["events": String(reports.values.map(\.taken.count).reduce(0, +)), "error": "\(error)"])
        }
        for outlet in outlets {
            guard let report = reports[outlet.key] else { continue }
            counters.delivered(report.taken.count, sink: outlet.key)
            outlet.window.settled(report.taken.count + report.released)
            pump(outlet, loop: loop)
        }
    }

    func expireOldEvents() {
        guard let store else { return }
        do {
            let deleted = try store.expire(storedBefore: Date().timeIntervalSince1970 - configuration.retentionAge)
            if deleted > 0 { log.info("events past the retention age deleted", ["events": String(deleted)]) }
        } catch {
            log.error("old events not deleted", ["error": "\(error)"])
        }
    }
}
