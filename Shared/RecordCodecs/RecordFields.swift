import RoadSaveModel

/// The members of one record (PROTOCOL §2) as a reader found them, before validation: one flat value per known field,
/// filled by whichever reader saw the record (`JSONRecordScanner` over NDJSON bytes, `MessagePackRecordScanner` over
/// MessagePack bytes, or `init(members:)` over a parsed `JSONValue`), then checked by the one validator,
/// `RecordDecoding.record(from: RecordFields)`. Unknown members are ignored; of repeated ones the first counts.
public struct RecordFields {
    /// What a member held, as far as validation cares: its JSON type and, for scalars, its value.
    public enum Member {
        case missing
        case null
        case bool(Bool)
        case number(Double)
        case string(String)
        /// An array or an object where none is expected; `typeName` as `JSONValue.typeName` words it.
        case other(typeName: StaticString)

        public var typeName: String {
            switch self {
            case .missing: "nothing"
            case .null: "null"
            case .bool: "a boolean"
            case .number: "a number"
            case .string: "a string"
            case .other(let typeName): typeName.description
            }
        }

        @inlinable public var isMissing: Bool { if case .missing = self { true } else { false } }
    }

    /// The `samples` member of an impact: absent (missing or null), read, or why it could not be. Readers build the
    /// error with the `Samples` helpers below, so every reader words it the same way; it only matters for impacts.
    public enum Samples {
        case absent
        case rows([ImpactSample])
        case invalid(RecordError)

        public static func notAnArray(_ typeName: String) -> Samples {
            .invalid(RecordError(field: "samples", reason: "expected an array of [dt, x, y, z], found \(typeName)"))
        }

        public static func tooMany(_ count: Int) -> Samples {
            .invalid(
                RecordError(
                    field: "samples",
                    reason: "\(count) samples; at most \(RecordDecoding.maximumSamples) are accepted"))
        }

        public static func badRow(_ index: Int) -> Samples {
            .invalid(RecordError(field: "samples[\(index)]", reason: "expected [dt, x, y, z]"))
        }

        public static func notNumbers(_ index: Int, found typeName: String) -> Samples {
            .invalid(RecordError(field: "samples[\(index)]", reason: "expected numbers, found \(typeName)"))
        }
    }

    public var kind = Member.missing
    public var app = Member.missing
    public var user = Member.missing
    public var seq = Member.missing
    public var t = Member.missing
    public var lat = Member.missing
    public var lon = Member.missing
    public var speed = Member.missing
    public var course = Member.missing
    public var hacc = Member.missing
    public var activity = Member.missing
    public var confidence = Member.missing
    public var steps = Member.missing
    public var peakG = Member.missing
    public var durationMs = Member.missing
    public var activityAvailable = Member.missing
    public var pedometerAvailable = Member.missing
    /// Whether a `samples` member was seen at all (the first one counts).
    public var samplesSeen = false
    public var samples = Samples.absent

    public init() {}

    /// The record fields that a reader looks for, by member name.
    public enum Name: UInt8, CaseIterable, Sendable {
        case kind, app, user, seq, t, lat, lon, speed, course, hacc, activity, confidence, steps, peakG, durationMs,
            samples, activityAvailable, pedometerAvailable

