import DetectionEngine
import Logging
import RoadSaveModel
import Wire
import ZeroMQ

/// Inputs to the core: journals' replies decoded, control and operator commands read and checked.
extension DetectionServing {
    // MARK: Inputs to the core

    func journalReplied(_ index: Int, _ header: FeedReplyHeader, _ items: FeedItems) {
        guard core != nil else { return }
        let chunks = replyDecoder.chunks(items)
        perform(core.journalReplied(index, JournalAnswer(header), chunks: chunks, at: time, evicted: &evicted))
    }

    func receiveCommands(_ socket: ZMQSocket) {
        socket.drain(limit: 1000, failed: { log.error("control socket failed", ["error": "\($0)"]) }) { frames in
            // [identity, (empty delimiter from REQ,) body]
            guard frames.count >= 2, let body = frames.last else { return true }
            // The key's entry in force now: one removed or replaced since the handshake is refused from its next
            // command. The audit names the key as the allow-list in force does; a key it refuses, as it was admitted.
            let peer = socket.lastPeer
            let entry = zap?.entry(for: peer, role: .operator)
            let key = (try? entry?.get())?.name ?? peer?.name
            let target = ControlTarget(frames: Array(frames.dropLast()), key: zap == nil ? nil : key ?? "?")
            let request: ControlRequest
            do throws(ControlRequest.Invalid) {
                if let command = try OperatorCommand.parse(body) {
                    operatorCommandArrived(command, target: target, key: entry)
                    return true
                }
                request = try ControlRequest(json: body)
            } catch {
                refuse(target, nil, code: "badRequest", message: error.message)
                return true
            }
            if let refusal = ControlAccess.refusal(of: request, key: entry) {
                refuse(target, request, code: refusal.code, message: refusal.message)
                return true
            }
            guard core != nil else { return true }
            let command = DetectionCore.ControlCommand(
                target: target, request: request,
                text: String(decoding: body, as: UTF8.self))
            perform(core.commandArrived(command, at: time, evicted: &evicted))
            return true
        }
    }

    /// An operator command (`OperatorCommand`): only for a key listed for every application.
    private func operatorCommandArrived(
        _ command: OperatorCommand, target: ControlTarget,
        key: Result<CurveAllowList.Entry, CurveKeyRefusal>?
    ) {
        if let refusal = ControlAccess.refusal(of: command, key: key) {
            log.write(
                .warning, "control command refused",
                pairs: [
                    ("key", target.key ?? "-"), ("command", command.rawValue), ("app", "*"), ("user", "*"),
                    ("result", refusal.code),
                ])
            send(target.frames, ControlReply.failure(refusal.code, refusal.message))
            return
        }
        guard core != nil else { return }
        perform(core.operatorCommandArrived(command, from: target, at: time))
    }

    /// A command refused before the core sees it (unreadable, or not this operator key's), with its audit line.
    private func refuse(_ target: ControlTarget, _ request: ControlRequest?, code: String, message: String) {
        log.write(
            .warning, "control command refused", pairs: DetectionCore.audit(request, key: target.key, result: code))
        send(target.frames, ControlReply.failure(code, message))
    }
}
