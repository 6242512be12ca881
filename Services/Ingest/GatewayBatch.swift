import RecordCodecs
import RoadSaveModel
import Wire
import ZeroMQ

/// One gateway message, read and validated (PROTOCOL §2 and §7): either answered at once (it cannot be read, or
/// nothing in it is accepted), or holding accepted records that must be stored before the acknowledgement goes out.
/// Pure: no sockets, no store, so the service decides about groups of them (and `roadsave-bench counts` measures one).
public struct GatewayBatch {
    /// The reply's routing frames: the gateway's identity, and the empty delimiter when the gateway sent one.
    public var replyPrefix: ArraySlice<[UInt8]>
    public var batchID: [UInt8]
    /// The content type of the batch, that of its acknowledgement.
    public var contentType: ContentType
    public var acknowledgement: Acknowledgement
    /// The accepted records, in batch order.
    public var records: [SensorRecord]
    /// Each accepted record's device's slot number, from `devices.admit` (nil without `devices`).
    public var slots: [Int]?
    /// A MessagePack body and where each accepted record is in it, so the journal stores the gateway's bytes as they
    /// came (nil for JSON, or when the body's elements could not be measured: the records are then encoded).
    public var encoded: GatewayBody?
    /// Why the batch could not be read at all (then `acknowledgement` says so, and `records` is empty).
    public var unreadable: String?
    /// The batch was refused whole, unread, for its gateway's rate limit (then `acknowledgement` says so).
    public var rateLimited = false
    /// The gateway's stream and watermark (the optional fourth frame): stored with the records, or alone when the
    /// batch has none (a gateway saying how far it has come).
    public var header: GatewayBatchHeader?
    /// Why the batch was refused whole, unread: its connection's key is no longer listed as it was at the handshake
    /// (then `acknowledgement` says so, field `key`).
    public var keyRefused: CurveKeyRefusal?

    /// The field of the rejection (at index -1) of a batch whose gateway key is no longer listed.
    static let keyField = "key"

    /// Reads a ROUTER message [identity, (empty delimiter,) batchID, contentType, body (, header)]. Records of applications not in
    /// `applications` are rejected; a batch of more than `maximumBatch` records is refused whole. With a CurveZMQ
    /// gateway `key`, records of applications the key is not listed for are rejected too (field `app`); a key the
    /// allow-list in force refuses has the batch refused whole, unread, before the rate limit (field `key`). Each valid
    /// record's device goes to `devices` (nil: no limit), asked once for the whole batch with its valid records (the
    /// slot numbers of those admitted, in order, and the indexes of those refused), which may refuse any (field
    /// `user`, with the reason it gives for the application).
    /// Before any of that, `rateLimit` (nil: no limit) is asked about the batch's record count (`recordCount`; 1 for
    /// a body that is not an array) and may refuse the batch whole with its acknowledgement (field `rate`).
    /// `identifiers`: the caller's cache of app and user strings (`MessagePack.decodeRecords`).
    public init(
        message: [[UInt8]], applications: Set<String>, maximumBatch: Int,
        key: Result<CurveAllowList.Entry, CurveKeyRefusal>? = nil,
        identifiers: IdentifierCache? = nil,
        devices: (admit: ([SensorRecord]) -> (slots: [Int], refused: [Int]), refusal: (String) -> String)? = nil,
        rateLimit: ((_ records: Int) -> Acknowledgement?)? = nil
    ) {
        let frames = GatewayFrames(message: message)
        replyPrefix = frames.replyPrefix
        batchID = frames.batchID
        contentType = .json
        acknowledgement = Acknowledgement(accepted: 0)
        records = []
        guard frames.isWellFormed else {
            refuse(
                "expected the frames [batchID, contentType, body] or [batchID, contentType, body, header], got \(frames.parts.count) frames"
            )
            return
        }
        guard let contentType = ContentType(frame: frames.contentType) else {
            let text = String(decoding: frames.contentType.prefix(100), as: UTF8.self)
            refuse("unsupported content type \"\(text)\"; use application/msgpack or application/json")
            return
        }
        self.contentType = contentType
        let entry: CurveAllowList.Entry?
        switch key {
        case nil:
            entry = nil
        case .success(let listed):
            entry = listed
        case .failure(let refusal):
            // Before the rate limit: a key no longer listed must not spend the bucket of the name's new key.
            keyRefused = refusal
            acknowledgement = .unreadable(field: Self.keyField, reason: refusal.message)
            return
        }
        if let frame = frames.header {
            do {
                header = try GatewayBatchHeader.decode(frame, contentType: contentType, identifiers: identifiers)
            } catch {
                refuse(field: error.field, error.reason)
                return
            }
        }
        // The rate limit first, on a count read without decoding: a flood is refused at the cost of a peek.
        if let rateLimit, let refusal = rateLimit(Self.recordCount(frames.body, contentType: contentType) ?? 1) {
            acknowledgement = refusal
            rateLimited = true
            header = nil
            return
        }
        // Each element is checked as it is decoded (a MessagePack body is read where it lies, each element's bytes
        // measured in the same pass, so the journal stores them as they came); validation is the same for both
        // content types (RecordDecoding), so the rejections read the same.
        var intake = Intake(applications: applications, key: entry)
        do {
            switch contentType {
            case .msgpack:
                try frames.body.withUnsafeBytes { buffer in
                    try MessagePack.forEachElement(
                        buffer, maximumCount: RecordBatch.maximumRecords, identifiers: identifiers ?? IdentifierCache()
                    ) { count in
                        intake.expect(count)
                    } _: { index, range, result in
                        intake.take(index, range, result)
                    }
                }
            case .json:
                let decoded = try RecordBatch.decodeBatch(frames.body, contentType: .json, identifiers: identifiers)
                intake.expect(decoded.records.count)
                for (index, result) in decoded.records { intake.take(index, nil, result) }
            }
        } catch {
            refuse("\(error)")
            return
        }
        guard intake.elements <= maximumBatch else {
            refuse("\(intake.elements) records; at most \(maximumBatch) a batch")
            return
        }
        // Admission last, once the whole batch has been read: a batch that cannot be read admits no device.
        if let devices, !intake.accepted.isEmpty {
            let (slots, refused) = devices.admit(intake.accepted)
            intake.refuse(refused) { devices.refusal($0) }
            self.slots = slots
        } else if devices != nil {
            slots = []
        }
        records = intake.accepted
        acknowledgement.rejected = intake.rejected
        acknowledgement.accepted = records.count
        // The journal stores the gateway's bytes: a body that could be read is its array and nothing after it (bytes
        // after it are refused), so the elements measured are all of it.
        if contentType == .msgpack, !records.isEmpty {
            encoded = GatewayBody(
                body: frames.body, ranges: intake.acceptedRanges, isWholeBody: records.count == intake.elements)
        }
    }

