// A hand-written NDJSON writer: a million records must take seconds, and Foundation's encoders manage about 100,000
// a second. Numbers are written as fixed-point decimals from integers (no String(format:)), the constant head of every
// record ({"kind":…,"app":…,"user":…,"seq":) is prepared once per device, and bytes go to the file descriptor in
// large chunks.

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// How `roadsave simulate` writes records: NDJSON, or MessagePack (the same records as maps, one after another).
public enum RecordOutputFormat: String, Sendable, CaseIterable {
    case ndjson, msgpack
}

/// The first bytes of each kind of record for one device, up to and including `"seq":`; for MessagePack, the
/// `app` and `user` members.
struct RecordHeads {
    let capabilities: [UInt8]
    let location: [UInt8]
    let activity: [UInt8]
    let steps: [UInt8]
    let impact: [UInt8]
    let messagePackIdentity: [UInt8]

    init(app: String, user: String) {
        func head(_ kind: String) -> [UInt8] {
            Array("{\"kind\":\"\(kind)\",\"app\":".utf8) + jsonString(app) + Array(",\"user\":".utf8)
                + jsonString(user) + Array(",\"seq\":".utf8)
        }
        capabilities = head("capabilities")
        location = head("location")
        activity = head("activity")
        steps = head("steps")
        impact = head("impact")
        var identity: [UInt8] = []
        MessagePackBytes.string("app", into: &identity)
        MessagePackBytes.string(app, into: &identity)
        MessagePackBytes.string("user", into: &identity)
        MessagePackBytes.string(user, into: &identity)
        messagePackIdentity = identity
    }
}

