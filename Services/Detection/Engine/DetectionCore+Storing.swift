/// When the inputs, events and replies in hand are stored, and so may leave.
extension DetectionCore {
    // MARK: Storing

    /// Stores the inputs and events in hand in one transaction (one fsync), then lets the events and replies go.
    /// Inputs that gave nothing to send wait for the next commit (one with events, replies or records not applied,
    /// a checkpoint's, or `force`): until something leaves the process nothing depends on them, and a restart that
    /// lost them re-reads their records from the journal, so records that only moved devices along cost no fsync
    /// (and a crash's verdict is stored in the same transaction as the records that raised it). At most
    /// `deferredInputs` wait, and no longer than `deferredCommitDelay`. During recovery (`eventsOnly`) only events
    /// and records not applied are stored: the inputs that gave them are in the store already.
    mutating func commit(
        force: Bool = false, eventsOnly: Bool = false, at time: DetectionTime,
        into actions: inout [DetectionCoreAction]
    ) {
        if case .stopped = phase { return }
        if eventsOnly {
            guard !pendingEvents.isEmpty || !pendingUnapplied.isEmpty else { return }
            actions.append(
                .commit(
                    DetectionCommit(
                        inputs: [], events: pendingEvents, unapplied: pendingUnapplied,
                        replies: [], at: time.wall)))
            counts.unappliedKept += pendingUnapplied.count
            pendingEvents.removeAll()
            pendingUnapplied.removeAll()
            return
        }
        guard
            force || !pendingEvents.isEmpty || !pendingReplies.isEmpty || !pendingUnapplied.isEmpty
                || pendingInputs.count >= options.deferredInputs
        else {
            // Stored soon anyway, so the store shows how far detection has read within `deferredCommitDelay`.
            if deferredCommitAt == nil, !pendingInputs.isEmpty {
                deferredCommitAt = time.monotonic + options.deferredCommitDelay
            }
            return
        }
        deferredCommitAt = nil
        guard !pendingInputs.isEmpty || !pendingEvents.isEmpty || !pendingReplies.isEmpty || !pendingUnapplied.isEmpty
        else { return }
        actions.append(
            .commit(
                DetectionCommit(
                    inputs: pendingInputs, events: pendingEvents, unapplied: pendingUnapplied,
                    replies: pendingReplies, at: time.wall)))
        // The store numbers inputs one after the other: a checkpoint taken next (its order follows this commit's)
        // holds these, whatever the shell has told yet (`committed` says the same number).
        lastInput += Int64(pendingInputs.count)
        counts.unappliedKept += pendingUnapplied.count
        pendingInputs.removeAll(keepingCapacity: true)
        pendingEvents.removeAll(keepingCapacity: true)
        pendingUnapplied.removeAll()
        pendingReplies.removeAll()
    }
}
