import RecordCodecs

/// A control command that concerns the detection shard itself rather than an application's devices
/// (`{"command": "acknowledgeJournalGaps"}`): it names no application, so it is neither a `ControlRequest` nor
/// stored as an input (what it changes is kept in the store at once). Only an operator key listed for every
/// application may send one (`ControlAccess`).
public enum OperatorCommand: String, Sendable, Equatable, CaseIterable {
    /// The journal gaps found so far are known to the operator: they no longer hold readiness.
    case acknowledgeJournalGaps

    /// The operator command `bytes` holds; nil when it holds something else (an application's command, or what
    /// `ControlRequest` will refuse). Throws when it is an operator command with members it does not take.
    public static func parse(_ bytes: [UInt8]) throws(ControlRequest.Invalid) -> OperatorCommand? {
        guard let value = try? JSONParser.parse(bytes), case .object = value,
            case .string(let name)? = value["command"],
            let command = OperatorCommand(rawValue: name)
        else { return nil }
        for key in ["app", "user"] where value[key] != nil && value[key] != .null {
            throw ControlRequest.Invalid(
                message: "\(key): \(name) concerns every application of the shard; give no \(key)")
        }
        return command
    }

    /// The reply: `{"ok": true, "acknowledged": N, "gaps": [{journal, endpoint, shard, position, deletedThrough}]}`.
    public static func acknowledgedReply(_ gaps: [JournalGap]) -> [UInt8] {
        var writer = JSONObjectWriter()
        writer.add("ok", true)
        writer.add("acknowledged", gaps.count)
        let items = gaps.map { gap -> String in
            var item = JSONObjectWriter()
            item.add("journal", gap.journal)
            item.add("endpoint", gap.endpoint)
            item.add("shard", gap.shard)
            item.add("position", Int(gap.position))
            item.add("deletedThrough", Int(gap.deletedThrough))
            return item.finish()
        }
        writer.add("gaps", raw: "[" + items.joined(separator: ",") + "]")
        return Array(writer.finish().utf8)
    }
}
