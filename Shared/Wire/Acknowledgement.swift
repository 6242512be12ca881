import RecordCodecs

/// One record of a batch that was not accepted: its 0-based index in the batch (-1 when the batch as a whole could
/// not be read), the field at fault, and why.
public struct Rejection: Equatable, Sendable {
    public var index: Int
    public var field: String
    public var reason: String

    public init(index: Int, field: String, reason: String) {
        self.index = index
        self.field = field
        self.reason = reason
    }
}

/// The reply to a gateway batch (PROTOCOL §7), in the batch's content type:
/// `{"accepted": N, "rejected": [{"index": i, "field": "lat", "reason": "…"}]}` (members in that order), and, only
/// when the batch was refused whole for a reason that passes (the gateway's rate limit, or a journal that could not
/// store it), a third member `"retryAfterMs": M` (readers that do not know it ignore it, and acknowledgements without
/// it are the bytes they always were).
public struct Acknowledgement: Equatable, Sendable {
    public var accepted: Int
    public var rejected: [Rejection]
    /// Milliseconds after which the same batch may be sent again; set only with a `rate` or `store` refusal
    /// (`rateLimited`, `storeFailed`).
    public var retryAfterMs: Int?

    /// The field of the rejection (at index -1) of a batch refused whole for its gateway's rate limit.
    public static let rateField = "rate"
    /// The field of the rejection (at index -1) of a batch the journal could not store (a full disk, a lock held too
    /// long): nothing of it was kept, and the same batch should be sent again.
    public static let storeField = "store"

    public init(accepted: Int, rejected: [Rejection] = [], retryAfterMs: Int? = nil) {
        self.accepted = accepted
        self.rejected = rejected
        self.retryAfterMs = retryAfterMs
    }

    /// The answer to a batch refused whole, unread, because its gateway is over its rate limit: nothing accepted, one
    /// rejection at index -1 with field `rate`, and when to send it again. Not a verdict on the records.
    public static func rateLimited(reason: String, retryAfterMs: Int) -> Acknowledgement {
        refusedForNow(field: rateField, reason: reason, retryAfterMs: retryAfterMs)
    }

    /// The milliseconds to wait before sending the batch again when it was refused for the rate limit (a `rate`
    /// rejection at index -1); nil for every other acknowledgement, whose rejections are final.
    public var rateLimitRetryAfterMs: Int? { retryAfterMs(ifRefusedFor: [Self.rateField]) }

    /// The answer to a batch the journal could not store: nothing accepted, one rejection at index -1 with field
    /// `store`, and when to send it again. Not a verdict on the records.
    public static func storeFailed(reason: String, retryAfterMs: Int) -> Acknowledgement {
        refusedForNow(field: storeField, reason: reason, retryAfterMs: retryAfterMs)
    }

    /// The milliseconds to wait before sending the same batch again when it was refused whole for a reason that
    /// passes (a `rate` or `store` rejection at index -1); nil for every other acknowledgement, whose rejections are
    /// final.
    public var resendAfterMs: Int? { retryAfterMs(ifRefusedFor: [Self.rateField, Self.storeField]) }

    /// A batch refused whole for a reason that passes: nothing accepted, one rejection at index -1 with `field`, and
    /// when to send it again.
    private static func refusedForNow(field: String, reason: String, retryAfterMs: Int) -> Acknowledgement {
        Acknowledgement(
            accepted: 0, rejected: [Rejection(index: -1, field: field, reason: reason)],
            retryAfterMs: max(0, retryAfterMs))
    }

    /// `retryAfterMs` when the batch was refused whole (index -1) for one of `fields`, else nil.
    private func retryAfterMs(ifRefusedFor fields: Set<String>) -> Int? {
        guard let retryAfterMs, rejected.contains(where: { $0.index == -1 && fields.contains($0.field) }) else {
            return nil
        }
        return retryAfterMs
    }

    /// The answer to a batch that cannot be read at all: nothing accepted, one rejection at index -1.
    public static func unreadable(field: String = "(batch)", reason: String) -> Acknowledgement {
        Acknowledgement(accepted: 0, rejected: [Rejection(index: -1, field: field, reason: reason)])
    }

