#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The members of one record (CONTRACT §2) as a reader found them, before validation: one flat value per known field,
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
            case let .other(typeName): typeName.description
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
            .invalid(RecordError(field: "samples",
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

        /// The name's bytes match one of the record fields: by length, then bytes (no `String` is built).
        @inlinable
        public static func match(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> Name? {
            @inline(__always) func equal(_ literal: StaticString) -> Bool {
                memcmp(bytes, literal.utf8Start, count) == 0
            }
            switch count {
            case 1: return bytes[0] == UInt8(ascii: "t") ? .t : nil
            case 3:
                if equal("app") { return .app }
                if equal("seq") { return .seq }
                if equal("lat") { return .lat }
                if equal("lon") { return .lon }
            case 4:
                if equal("kind") { return .kind }
                if equal("user") { return .user }
                if equal("hacc") { return .hacc }
            case 5:
                if equal("speed") { return .speed }
                if equal("steps") { return .steps }
                if equal("peakG") { return .peakG }
            case 6: if equal("course") { return .course }
            case 7: if equal("samples") { return .samples }
            case 8: if equal("activity") { return .activity }
            case 10:
                if equal("confidence") { return .confidence }
                if equal("durationMs") { return .durationMs }
            case 17: if equal("activityAvailable") { return .activityAvailable }
            case 18: if equal("pedometerAvailable") { return .pedometerAvailable }
            default: break
            }
            return nil
        }
    }

    /// The enumerated values of `kind`, `activity` and `confidence` as literals (no allocation, no validation);
    /// nil for anything else, which the reader then builds as a `String`.
    @inlinable
    public static func knownValue(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> String? {
        @inline(__always) func equal(_ literal: StaticString) -> Bool {
            memcmp(bytes, literal.utf8Start, count) == 0
        }
        switch count {
        case 3: if equal("low") { return "low" }
        case 4: if equal("high") { return "high" }
        case 5: if equal("steps") { return "steps" }
        case 6:
            if equal("impact") { return "impact" }
            if equal("medium") { return "medium" }
        case 7:
            if equal("walking") { return "walking" }
            if equal("running") { return "running" }
            if equal("cycling") { return "cycling" }
            if equal("unknown") { return "unknown" }
        case 8:
            if equal("location") { return "location" }
            if equal("activity") { return "activity" }
        case 10:
            if equal("automotive") { return "automotive" }
            if equal("stationary") { return "stationary" }
        case 12: if equal("capabilities") { return "capabilities" }
        default: break
        }
        return nil
    }

    /// The member for a string value of the field `name`: enumerated values as literals, identifiers through the
    /// reader's cache; nil when the bytes are not UTF-8 (the reader's general path then words the error).
    @inlinable
    public static func string(for name: Name, _ bytes: UnsafePointer<UInt8>, _ count: Int, ascii: Bool,
                              identifiers: IdentifierCache?) -> Member? {
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
            let name = key.utf8.withContiguousStorageIfAvailable { Name.match($0.baseAddress!, $0.count) }
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
        case let .bool(flag): .bool(flag)
        case let .number(number): .number(number)
        case let .string(text): .string(text)
        case .array: .other(typeName: "an array")
        case .object: .other(typeName: "an object")
        }
    }

    static func samples(from value: JSONValue) -> Samples {
        guard value != .null else { return .absent }
        guard case let .array(rows) = value else { return .notAnArray(value.typeName) }
        guard rows.count <= RecordDecoding.maximumSamples else { return .tooMany(rows.count) }
        var samples: [ImpactSample] = []
        samples.reserveCapacity(rows.count)
        for (index, row) in rows.enumerated() {
            guard case let .array(values) = row, values.count == 4 else { return .badRow(index) }
            var numbers: [Double] = []
            for value in values {
                guard case let .number(number) = value else { return .notNumbers(index, found: value.typeName) }
                numbers.append(number)
            }
            samples.append(ImpactSample(dt: numbers[0], x: numbers[1], y: numbers[2], z: numbers[3]))
        }
        return .rows(samples)
    }
}
