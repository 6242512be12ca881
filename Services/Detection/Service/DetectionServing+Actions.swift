import DetectionEngine
import Logging
import SystemKit
import ZeroMQ

/// The core's actions carried out: fetches, platform calls (their answers given back), commits, replies, logs.
extension DetectionServing {
    // MARK: The core's actions

    func perform(_ actions: [DetectionCoreAction]) {
        for action in actions {
            // A store that failed: only the log lines of what is left go out.
            if storeBroken, !action.isLog { continue }
            switch action {
            case .fetch(let index, let fetch):
                if journals.indices.contains(index) { journals[index].fetch(fetch) }
            case .callPlatform(let call):
                callPlatform(call)
            case .commit(let commit):
                store(commit)
            case .reply(let target, let bytes):
                send(target.frames, bytes)
            case .writeCheckpoint(let order):
                write(order)
            case .forgetInputs(let input):
                do {
                    try store?.forgetInputs(through: input)
                    try store?.trimUnapplied()
                } catch {
                    // They are skipped at a restart (the checkpoint holds them) and deleted with the next checkpoint.
                    log.warning("inputs held by the checkpoint not deleted", ["error": "\(error)"])
                }
            case .journalGap(let gap):
                log.write(.error, JournalGap.message, pairs: gap.logFields)
                do {
                    try store?.saveJournalGap(gap, at: time.wall)
                } catch {
                    // What is left of the actions: only their log lines (`storeBroken`).
                    failStore(error)
                    continue
                }
            case .journalGapsAcknowledged(let gaps):
                do {
                    try store?.acknowledgeJournalGaps(gaps, at: time.wall)
                } catch {
                    // What is left of the actions: only their log lines (`storeBroken`).
                    failStore(error)
                    continue
                }
                log.info("journal gaps acknowledged", ["gaps": String(gaps.count)])
            case .log(let level, let message, let fields):
                log.write(level, message, pairs: fields)
            case .stop:
                logStop()
                loop?.stop()
            }
        }
    }

    /// Runs a platform call off the reactor; its answer is given to the core back on the reactor.
    private func callPlatform(_ call: PlatformCall) {
        let platform = self.platform
        let kind: DetectionMetrics.PlatformCall = if case .evaluation = call { .evaluation } else { .settings }
        let bound = ReactorBound(self, on: reactor)
        Task { [reactor] in
            let started = MonotonicClock.now()
            let answer: PlatformAnswer =
                switch call {
                case .settings(let app): .settings(app: app, fetch: await platform.fetchSettings(applicationID: app))
                case .evaluation(let device, let candidate):
                    .verdict(
                        device: device, crashID: candidate.crashID, outcome: await platform.evaluation(of: candidate))
                case .commandSettings(let waiting, let app):
                    .commandSettings(waiting: waiting, fetch: await platform.fetchSettings(applicationID: app))
                }
            let seconds = MonotonicClock.now() - started
            reactor.post { _ in bound.value.platformAnswered(answer, kind: kind, seconds: seconds) }
        }
    }

    private func platformAnswered(_ answer: PlatformAnswer, kind: DetectionMetrics.PlatformCall, seconds: Double) {
        counters.called(kind, seconds: seconds, failed: answer.isFailure)
        guard core != nil else { return }
        perform(core.platformAnswered(answer, at: time, evicted: &evicted))
    }

    /// Stores a commit, then lets its replies and events go. A commit that cannot be stored stops the service
    /// rather than let out events or replies that a restart could not give again.
    private func store(_ commit: DetectionCommit) {
        guard let store else { return }
        do {
            let last = try store.commit(
                inputs: commit.inputs, events: commit.events, unapplied: commit.unapplied,
                at: commit.at)
            core.committed(lastInput: last)
        } catch {
            failStore(error)
            return
        }
        for (target, bytes) in commit.replies { send(target.frames, bytes) }
        if !commit.events.isEmpty { outbox?.itemsAdded() }
    }

    /// The store failed: nothing more is stored or let out, and the service stops (a restart re-runs from what is
    /// stored).
    private func failStore(_ error: any Error) {
        storeBroken = true
        store = nil
        perform(core.storeFailed("\(error)"))
        reactor.stop()
    }

    func send(_ prefix: [[UInt8]], _ bytes: [UInt8]) {
        do {
            if try control?.send(prefix + [bytes], dontWait: true) == false {
                log.warning("control client gone before its reply")
            }
        } catch {
            log.warning("control reply not sent", ["error": "\(error)"])
        }
    }

    private func logStop() {
        guard core != nil else { return }
        log.info(
            "stopping",
            [
                "records": String(core.counts.recordsRead),
                "events": String(core.counts.eventsByKind.values.reduce(0, +)),
                "devices": String(core.fleet.deviceCount), "evictions": String(evicted.evictions),
                "restores": String(evicted.restores),
                "devicesTickedAhead": String(core.counts.devicesTickedAhead),
                "outbox": String((try? store?.outboxCount()) ?? -1),
            ])
    }
}