    /// What reading a batch's elements gathers, element by element: the records accepted (of applications the
    /// service and the gateway's key allow), where their bytes lie, and the rejections. A batch's records are mostly
    /// of one application: what was allowed for the record before is not asked again.
    private struct Intake {
        let applications: Set<String>
        let key: CurveAllowList.Entry?
        var accepted: [SensorRecord] = []
        var acceptedRanges: [Range<Int>] = []
        /// The batch index of each accepted record, kept only once a record has been rejected (until then it is its
        /// position): most batches reject none.
        var acceptedIndexes: [Int] = []
        var rejected: [Rejection] = []
        var elements = 0
        var allowedApplication: String?

        init(applications: Set<String>, key: CurveAllowList.Entry?) {
            self.applications = applications
            self.key = key
        }

        mutating func expect(_ count: Int) {
            elements = count
            accepted.reserveCapacity(count)
            acceptedRanges.reserveCapacity(count)
        }

        mutating func take(_ index: Int, _ range: Range<Int>?, _ result: Result<SensorRecord, RecordError>) {
            switch result {
            case .failure(let error):
                reject(Rejection(index: index, field: error.field, reason: error.reason))
            case .success(let record):
                if record.device.app != allowedApplication {
                    // The key's limit first, so a limited key learns nothing about other applications.
                    if let key, !key.allows(application: record.device.app) {
                        reject(
                            Rejection(
                                index: index, field: "app",
                                reason:
                                    "gateway key \"\(key.name)\" is not allowed to send records of this application"))
                        return
                    }
                    guard applications.contains(record.device.app) else {
                        reject(Rejection(index: index, field: "app", reason: "unknown application"))
                        return
                    }
                    allowedApplication = record.device.app
                }
                accepted.append(record)
                if !rejected.isEmpty { acceptedIndexes.append(index) }
                if let range { acceptedRanges.append(range) }
            }
        }

        private mutating func reject(_ rejection: Rejection) {
            if rejected.isEmpty { acceptedIndexes = Array(accepted.indices) }
            rejected.append(rejection)
        }

