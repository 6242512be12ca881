import RecordCodecs
import RoadSaveModel

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The content types of a gateway batch (PROTOCOL §7), as they appear in the batch's `contentType` frame.
public enum ContentType: String, Sendable, CaseIterable {
    case json = "application/json"
    case msgpack = "application/msgpack"

    /// Reads a content type as people and HTTP stacks write it: case is ignored, parameters (`; charset=utf-8`) and
    /// surrounding white space are dropped, and the unofficial MessagePack names `application/x-msgpack` and
    /// `application/vnd.msgpack` are taken as `application/msgpack`. `nil` for anything else.
    public init?(parsing text: String) {
        let essence = text.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let name = essence.trimmingASCIIWhitespace().lowercased()
        switch name {
        case "application/json": self = .json
        case "application/msgpack", "application/x-msgpack", "application/vnd.msgpack": self = .msgpack
        default: return nil
        }
    }

    /// From the `contentType` frame's bytes; `nil` when they are not UTF-8 or not a known type. The canonical names,
    /// what nearly every gateway sends, are recognised without making a string.
    public init?(frame: some Collection<UInt8>) {
        if let known = frame.withContiguousStorageIfAvailable(Self.canonical), let known {
            self = known
            return
        }
        guard frame.count <= 256, let text = String(validating: Array(frame), as: UTF8.self) else { return nil }
        self.init(parsing: text)
    }

    private static let canonicalFrames = allCases.map { ($0, $0.frame) }

    /// The content type whose canonical name these bytes are, compared as bytes.
    private static func canonical(_ bytes: UnsafeBufferPointer<UInt8>) -> ContentType? {
        for (type, name) in canonicalFrames where name.count == bytes.count {
            let equal = name.withUnsafeBufferPointer { memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0 }
            if equal { return type }
        }
        return nil
    }

    /// The frame to send: the canonical name.
    public var frame: [UInt8] { Array(rawValue.utf8) }
}

extension Substring {
    fileprivate func trimmingASCIIWhitespace() -> Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" || $0 == "\n" }
        var result = self
        while let first = result.first, isSpace(first) { result = result.dropFirst() }
        while let last = result.last, isSpace(last) { result = result.dropLast() }
        return result
    }
}

/// A gateway batch read element by element: each slot holds its record or why it is not one.
public struct DecodedBatch: Sendable {
    /// In batch order; `index` is the element's 0-based position in the body's array (the ack's `index`).
    public var records: [(index: Int, result: Result<SensorRecord, RecordError>)]

    public init(records: [(index: Int, result: Result<SensorRecord, RecordError>)]) {
        self.records = records
    }

    /// The valid records, in batch order.
    public var accepted: [SensorRecord] {
        records.compactMap { if case .success(let record) = $0.result { record } else { nil } }
    }

    /// One rejection per invalid element, naming its index and field.
    public var rejections: [Rejection] {
        records.compactMap { slot in
            if case .failure(let error) = slot.result {
                Rejection(index: slot.index, field: error.field, reason: error.reason)
            } else {
                nil
            }
        }
    }

    /// The PROTOCOL §7 acknowledgement of this batch, as it was read. (A service that drops some valid records
    /// afterwards, say as duplicates, still counts them as accepted: the gateway may forget them.)
    public var acknowledgement: Acknowledgement {
        let rejected = rejections
        return Acknowledgement(accepted: records.count - rejected.count, rejected: rejected)
    }
}

/// Gateway batches (PROTOCOL §7): a body that is an array of records (§2), in JSON or MessagePack.
public enum RecordBatch {
    /// Most records accepted in one batch; a larger batch is refused whole (`tooLarge`).
    public static let maximumRecords = 100_000