        /// The name's bytes match one of the record fields: by length, then by the bytes read as integers (no
        /// `String` is built, no `memcmp` is called: this runs for every member of every record).
        @inlinable
        public static func match(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> Name? {
            switch count {
            case 1: return bytes[0] == UInt8(ascii: "t") ? .t : nil
            case 3:
                switch RecordFields.word(bytes, count) {
                case 0x707061: return .app
                case 0x716573: return .seq
                case 0x74616c: return .lat
                case 0x6e6f6c: return .lon
                default: return nil
                }
            case 4:
                switch RecordFields.word(bytes, count) {
                case 0x646e_696b: return .kind
                case 0x7265_7375: return .user
                case 0x6363_6168: return .hacc
                default: return nil
                }
            case 5:
                switch RecordFields.word(bytes, count) {
                case 0x64_6565_7073: return .speed
                case 0x73_7065_7473: return .steps
                case 0x47_6b61_6570: return .peakG
                default: return nil
                }
            case 6: return RecordFields.word(bytes, count) == 0x6573_7275_6f63 ? .course : nil
            case 7: return RecordFields.word(bytes, count) == 0x73_656c_706d_6173 ? .samples : nil
            case 8: return RecordFields.word(bytes, count) == 0x7974_6976_6974_6361 ? .activity : nil
            case 10:
                let tail = RecordFields.word(bytes + 8, 2)
                switch RecordFields.word(bytes, 8) {
                case 0x6e65_6469_666e_6f63: return tail == 0x6563 ? .confidence : nil
                case 0x6e6f_6974_6172_7564: return tail == 0x734d ? .durationMs : nil
                default: return nil
                }
            case 17:
                return RecordFields.word(bytes, 8) == 0x7974_6976_6974_6361
                    && RecordFields.word(bytes + 8, 8) == 0x6c62_616c_6961_7641
                    && bytes[16] == UInt8(ascii: "e") ? .activityAvailable : nil
            case 18:
                return RecordFields.word(bytes, 8) == 0x6574_656d_6f64_6570
                    && RecordFields.word(bytes + 8, 8) == 0x6261_6c69_6176_4172
                    && bytes[16] == UInt8(ascii: "l") && bytes[17] == UInt8(ascii: "e") ? .pedometerAvailable : nil
            default: return nil
            }
        }
    }