    /// `unreadable` with the decoding error's description as the reason.
    public static func unreadable(_ error: WireError) -> Acknowledgement {
        unreadable(reason: error.description)
    }

    /// The acknowledgement as a `JSONValue` (the same tree in both content types).
    public var value: JSONValue {
        var members: [(String, JSONValue)] = [
            ("accepted", .number(Double(accepted))),
            (
                "rejected",
                .array(
                    rejected.map { rejection in
                        .object([
                            ("index", .number(Double(rejection.index))),
                            ("field", .string(rejection.field)),
                            ("reason", .string(rejection.reason)),
                        ])
                    })
            ),
        ]
        if let retryAfterMs { members.append(("retryAfterMs", .number(Double(retryAfterMs)))) }
        return .object(members)
    }

    public func encode(as contentType: ContentType) -> [UInt8] {
        switch contentType {
        case .json: return JSONText.bytes(value)
        case .msgpack:
            // The answer to nearly every batch, all of it accepted: the bytes `value` packs to, without building it.
            guard rejected.isEmpty, retryAfterMs == nil else { return MessagePack.encode(value) }
            return MessagePack.withPacker(capacity: 32) { packer in
                packer.packMapHeader(2)
                packer.pack("accepted")
                packer.packNumber(Double(accepted))
                packer.pack("rejected")
                packer.packArrayHeader(0)
            }
        }
    }

    /// Reads an acknowledgement (with `retryAfterMs` when present); members other than those of PROTOCOL §7 are ignored, and a missing or mistyped one
    /// is an `unexpectedShape` error naming it.
    public static func decode(_ bytes: some Collection<UInt8>, contentType: ContentType) throws(WireError)
        -> Acknowledgement
    {
        let document: JSONValue =
            switch contentType {
            case .json: try JSONText.decode(bytes)
            case .msgpack: try MessagePack.decode(bytes)
            }
        return try Acknowledgement(value: document)
    }

    public init(value: JSONValue) throws(WireError) {
        guard case .object = value else {
            throw WireError(.unexpectedShape, "an acknowledgement must be an object, found \(value.typeName)")
        }
        accepted = try Self.integer(value["accepted"], path: "accepted", minimum: 0)
        guard let list = value["rejected"] else {
            throw WireError(.unexpectedShape, "missing", path: "rejected")
        }
        guard case .array(let entries) = list else {
            throw WireError(.unexpectedShape, "expected an array, found \(list.typeName)", path: "rejected")
        }
        var rejected: [Rejection] = []
        rejected.reserveCapacity(entries.count)
        for (position, entry) in entries.enumerated() {
            let path = "rejected[\(position)]"
            guard case .object = entry else {
                throw WireError(.unexpectedShape, "expected an object, found \(entry.typeName)", path: path)
            }
            rejected.append(
                Rejection(
                    index: try Self.integer(entry["index"], path: path + ".index", minimum: -1),
                    field: try Self.string(entry["field"], path: path + ".field"),
                    reason: try Self.string(entry["reason"], path: path + ".reason")))
        }
        self.rejected = rejected
        if let member = value["retryAfterMs"] {
            retryAfterMs = try Self.integer(member, path: "retryAfterMs", minimum: 0)
        } else {
            retryAfterMs = nil
        }
    }

    private static func integer(_ value: JSONValue?, path: String, minimum: Int) throws(WireError) -> Int {
        guard let value else { throw WireError(.unexpectedShape, "missing", path: path) }
        guard case .number(let number) = value, number == number.rounded(), number >= Double(minimum),
            number <= 9_007_199_254_740_992
        else {
            throw WireError(.unexpectedShape, "expected an integer ≥ \(minimum), found \(describe(value))", path: path)
        }
        return Int(number)
    }

    private static func string(_ value: JSONValue?, path: String) throws(WireError) -> String {
        guard let value else { throw WireError(.unexpectedShape, "missing", path: path) }
        guard case .string(let text) = value else {
            throw WireError(.unexpectedShape, "expected a string, found \(value.typeName)", path: path)
        }
        return text
    }

    private static func describe(_ value: JSONValue) -> String {
        if case .number(let number) = value { return JSONText.number(number) }
        return value.typeName
    }
}