    /// Reads a batch body. A body that cannot be read at all (not JSON or MessagePack, not an array, too large)
    /// throws — the ingest service answers it with one rejection at index -1 (`Acknowledgement.unreadable`). Each
    /// element is validated by `RecordDecoding.record(from:)`, so one bad record does not spoil the others.
    /// `identifiers`: see `MessagePack.decodeRecords`.
    public static func decodeBatch(_ body: [UInt8], contentType: ContentType, identifiers: IdentifierCache? = nil)
        throws(WireError) -> DecodedBatch
    {
        let results: [Result<SensorRecord, RecordError>]
        switch contentType {
        case .msgpack:
            results = try MessagePack.decodeRecords(body, maximumCount: maximumRecords, identifiers: identifiers)
        case .json:
            let document = try JSONText.decode(body)
            guard case .array(let elements) = document else {
                throw WireError(
                    .unexpectedShape, "a batch must be an array of records, found \(document.typeName)",
                    offset: 0)
            }
            guard elements.count <= maximumRecords else {
                throw WireError(
                    .tooLarge, "a batch of \(elements.count) records; at most \(maximumRecords) are accepted",
                    offset: 0)
            }
            results = elements.map { (element) -> Result<SensorRecord, RecordError> in
                do throws(RecordError) {
                    return .success(try RecordDecoding.record(from: element))
                } catch {
                    return .failure(error)
                }
            }
        }
        var slots: [(index: Int, result: Result<SensorRecord, RecordError>)] = []
        slots.reserveCapacity(results.count)
        for (index, result) in results.enumerated() { slots.append((index, result)) }
        return DecodedBatch(records: slots)
    }

    /// Writes a batch body. JSON uses the model's `SensorRecord.json()` (PROTOCOL §2 fields at its documented
    /// precision, e.g. times to the millisecond); MessagePack carries every `Double` exactly as float64 (see
    /// `Packer.pack(record:)` below).
    public static func encodeBatch(_ records: [SensorRecord], as contentType: ContentType) -> [UInt8] {
        switch contentType {
        case .json:
            var text = "["
            text.reserveCapacity(records.count * 160 + 2)
            for (index, record) in records.enumerated() {
                if index > 0 { text += "," }
                text += record.json()
            }
            text += "]"
            return Array(text.utf8)
        case .msgpack:
            return MessagePack.withPacker(capacity: records.count * 140 + 8) { packer in
                packer.packArrayHeader(records.count)
                for record in records { packer.pack(record: record) }
            }
        }
    }
}

extension Packer {
    /// A record as the PROTOCOL §2 map: `kind`, `app`, `user`, `seq` (when present), `t`, then the kind's fields,
    /// optional ones left out when nil (`samples` when empty). Times, coordinates and measurements are float64
    /// whatever their value, `seq` and `steps` integers.
    func pack(record: SensorRecord) {
        var count = 4 + (record.seq == nil ? 0 : 1)
        switch record.payload {
        case .location(let fix):
            count +=
                2 + (fix.speed == nil ? 0 : 1) + (fix.course == nil ? 0 : 1) + (fix.horizontalAccuracy == nil ? 0 : 1)
        case .activity: count += 2
        case .steps: count += 1
        case .impact(let impact): count += 1 + (impact.durationMs == nil ? 0 : 1) + (impact.samples.isEmpty ? 0 : 1)
        case .capabilities: count += 2
        }
        packMapHeader(count)
        pack("kind")
        pack(record.kind.rawValue)
        pack("app")
        pack(record.device.app)
        pack("user")
        pack(record.device.user)
        if let seq = record.seq {
            pack("seq")
            pack(seq)
        }
        pack("t")
        pack(double: record.t)
        switch record.payload {
        case .location(let fix):
            pack("lat")
            pack(double: fix.latitude)
            pack("lon")
            pack(double: fix.longitude)
            if let speed = fix.speed {
                pack("speed")
                pack(double: speed)
            }
            if let course = fix.course {
                pack("course")
                pack(double: course)
            }
            if let hacc = fix.horizontalAccuracy {
                pack("hacc")
                pack(double: hacc)
            }
        case .activity(let observation):
            pack("activity")
            pack(observation.activity.rawValue)
            pack("confidence")
            pack(observation.confidence.rawValue)
        case .steps(let steps):
            pack("steps")
            pack(Int64(steps))
        case .impact(let impact):
            pack("peakG")
            pack(double: impact.peakG)
            if let duration = impact.durationMs {
                pack("durationMs")
                pack(double: duration)
            }
            if !impact.samples.isEmpty {
                pack("samples")
                packArrayHeader(impact.samples.count)
                for sample in impact.samples {
                    packArrayHeader(4)
                    pack(double: sample.dt)
                    pack(double: sample.x)
                    pack(double: sample.y)
                    pack(double: sample.z)
                }
            }
        case .capabilities(let capabilities):
            pack("activityAvailable")
            pack(capabilities.activityAvailable)
            pack("pedometerAvailable")
            pack(capabilities.pedometerAvailable)
        }
    }
}
