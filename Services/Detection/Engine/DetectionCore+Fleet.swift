import Logging
import RecordCodecs
import RoadSaveModel

/// Around the fleet: devices out of memory brought back before an input names them; the fleet's actions passed on.
extension DetectionCore {
    // MARK: Devices out of memory

    /// Puts a device that left memory back into the fleet before an input names it. A store that cannot be read
    /// stops the service (as a failed commit does): going on would start the device afresh.
    mutating func bringBack(
        _ device: DeviceID, evicted: inout some EvictedDeviceStore,
        into actions: inout [DetectionCoreAction]
    ) {
        guard !evicted.isEmpty, !fleet.isResident(device) else { return }
        do {
            if let state = try evicted.takeBack(device) { fleet.restore(state) }
        } catch {
            actions += storeFailed("\(error)")
        }
    }

    /// A command for one device brings it back; one for every device of an application brings them all back.
    mutating func bringBack(
        for request: ControlRequest, evicted: inout some EvictedDeviceStore,
        into actions: inout [DetectionCoreAction]
    ) {
        guard !evicted.isEmpty else { return }
        if let user = request.user {
            bringBack(DeviceID(app: request.app, user: user), evicted: &evicted, into: &actions)
            return
        }
        do {
            for state in try evicted.takeBack(app: request.app) where !fleet.isResident(state.device) {
                fleet.restore(state)
            }
        } catch {
            actions += storeFailed("\(error)")
        }
    }

    // MARK: The fleet's actions

    mutating func perform(_ fleetActions: [FleetAction], into actions: inout [DetectionCoreAction]) {
        for action in fleetActions {
            switch action {
            case .emit(let event):
                counts.eventsByKind[event.name, default: 0] += 1
                pendingEvents.append(event)
                actions.append(
                    .log(
                        .info, "event",
                        [
                            ("event", event.name), ("device", event.device.description),
                            ("eventID", event.eventID),
                        ]))
            case .fetchSettings(let app):
                guard case .live = phase else { continue }
                call(.settings(app: app), into: &actions)
            case .evaluateCrash(let device, let candidate):
                guard case .live = phase else { continue }
                call(.evaluation(device: device, candidate: candidate), into: &actions)
            case .crashDismissed(let device, let candidate, let reason):
                counts.dismissalsByReason[reason.rawValue, default: 0] += 1
                actions.append(
                    .log(
                        .info, "suspected crash dismissed",
                        [
                            ("device", device.description), ("crashID", candidate.crashID),
                            ("at", ISO8601.string(fromSeconds: candidate.time)), ("reason", reason.rawValue),
                            ("peakG", JSONObjectWriter.number(candidate.peakG, decimals: 1)),
                        ]))
            case .recordRejected(let record, let reason):
                if case .duplicate = reason {
                    // A duplicate is a record already taken: nothing of it is lost (but a run of them far behind is
                    // said).
                    let appliedUpTo = fleet.deviceState(record.device)?.ordering.released
                    for line in unappliedLog.duplicate(record, appliedUpTo: appliedUpTo) {
                        actions.append(.log(line.level, line.message, line.fields))
                    }
                    continue
                }
                pendingUnapplied.append(UnappliedRecord(record: record, reason: reason))
                for line in unappliedLog.noted(record, reason, now: clock.monotonic) {
                    actions.append(.log(line.level, line.message, line.fields))
                }
            case .deviceNotMonitored(let device, let error):
                actions.append(
                    .log(
                        .error, "device not monitored",
                        [("device", device.description), ("error", error.code), ("reason", error.description)]))
            case .watermarkHoldExpired(let stream, let stillSince):
                let gateway = Self.gatewayName(ofStream: stream) ?? stream
                guard stalledGatewaysWarned.insert(gateway).inserted else { continue }
                actions.append(
                    .log(
                        .warning,
                        "a gateway's watermark has stood still too long: its devices go by the clock until it moves (records it delivers later may be too late)",
                        [
                            ("gateway", gateway), ("stillSince", ISO8601.string(fromSeconds: stillSince)),
                            ("hold", JSONObjectWriter.number(options.fleet.watermarkHold, decimals: 1)),
                        ]))
            }
        }
    }

    mutating func call(_ call: PlatformCall, into actions: inout [DetectionCoreAction]) {
        platformCallsInFlight += 1
        actions.append(.callPlatform(call))
    }
}
