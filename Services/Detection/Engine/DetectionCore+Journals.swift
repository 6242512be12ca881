import Logging
import RoadSaveModel

/// A journal's reply and the passing of time: what is read next, gaps, and when the clock decides for devices.
extension DetectionCore {
    // MARK: Journals and the clock

    /// Journal `index` answered a fetch, with these chunks (decoded by the shell, in the reply's order).
    public mutating func journalReplied(
        _ index: Int, _ answer: JournalAnswer, chunks: [JournalChunkRecords],
        at time: DetectionTime,
        evicted: inout some EvictedDeviceStore
    ) -> [DetectionCoreAction] {
        clock = time
        var actions: [DetectionCoreAction] = []
        if case .stopped = phase { return actions }
        if case .stopping = phase { return actions }
        if case .answersAgain(let unanswered) = journals[index].replied(answer, at: time.monotonic) {
            actions.append(
                .log(
                    .info, "the journal answers again",
                    [("endpoint", journals[index].endpoint), ("silentSeconds", seconds(unanswered))]))
        }
        if let error = answer.error {
            actions.append(
                .log(.warning, "journal refused a request", [("endpoint", journals[index].endpoint), ("error", error)]))
            journals[index].retryAt = time.monotonic + 1
            return actions
        }
        guard journals[index].feed == answer.feed else {
            // First contact (or the endpoint now serves another journal): continue from what the checkpoint says.
            if let previous = journals[index].feed {
                actions.append(
                    .log(
                        .warning, "the journal at an endpoint changed",
                        [("endpoint", journals[index].endpoint), ("was", previous), ("now", answer.feed)]))
            }
            journals[index].adopt(
                feed: answer.feed, position: positionAfterRecovery(of: answer.feed),
                checkpointed: checkpointPositions[answer.feed] ?? 0)
            if case .recovering = phase {
                continueRecovery(at: time, evicted: &evicted, into: &actions)
            } else if case .live = phase {
                actions.append(.fetch(journal: index, journals[index].next()))
            }
            return actions
        }
        noteGap(index, answer, into: &actions)
        if case .recovering(var queue, true) = phase, case .records(let feed, _, let to, let now) = queue.first,
            feed == answer.feed
        {
            queue.removeFirst()
            phase = .recovering(queue: queue, waiting: false)
            counts.recoveredInputs += 1
            apply(chunks, feed: answer.feed, now: now, evicted: &evicted, into: &actions)
            journals[index].position = to
            continueRecovery(at: time, evicted: &evicted, into: &actions)
            return actions
        }
        guard case .live = phase else { return actions }
        journals[index].noteEnd(answer, items: chunks.count)
        if journals[index].unansweredBeforeReply > options.journalHeardWithin {
            let seconds = (journals[index].unansweredBeforeReply * 10).rounded() / 10
            resumeClock(
                "the journal at \(journals[index].endpoint) answered after \(seconds) s", at: time, into: &actions)
        }
        if journalsCaughtUp { counts.caughtUpAt = time.monotonic }
        if !reportedCaughtUp, journalsCaughtUp {
            reportedCaughtUp = true
            actions.append(
                .log(
                    .info, "caught up with the journals",
                    [("seconds", seconds(time.monotonic - counts.startedAt)), ("records", String(counts.recordsRead))]))
        }
        let after = journals[index].position
        journals[index].position = answer.to
        // The next request goes out before this reply is worked through, so the journal's answer overlaps the work.
        actions.append(.fetch(journal: index, journals[index].next()))
        guard !chunks.isEmpty else { return actions }
        counts.positionsRead += answer.to - after
        pendingInputs.append(.records(feed: answer.feed, after: after, to: answer.to, now: time.wall))
        apply(chunks, feed: answer.feed, now: time.wall, evicted: &evicted, into: &actions)
        commit(at: time, into: &actions)
        return actions
    }

    /// Time passed (the shell calls this about ten times a second): refused requests are asked again, inputs that
    /// waited are stored, silent devices' timers may fire, a checkpoint may be due, a stop may be done.
    public mutating func tick(at time: DetectionTime, evicted: inout some EvictedDeviceStore) -> [DetectionCoreAction] {
        clock = time
        var actions: [DetectionCoreAction] = []
        for line in unappliedLog.roll(now: time.monotonic) {
            actions.append(.log(line.level, line.message, line.fields))
        }
        noteSilentJournals(at: time, into: &actions)
        switch phase {
        case .stopped:
            return actions
        case .stopping(let deadline, let checkpointLast):
            finishStopping(deadline: deadline, checkpointLast: checkpointLast, at: time, into: &actions)
            return actions
        case .recovering:
            retryRefused(at: time, into: &actions)
            return actions
        case .live:
            break
        }
        retryRefused(at: time, into: &actions)
        if let deferredCommitAt, time.monotonic >= deferredCommitAt { commit(force: true, at: time, into: &actions) }
        clockTick(at: time, into: &actions)
        if time.monotonic - lastCheckpointAt >= options.checkpointInterval {
            lastCheckpointAt = time.monotonic
            checkpoint(at: time, into: &actions)
        }
        return actions
    }