    /// Up to 8 bytes as a little-endian integer (the first byte lowest), for comparing short names at once.
    @inlinable @inline(__always)
    public static func word(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> UInt64 {
        if count >= 8 { return UInt64(littleEndian: UnsafeRawPointer(bytes).loadUnaligned(as: UInt64.self)) }
        var value: UInt64 = 0
        for index in 0..<count { value |= UInt64(bytes[index]) << (8 * index) }
        return value
    }

    /// The enumerated values of `kind`, `activity` and `confidence` as literals (no allocation, no validation);
    /// nil for anything else, which the reader then builds as a `String`.
    @inlinable
    public static func knownValue(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> String? {
        switch count {
        case 3: return word(bytes, 3) == 0x776f6c ? "low" : nil
        case 4: return word(bytes, 4) == 0x6867_6968 ? "high" : nil
        case 5: return word(bytes, 5) == 0x73_7065_7473 ? "steps" : nil
        case 6:
            switch word(bytes, 6) {
            case 0x7463_6170_6d69: return "impact"
            case 0x6d75_6964_656d: return "medium"
            default: return nil
            }
        case 7:
            switch word(bytes, 7) {
            case 0x67_6e69_6b6c_6177: return "walking"
            case 0x67_6e69_6e6e_7572: return "running"
            case 0x67_6e69_6c63_7963: return "cycling"
            case 0x6e_776f_6e6b_6e75: return "unknown"
            default: return nil
            }
        case 8:
            switch word(bytes, 8) {
            case 0x6e6f_6974_6163_6f6c: return "location"
            case 0x7974_6976_6974_6361: return "activity"
            default: return nil
            }
        case 10:
            let tail = word(bytes + 8, 2)
            switch word(bytes, 8) {
            case 0x6974_6f6d_6f74_7561: return tail == 0x6576 ? "automotive" : nil
            case 0x616e_6f69_7461_7473: return tail == 0x7972 ? "stationary" : nil
            default: return nil
            }
        case 12:
            return word(bytes, 8) == 0x696c_6962_6170_6163 && word(bytes + 8, 4) == 0x7365_6974 ? "capabilities" : nil
        default: return nil
        }
    }

    /// The member for a string value of the field `name`: enumerated values as literals, identifiers through the
    /// reader's cache; nil when the bytes are not UTF-8 (the reader's general path then words the error).
    @inlinable
    public static func string(
        for name: Name, _ bytes: UnsafePointer<UInt8>, _ count: Int, ascii: Bool,
        identifiers: IdentifierCache?
    ) -> Member? {
        switch name {
        case .kind, .activity, .confidence:
            if ascii, let known = knownValue(bytes, count) { return .string(known) }
        case .app, .user:
            if let identifiers { return identifiers.string(bytes, count, ascii: ascii).map(Member.string) }
        default: break
        }
        return IdentifierCache.build(bytes, count, ascii: ascii).map(Member.string)
    }

    /// Whether the member `name` still has no value (so a repeated member is ignored, as `JSONValue` lookups take the
    /// first).
    @inlinable
    public func isUnset(_ name: Name) -> Bool {
        switch name {
        case .kind: kind.isMissing
        case .app: app.isMissing
        case .user: user.isMissing
        case .seq: seq.isMissing
        case .t: t.isMissing
        case .lat: lat.isMissing
        case .lon: lon.isMissing
        case .speed: speed.isMissing
        case .course: course.isMissing
        case .hacc: hacc.isMissing
        case .activity: activity.isMissing
        case .confidence: confidence.isMissing
        case .steps: steps.isMissing
        case .peakG: peakG.isMissing
        case .durationMs: durationMs.isMissing
        case .samples: !samplesSeen
        case .activityAvailable: activityAvailable.isMissing
        case .pedometerAvailable: pedometerAvailable.isMissing
        }
    }

    /// Sets a scalar member (not `samples`) if it is still unset.
    @inlinable
    public mutating func set(_ name: Name, _ member: Member) {
        switch name {
        case .kind: if kind.isMissing { kind = member }
        case .app: if app.isMissing { app = member }
        case .user: if user.isMissing { user = member }
        case .seq: if seq.isMissing { seq = member }
        case .t: if t.isMissing { t = member }
        case .lat: if lat.isMissing { lat = member }
        case .lon: if lon.isMissing { lon = member }
        case .speed: if speed.isMissing { speed = member }
        case .course: if course.isMissing { course = member }
        case .hacc: if hacc.isMissing { hacc = member }
        case .activity: if activity.isMissing { activity = member }
        case .confidence: if confidence.isMissing { confidence = member }
        case .steps: if steps.isMissing { steps = member }
        case .peakG: if peakG.isMissing { peakG = member }
        case .durationMs: if durationMs.isMissing { durationMs = member }
        case .samples:
            guard !samplesSeen else { return }
            samplesSeen = true
            switch member {
            case .missing, .null: samples = .absent
            default: samples = .notAnArray(member.typeName)
            }
        case .activityAvailable: if activityAvailable.isMissing { activityAvailable = member }
        case .pedometerAvailable: if pedometerAvailable.isMissing { pedometerAvailable = member }
        }
    }

    /// Sets `samples` if it is still unset.
    @inlinable
    public mutating func setSamples(_ value: Samples) {
        guard !samplesSeen else { return }
        samplesSeen = true
        samples = value
    }

    /// The members of a parsed JSON object (or a MessagePack map turned into one).
    public init(members: [(String, JSONValue)]) {
        for (key, value) in members {
            let name =
                key.utf8.withContiguousStorageIfAvailable { Name.match($0.baseAddress!, $0.count) }
                ?? Array(key.utf8).withUnsafeBufferPointer { Name.match($0.baseAddress!, $0.count) }
            guard let name else { continue }
            if name == .samples {
                setSamples(Self.samples(from: value))
            } else {
                set(name, Self.member(value))
            }
        }
    }

    static func member(_ value: JSONValue) -> Member {
        switch value {
        case .null: .null
        case .bool(let flag): .bool(flag)
        case .number(let number): .number(number)
        case .string(let text): .string(text)
        case .array: .other(typeName: "an array")
        case .object: .other(typeName: "an object")
        }
    }

    static func samples(from value: JSONValue) -> Samples {
        guard value != .null else { return .absent }
        guard case .array(let rows) = value else { return .notAnArray(value.typeName) }
        guard rows.count <= RecordDecoding.maximumSamples else { return .tooMany(rows.count) }
        var samples: [ImpactSample] = []
        samples.reserveCapacity(rows.count)
        for (index, row) in rows.enumerated() {
            guard case .array(let values) = row, values.count == 4 else { return .badRow(index) }
            var numbers: [Double] = []
            for value in values {
                guard case .number(let number) = value else { return .notNumbers(index, found: value.typeName) }
                numbers.append(number)
            }
            samples.append(ImpactSample(dt: numbers[0], x: numbers[1], y: numbers[2], z: numbers[3]))
        }
        return .rows(samples)
    }
}