        /// The accepted records at `positions` (in order) were refused admission (field `user`, for the reason
        /// `refusal` gives for their application): they go, and the rejections are put back in the batch's order.
        /// Rare: an application at its device limit.
        mutating func refuse(_ positions: [Int], refusal: (String) -> String) {
            guard !positions.isEmpty else { return }
            let positionIsIndex = rejected.isEmpty
            for position in positions {
                rejected.append(
                    Rejection(
                        index: positionIsIndex ? position : acceptedIndexes[position], field: "user",
                        reason: refusal(accepted[position].device.app)))
            }
            let refused = Set(positions)
            accepted = accepted.indices.filter { !refused.contains($0) }.map { accepted[$0] }
            if !acceptedRanges.isEmpty {
                acceptedRanges = acceptedRanges.indices.filter { !refused.contains($0) }.map { acceptedRanges[$0] }
            }
            acceptedIndexes = []
            rejected.sort { $0.index < $1.index }
        }
    }

    /// The number of elements of the body's top-level array, read without decoding them (the MessagePack array
    /// header; for JSON a scan of brackets, strings and commas); nil when the body does not start as an array.
    static func recordCount(_ body: [UInt8], contentType: ContentType) -> Int? {
        switch contentType {
        case .msgpack:
            guard let first = body.first else { return nil }
            func bigEndian(_ count: Int) -> Int? {
                guard body.count > count else { return nil }
                return body[1...count].reduce(0) { $0 << 8 | Int($1) }
            }
            switch first {
            case 0x90...0x9f: return Int(first & 0x0f)
            case 0xdc: return bigEndian(2)
            case 0xdd: return bigEndian(4)
            default: return nil
            }
        case .json:
            var index = 0
            while index < body.count, [0x20, 0x09, 0x0a, 0x0d].contains(body[index]) { index += 1 }
            guard index < body.count, body[index] == UInt8(ascii: "[") else { return nil }
            var depth = 0
            var commas = 0
            var inString = false
            var escaped = false
            var sawElement = false
            for byte in body[index...] {
                if inString {
                    if escaped {
                        escaped = false
                    } else if byte == UInt8(ascii: "\\") {
                        escaped = true
                    } else if byte == UInt8(ascii: "\"") {
                        inString = false
                    }
                    continue
                }
                switch byte {
                case UInt8(ascii: "\""):
                    inString = true
                    sawElement = true
                case UInt8(ascii: "["), UInt8(ascii: "{"):
                    if depth == 1 { sawElement = true }
                    depth += 1
                case UInt8(ascii: "]"), UInt8(ascii: "}"):
                    depth -= 1
                    if depth == 0 { return sawElement ? commas + 1 : 0 }
                case UInt8(ascii: ","):
                    if depth == 1 { commas += 1 }
                case 0x20, 0x09, 0x0a, 0x0d:
                    break
                default:
                    if depth == 1 { sawElement = true }
                }
            }
            return nil
        }
    }

    private mutating func refuse(field: String = "(batch)", _ reason: String) {
        unreadable = field == "(batch)" ? reason : "\(field): \(reason)"
        acknowledgement = .unreadable(field: field, reason: reason)
        header = nil
    }

    /// The gateway's batchID as text, for the journal and the logs.
    public var batchText: String { String(decoding: batchID.prefix(Self.batchTextBytes), as: UTF8.self) }

    /// The most bytes of a batchID kept as text.
    public static let batchTextBytes = 200

    /// The acknowledgement's frames, addressed to the gateway (none for a message without a routing frame).
    public var reply: [[UInt8]] {
        var frames: [[UInt8]] = []
        frames.reserveCapacity(replyPrefix.count + 2) // one array made, not two
        appendReply(to: &frames)
        return frames
    }

    /// `reply`'s frames appended to `frames` (an array a server keeps for every acknowledgement).
    public func appendReply(to frames: inout [[UInt8]]) {
        guard !replyPrefix.isEmpty else { return }
        frames += replyPrefix
        frames.append(batchID)
        frames.append(acknowledgement.encode(as: contentType))
    }

    /// How long a gateway is asked to wait before sending again a batch the journal could not store.
    static let storeRetryAfterMs = 1000

    /// The store failed: nothing of this batch is kept, and the gateway is told so, with when to send it again (it
    /// keeps the batch; `roadsave send` sends it again after the pause).
    mutating func storeFailed(_ reason: String) {
        acknowledgement = .storeFailed(
            reason:
                "the journal could not store the batch (\(reason)); nothing of it was accepted, send it again later",
            retryAfterMs: Self.storeRetryAfterMs)
        records = []
        encoded = nil
        slots = nil
        header = nil
    }
}