    /// A journal that has just fallen silent is said once (it is not ready, and its lag grows, until it answers).
    private mutating func noteSilentJournals(at time: DetectionTime, into actions: inout [DetectionCoreAction]) {
        if case .stopped = phase { return }
        for index in journals.indices {
            guard case .fellSilent(let unanswered) = journals[index].check(at: time.monotonic) else { continue }
            actions.append(
                .log(
                    .warning,
                    "no answer from the journal: ingest or the link to it is down; its gateways' watermarks are held until it answers",
                    [
                        ("endpoint", journals[index].endpoint), ("silentSeconds", seconds(unanswered)),
                        ("limit", seconds(options.journalSilenceLimit)),
                    ]))
        }
    }

    /// Journals that refused a request are asked again a second later: who they are, the range a re-run waits
    /// for, or what follows.
    private mutating func retryRefused(at time: DetectionTime, into actions: inout [DetectionCoreAction]) {
        for index in journals.indices {
            guard let retryAt = journals[index].retryAt, time.monotonic >= retryAt else { continue }
            journals[index].retryAt = nil
            if journals[index].feed == nil {
                actions.append(.fetch(journal: index, journals[index].greeting()))
            } else if case .recovering(let queue, true) = phase,
                case .records(let feed, let after, let to, _) = queue.first,
                feed == journals[index].feed
            {
                actions.append(.fetch(journal: index, journals[index].range(after: after, through: to)))
            } else if case .live = phase {
                actions.append(.fetch(journal: index, journals[index].next()))
            }
        }
    }

    /// A reply that says records after the position asked from were deleted before they were read: a gap, said
    /// once (the shell logs it, stores it, and holds readiness until an operator acknowledges it). Reading goes on
    /// with what remains: the devices of today matter more than what is lost. A known hole is not said again,
    /// unless more of it was deleted since (detection still reads from the same position).
    private mutating func noteGap(_ index: Int, _ answer: JournalAnswer, into actions: inout [DetectionCoreAction]) {
        guard let deleted = answer.deletedThrough, deleted > answer.after else { return }
        if let known = journalGaps.firstIndex(where: { $0.isSameHole(journal: answer.feed, position: answer.after) }) {
            guard journalGaps[known].deletedThrough < deleted else { return }
            journalGaps[known].deletedThrough = deleted
            journalGaps[known].acknowledged = false
            actions.append(.journalGap(journalGaps[known]))
            return
        }
        let gap = JournalGap(
            journal: answer.feed, endpoint: journals[index].endpoint, shard: options.shard,
            position: answer.after, deletedThrough: deleted)
        journalGaps.append(gap)
        counts.journalGapsFound += 1
        actions.append(.journalGap(gap))
    }

    /// A reply's chunks, each chunk's records and then its gateway's watermark.
    private mutating func apply(
        _ chunks: [JournalChunkRecords], feed: String, now: Double,
        evicted: inout some EvictedDeviceStore, into actions: inout [DetectionCoreAction]
    ) {
        for chunk in chunks {
            let stream = chunk.gateway.map { streamName(feed: feed, shard: chunk.shard, gateway: $0) }
            for record in chunk.records {
                counts.recordsRead += 1
                if !evicted.isEmpty { bringBack(record.device, evicted: &evicted, into: &actions) }
                perform(fleet.receive(record, from: stream, now: now), into: &actions)
            }
            if let stream, let gateway = chunk.gateway, let watermark = chunk.watermark,
                fleet.watermarkRead(stream: stream, watermark: watermark, now: now), !stalledGatewaysWarned.isEmpty
            {
                stalledGatewaysWarned.remove(Self.gatewayName(feed: feed, gateway: gateway))
            }
        }
    }

    /// `streamName(feed:shard:gateway:)`, kept per shard: a reply's chunks name the same few streams again and again,
    /// and the name would otherwise be made for each.
    private mutating func streamName(feed: String, shard: Int, gateway: String) -> String {
        if let known = streamNames[shard], known.gateway == gateway, known.feed == feed { return known.name }
        let name = Self.streamName(feed: feed, shard: shard, gateway: gateway)
        streamNames[shard] = (feed, gateway, name)
        return name
    }

