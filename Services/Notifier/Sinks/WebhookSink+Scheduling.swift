import Foundation
import Logging
import RecordCodecs
import RoadSaveModel

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Accepting and scheduling: which event goes on the wire when (only a device's head, devices taking turns, at most
/// `maximumConcurrentDeliveries` requests at once), and what an attempt's outcome does to its device's queue:
/// delivered, dropped by the receiver, or retried after a backoff.
extension WebhookSink {
    public func deliver(_ event: RoadSaveEvent) async {
        accept(event)
    }

    private func accept(_ event: RoadSaveEvent) {
        let eventID = event.eventID
        if closing {
            // Not settled: the caller still has it.
            counters.rejectedAfterShutdown += 1
            log.error(
                "event refused: the sink is shutting down",
                ["sink": name, "event": event.name, "eventID": eventID, "device": event.device.description])
            return
        }
        if heldIDs.contains(eventID) {
            counters.duplicatesIgnored += 1
            log.debug("duplicate event ignored: already queued", ["sink": name, "eventID": eventID])
            return
        }
        let body = Array(event.json(options.format).utf8)
        var request = URLRequest(
            url: options.url, cachePolicy: .reloadIgnoringLocalCacheData,
            timeoutInterval: Self.libraryTimeout(options.timeout))
        request.httpMethod = "POST"
        for (field, value) in options.extraHeaders { request.setValue(value, forHTTPHeaderField: field) }
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue(
            WebhookSignature.sign(body: body, secret: options.secret),
            forHTTPHeaderField: options.signatureHeader)
        request.setValue(event.name, forHTTPHeaderField: "X-RoadSave-Event")
        request.setValue(eventID, forHTTPHeaderField: "X-RoadSave-Event-ID")
        request.setValue("RoadSave-Notifier/1", forHTTPHeaderField: "User-Agent")
        request.httpBody = Data(body)

        nextSequence += 1
        let item = Item(sequence: nextSequence, event: event, eventID: eventID, request: request)
        devices[event.device, default: DeviceQueue()].items.append(item)
        held += 1
        heldIDs.insert(eventID)
        makeReady(event.device)
        pump()
    }

    /// Bookkeeping for an event that leaves the queue (delivered or dropped by the receiver).
    private func forget(_ item: Item) {
        held -= 1
        heldIDs.remove(item.eventID)
    }

    // MARK: Scheduling

    /// Puts the device on the ready list if its head can be sent now; forgets a device with nothing left.
    private func makeReady(_ device: DeviceID) {
        guard var queue = devices[device] else { return }
        if queue.items.isEmpty && queue.phase == .idle {
            queue.timer?.task.cancel()
            devices[device] = nil
            return
        }
        if queue.phase == .idle && !queue.isReady && !queue.items.isEmpty {
            queue.isReady = true
            ready.append(device)
            devices[device] = queue
        }
    }

    /// Starts requests for ready devices while slots are free.
    private func pump() {
        while !stopped && inFlight < options.maximumConcurrentDeliveries, let device = ready.popFirst() {
            guard var queue = devices[device] else { continue }
            queue.isReady = false
            guard queue.phase == .idle, var item = queue.items.first else {
                devices[device] = queue
                makeReady(device)
                continue
            }
            item.attempts += 1
            queue.items[0] = item
            queue.phase = .inFlight
            devices[device] = queue
            inFlight += 1
            nextToken += 1
            let token = nextToken
            let session = session
            let request = item.request
            let timeout = options.timeout
            let sequence = item.sequence
            let outcome = FirstOutcome()
            // Never cancelled (see `FirstOutcome`): it ends with the request, bounded by URLSession's own timeout.
            network[token] = Task.detached {
                outcome.offer(await Self.send(session: session, request: request))
                await self.networkEnded(token: token)
            }
            attempts[token] = outcome
            Task {
                let timer = Task.detached {
                    try? await Task.sleep(for: .seconds(timeout))
                    if !Task.isCancelled {
                        outcome.offer(.retry(reason: "timed out after \(timeout)s", retryAfter: nil))
                    }
                }
                let result = await outcome.wait()
                timer.cancel()
                self.finished(device: device, sequence: sequence, token: token, outcome: result)
            }
        }
    }

    private func networkEnded(token: UInt64) {
        network[token] = nil
    }

    private func finished(device: DeviceID, sequence: UInt64, token: UInt64, outcome: Outcome) {
        attempts[token] = nil
        guard !stopped else { return }
        inFlight -= 1
        defer {
            makeReady(device)
            pump()
            checkDrained()
        }
        guard var queue = devices[device], let item = queue.items.first, item.sequence == sequence else {
            // Cannot happen: only a settled head leaves its queue.
            log.error("internal: finished request has no queued event", ["sink": name, "device": device.description])
            return
        }
        queue.phase = .idle
        switch outcome {
        case .delivered(let status):
            _ = queue.items.popFirst()
            devices[device] = queue
            forget(item)
            counters.delivered += 1
            onSettled?(item.eventID, .delivered)
            log.debug(
                "event delivered",
                [
                    "sink": name, "event": item.event.name, "eventID": item.eventID,
                    "status": String(status), "attempts": String(item.attempts),
                ])

        case .permanent(let reason):
            _ = queue.items.popFirst()
            devices[device] = queue
            forget(item)
            counters.failed += 1
            onSettled?(item.eventID, .droppedByReceiver(reason: reason))
            log.error(
                "event dropped by the receiver: permanent answer, not retried",
                [
                    "sink": name, "reason": reason, "event": item.event.name, "eventID": item.eventID,
                    "device": device.description, "attempts": String(item.attempts),
                ])

        case .retry(let reason, let retryAfter):
            // Retried without end: only the caller decides to stop (by shutting the sink down).
            let delay = backoff(attempts: item.attempts, retryAfter: retryAfter)
            nextToken += 1
            let timerToken = nextToken
            queue.phase = .backingOff
            queue.timer = (
                timerToken,
                Task {
                    try? await Task.sleep(for: .seconds(delay))
                    self.backoffEnded(device: device, token: timerToken)
                }
            )
            devices[device] = queue
            counters.retried += 1
            // A warning for the first failure and every tenth; the others at info, so a long outage doesn't flood.
            log.write(
                item.attempts == 1 || item.attempts % 10 == 0 ? .warning : .info, "delivery failed, will retry",
                [
                    "sink": name, "reason": reason, "event": item.event.name, "eventID": item.eventID,
                    "device": device.description, "attempts": String(item.attempts),
                    "retryIn": String(format: "%.2fs", delay),
                ])
        }
    }

    private func backoffEnded(device: DeviceID, token: UInt64) {
        guard !stopped, var queue = devices[device], queue.timer?.token == token else { return }
        queue.timer = nil
        queue.phase = .idle
        devices[device] = queue
        makeReady(device)
        pump()
    }

    /// Exponential backoff with up to 10 % jitter, or the server's `Retry-After` when that is longer.
    private func backoff(attempts: Int, retryAfter: Double?) -> Double {
        let exponent = Double(min(max(attempts - 1, 0), 40))
        var delay = min(options.maximumBackoff, options.initialBackoff * pow(2, exponent))
        delay += delay * Double.random(in: 0...0.1)
        if let retryAfter, retryAfter.isFinite {
            delay = max(delay, min(max(retryAfter, 0), options.maximumRetryAfter))
        }
        return delay
    }
}