/// A JSON string literal (quotes included) with the escapes JSON requires.
func jsonString(_ text: String) -> [UInt8] {
    var bytes: [UInt8] = [UInt8(ascii: "\"")]
    for byte in text.utf8 {
        switch byte {
        case UInt8(ascii: "\""): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
        case UInt8(ascii: "\\"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
        case 0..<0x20:
            let hex = Array("0123456789abcdef".utf8)
            bytes += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
        default: bytes.append(byte)
        }
    }
    bytes.append(UInt8(ascii: "\""))
    return bytes
}

/// libc's write(2), named apart from the writer's own `write`.
func systemWrite(_ fileDescriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    write(fileDescriptor, bytes, count)
}

struct WriteError: Error, CustomStringConvertible {
    var errno: Int32
    var description: String { "write failed: \(String(cString: strerror(errno)))" }
}

struct NDJSONWriter {
    private static let flushThreshold = 1 << 18
    private static let powersOfTen: [Int64] = [1, 10, 100, 1000, 10_000, 100_000, 1_000_000, 10_000_000]

    private(set) var buffer: [UInt8] = []
    /// Where full buffers go; nil keeps everything in memory.
    private let fileDescriptor: Int32?
    let format: RecordOutputFormat

    init(fileDescriptor: Int32?, format: RecordOutputFormat = .ndjson) {
        self.fileDescriptor = fileDescriptor
        self.format = format
        buffer.reserveCapacity(fileDescriptor == nil ? 1 << 20 : Self.flushThreshold + (1 << 16))
    }

    mutating func write(_ record: SimRecord, seq: Int, heads: RecordHeads) throws {
        if format == .msgpack {
            writeMessagePack(record, seq: seq, heads: heads)
            if fileDescriptor != nil, buffer.count >= Self.flushThreshold { try flush() }
            return
        }
        switch record.body {
        case .capabilities(let activityAvailable, let pedometerAvailable):
            start(heads.capabilities, seq: seq, tMs: record.tMs)
            literal(",\"activityAvailable\":")
            literal(activityAvailable ? "true" : "false")
            literal(",\"pedometerAvailable\":")
            literal(pedometerAvailable ? "true" : "false")
        case .location(let latitude, let longitude, let speed, let course, let hacc):
            start(heads.location, seq: seq, tMs: record.tMs)
            literal(",\"lat\":")
            fixed(latitude, digits: 7)
            literal(",\"lon\":")
            fixed(longitude, digits: 7)
            literal(",\"speed\":")
            if speed < 0 { literal("-1") } else { fixed(speed, digits: 2) }
            if let course {
                literal(",\"course\":")
                fixed(course, digits: 1)
            }
            literal(",\"hacc\":")
            if hacc < 0 { literal("-1") } else { fixed(hacc, digits: 1) }
        case .activity(let report):
            start(heads.activity, seq: seq, tMs: record.tMs)
            literal(",\"activity\":\"")
            literal(report.activity.rawValue)
            literal("\",\"confidence\":\"")
            literal(report.confidence.rawValue)
            buffer.append(UInt8(ascii: "\""))
        case .steps(let count):
            start(heads.steps, seq: seq, tMs: record.tMs)
            literal(",\"steps\":")
            integer(Int64(count))
        case .impact(let impact):
            start(heads.impact, seq: seq, tMs: record.tMs)
            literal(",\"peakG\":")
            fixed(impact.peakG, digits: 3)
            literal(",\"durationMs\":")
            integer(Int64(impact.durationMs.rounded()))
            literal(",\"samples\":[")
            for (i, sample) in impact.samples.enumerated() {
                if i > 0 { buffer.append(UInt8(ascii: ",")) }
                buffer.append(UInt8(ascii: "["))
                fixed(sample.t, digits: 3)
                buffer.append(UInt8(ascii: ","))
                fixed(sample.x, digits: 3)
                buffer.append(UInt8(ascii: ","))
                fixed(sample.y, digits: 3)
                buffer.append(UInt8(ascii: ","))
                fixed(sample.z, digits: 3)
                buffer.append(UInt8(ascii: "]"))
            }
            buffer.append(UInt8(ascii: "]"))
        }
        buffer.append(UInt8(ascii: "}"))
        buffer.append(UInt8(ascii: "\n"))
        if fileDescriptor != nil, buffer.count >= Self.flushThreshold { try flush() }
    }

    mutating func flush() throws {
        guard let fileDescriptor, !buffer.isEmpty else { return }
        try buffer.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = systemWrite(fileDescriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    throw WriteError(errno: errno)
                }
                offset += written
            }
        }
        buffer.removeAll(keepingCapacity: true)
    }

    /// Takes the bytes written so far (in-memory use).
    mutating func takeBuffer() -> [UInt8] {
        defer { buffer = [] }
        return buffer
    }

    // MARK: MessagePack

    /// The record as a PROTOCOL §2 map with the values that reading its NDJSON line gives: each decimal written to
    /// the line is `units / 10^digits`, which is exactly the `Double` a decoder makes of that text, so replaying the
    /// MessagePack file gives the same events as replaying the NDJSON one.
    private mutating func writeMessagePack(_ record: SimRecord, seq: Int, heads: RecordHeads) {
        let kind: StaticString
        var members = 5
        switch record.body {
        case .capabilities: (kind, members) = ("capabilities", members + 2)
        case .location(_, _, _, let course, _): (kind, members) = ("location", members + (course == nil ? 4 : 5))
        case .activity: (kind, members) = ("activity", members + 2)
        case .steps: (kind, members) = ("steps", members + 1)
        case .impact: (kind, members) = ("impact", members + 3)
        }
        buffer.append(0x80 | UInt8(members))
        key("kind")
        key(kind)
        buffer.append(contentsOf: heads.messagePackIdentity)
        key("seq")
        MessagePackBytes.integer(Int64(seq), into: &buffer)
        key("t")
        MessagePackBytes.double(Double(record.tMs) / 1000, into: &buffer)
        switch record.body {
        case .capabilities(let activityAvailable, let pedometerAvailable):
            key("activityAvailable")
            buffer.append(activityAvailable ? 0xC3 : 0xC2)
            key("pedometerAvailable")
            buffer.append(pedometerAvailable ? 0xC3 : 0xC2)
        case .location(let latitude, let longitude, let speed, let course, let hacc):
            key("lat")
            MessagePackBytes.double(Self.decimal(latitude, digits: 7), into: &buffer)
            key("lon")
            MessagePackBytes.double(Self.decimal(longitude, digits: 7), into: &buffer)
            key("speed")
            MessagePackBytes.double(speed < 0 ? -1 : Self.decimal(speed, digits: 2), into: &buffer)
            if let course {
                key("course")
                MessagePackBytes.double(Self.decimal(course, digits: 1), into: &buffer)
            }
            key("hacc")
            MessagePackBytes.double(hacc < 0 ? -1 : Self.decimal(hacc, digits: 1), into: &buffer)
        case .activity(let report):
            key("activity")
            MessagePackBytes.string(report.activity.rawValue, into: &buffer)
            key("confidence")
            MessagePackBytes.string(report.confidence.rawValue, into: &buffer)
        case .steps(let count):
            key("steps")
            MessagePackBytes.integer(Int64(count), into: &buffer)
        case .impact(let impact):
            key("peakG")
            MessagePackBytes.double(Self.decimal(impact.peakG, digits: 3), into: &buffer)
            key("durationMs")
            MessagePackBytes.integer(Int64(impact.durationMs.rounded()), into: &buffer)
            key("samples")
            MessagePackBytes.arrayHeader(impact.samples.count, into: &buffer)
            for sample in impact.samples {
                buffer.append(0x94)
                MessagePackBytes.double(Self.decimal(sample.t, digits: 3), into: &buffer)
                MessagePackBytes.double(Self.decimal(sample.x, digits: 3), into: &buffer)
                MessagePackBytes.double(Self.decimal(sample.y, digits: 3), into: &buffer)
                MessagePackBytes.double(Self.decimal(sample.z, digits: 3), into: &buffer)
            }
        }
    }

    private mutating func key(_ name: StaticString) {
        buffer.append(0xA0 | UInt8(name.utf8CodeUnitCount))
        name.withUTF8Buffer { buffer.append(contentsOf: $0) }
    }

    /// What `fixed(value, digits:)` writes, as the number a decoder reads back.
    private static func decimal(_ value: Double, digits: Int) -> Double {
        let scale = powersOfTen[digits]
        let scaled = (value * Double(scale)).rounded()
        guard scaled.isFinite, abs(scaled) < 9e18 else { return 0 }
        return Double(Int64(scaled)) / Double(scale)
    }

    // MARK: Formatting

    private mutating func start(_ head: [UInt8], seq: Int, tMs: Int64) {
        buffer.append(contentsOf: head)
        integer(Int64(seq))
        literal(",\"t\":")
        integer(tMs / 1000)
        buffer.append(UInt8(ascii: "."))
        fraction(tMs % 1000, digits: 3)
    }

    private mutating func literal(_ text: StaticString) {
        text.withUTF8Buffer { buffer.append(contentsOf: $0) }
    }

    private mutating func literal(_ text: String) {
        buffer.append(contentsOf: text.utf8)
    }

    private mutating func integer(_ value: Int64) {
        var remaining = value
        if remaining < 0 {
            buffer.append(UInt8(ascii: "-"))
            remaining = -remaining
        }
        if remaining < 10 {
            buffer.append(48 + UInt8(remaining))
            return
        }
        let first = buffer.count
        while remaining > 0 {
            buffer.append(48 + UInt8(remaining % 10))
            remaining /= 10
        }
        var low = first
        var high = buffer.count - 1
        while low < high {
            buffer.swapAt(low, high)
            low += 1
            high -= 1
        }
    }

    private mutating func fraction(_ value: Int64, digits: Int) {
        var rest = value
        var divisor = Self.powersOfTen[digits - 1]
        while divisor > 0 {
            buffer.append(48 + UInt8(rest / divisor))
            rest %= divisor
            divisor /= 10
        }
    }

    /// `value` rounded to `digits` decimals, always with exactly that many (no exponent, no "-0").
    private mutating func fixed(_ value: Double, digits: Int) {
        let scale = Self.powersOfTen[digits]
        let scaled = (value * Double(scale)).rounded()
        guard scaled.isFinite, abs(scaled) < 9e18 else {
            buffer.append(48)
            return
        }
        var units = Int64(scaled)
        if units < 0 {
            buffer.append(UInt8(ascii: "-"))
            units = -units
        }
        integer(units / scale)
        buffer.append(UInt8(ascii: "."))
        fraction(units % scale, digits: digits)
    }
}