    /// Detection hears its journals again (it started, or a journal answers after an outage): the time it could
    /// not is not the devices' silence (`DeviceFleet.resumeClock`). Stored like any input, so that a re-run measures
    /// silence as this run did.
    mutating func resumeClock(
        _ reason: String, at time: DetectionTime, into actions: inout [DetectionCoreAction]
    ) {
        guard fleet.deviceCount > 0 else { return }
        actions.append(.log(.info, "devices' quiet time counts from now", [("reason", reason)]))
        fleet.resumeClock(now: time.wall)
        pendingInputs.append(.resumed(now: time.wall))
        commit(at: time, into: &actions)
    }

    /// Clock-driven decisions, only while every journal has been read to its end and still answers: while records
    /// wait unread, or cannot reach detection, a device is not silent. A journal that stopped answering is waited
    /// for `silentJournalGrace` seconds, then the clock runs on without it for the devices of gateways without
    /// watermarks; a gateway's watermark that stands still is released by the clock only while its journal is
    /// heard (the time detection cannot hear a journal is not its gateways' standing still), until the journal has
    /// been silent for `journalSilenceLimit`: then it is taken as gone, and the clock decides for every device (a
    /// dead ingest must not hold a crash decision for ever). When a journal answers again, quiet time and the
    /// watermarks' hold count from then (`resumeClock`).
    ///
    /// While a journal is behind, devices due (a crash to decide, a trip to end) are not kept waiting for the whole
    /// backlog: each request asks the journals where those devices' records end (`JournalFetch.watch`), and the
    /// devices every journal has already given all of are ticked alone (`deviceTick`). Devices of gateways' streams
    /// go by their watermarks, which hold however far behind detection is, so they are served either way.
    private mutating func clockTick(at time: DetectionTime, into actions: inout [DetectionCoreAction]) {
        let monotonic = time.monotonic
        let heardWithin = options.journalHeardWithin
        let grace = options.silentJournalGrace
        let limit = options.journalSilenceLimit
        func heard(_ journal: JournalLink) -> Bool { monotonic - journal.lastReply < heardWithin }
        func given(_ journal: JournalLink) -> Bool { monotonic - journal.lastReply > grace }
        func gone(_ journal: JournalLink) -> Bool { monotonic - journal.lastReply > limit }
        let readAll = journals.allSatisfy { ($0.caughtUp && heard($0)) || gone($0) }
        guard readAll else {
            // A stream whose watermark stands still goes by the clock only if its journal is heard and read to its
            // end (one behind may hold the watermark's next move), or gone.
            let heardFeeds = Set(journals.filter { ($0.caughtUp && heard($0)) || gone($0) }.compactMap(\.feed))
            let due = fleet.dueDevices(now: time.wall, limit: Self.maximumWatched) { stream in
                Self.feed(ofStream: stream).map { heardFeeds.contains($0) } ?? false
            }
            let read = due.filter { device in
                journals.allSatisfy { journal in
                    (journal.caughtUp && heard(journal)) || given(journal)
                        || (heard(journal) && journal.hasGivenAll(of: device))
                }
            }
            for index in journals.indices { journals[index].watch = due }
            let tickActions = fleet.tick(now: time.wall, only: read)
            guard fleet.lastTickChangedState || !tickActions.isEmpty else { return }
            counts.devicesTickedAhead += read.count
            pendingInputs.append(.deviceTick(now: time.wall, devices: read))
            perform(tickActions, into: &actions)
            commit(at: time, into: &actions)
            return
        }
        for index in journals.indices { journals[index].watch = [] }
        let tickActions = fleet.tick(now: time.wall)
        // A tick that changed nothing need not be stored: the re-run would do nothing with it either.
        guard fleet.lastTickChangedState || !tickActions.isEmpty else { return }
        pendingInputs.append(.tick(now: time.wall))
        perform(tickActions, into: &actions)
        commit(at: time, into: &actions)
    }

    /// The most devices asked about in one request (the feed protocol's limit).
    public static let maximumWatched = 1024

    /// Where reading of `feed` goes on after the re-run: its last records input, else its checkpoint position.
    private func positionAfterRecovery(of feed: String) -> UInt64 {
        var position = checkpointPositions[feed] ?? 0
        if case .recovering(let queue, _) = phase {
            for case .records(let inputFeed, _, let to, _) in queue where inputFeed == feed {
                position = max(position, to)
            }
        }
        return position
    }
}