/// The few MessagePack encodings the simulator writes (the simulator does not link msgpack-c).
enum MessagePackBytes {
    static func string(_ text: String, into buffer: inout [UInt8]) {
        let count = text.utf8.count
        switch count {
        case 0..<32: buffer.append(0xA0 | UInt8(count))
        case 0..<256: buffer += [0xD9, UInt8(count)]
        case 0..<65536: buffer += [0xDA, UInt8(count >> 8), UInt8(count & 0xFF)]
        default:
            buffer += [
                0xDB, UInt8(count >> 24), UInt8((count >> 16) & 0xFF), UInt8((count >> 8) & 0xFF), UInt8(count & 0xFF),
            ]
        }
        buffer.append(contentsOf: text.utf8)
    }

    static func integer(_ value: Int64, into buffer: inout [UInt8]) {
        if value >= 0, value < 128 {
            buffer.append(UInt8(value))
        } else {
            buffer.append(0xD3)
            withUnsafeBytes(of: value.bigEndian) { buffer.append(contentsOf: $0) }
        }
    }

    static func double(_ value: Double, into buffer: inout [UInt8]) {
        buffer.append(0xCB)
        withUnsafeBytes(of: value.bitPattern.bigEndian) { buffer.append(contentsOf: $0) }
    }

    static func arrayHeader(_ count: Int, into buffer: inout [UInt8]) {
        if count < 16 {
            buffer.append(0x90 | UInt8(count))
        } else if count < 65536 {
            buffer += [0xDC, UInt8(count >> 8), UInt8(count & 0xFF)]
        } else {
            buffer += [
                0xDD, UInt8(count >> 24), UInt8((count >> 16) & 0xFF), UInt8((count >> 8) & 0xFF), UInt8(count & 0xFF),
            ]
        }
    }
}
