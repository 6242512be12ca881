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

/// The first bytes of each kind of record for one device, up to and including `"seq":`.
struct RecordHeads {
    let capabilities: [UInt8]
    let location: [UInt8]
    let activity: [UInt8]
    let steps: [UInt8]
    let impact: [UInt8]

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

    init(fileDescriptor: Int32?) {
        self.fileDescriptor = fileDescriptor
        buffer.reserveCapacity(fileDescriptor == nil ? 1 << 20 : Self.flushThreshold + (1 << 16))
    }

    mutating func write(_ record: SimRecord, seq: Int, heads: RecordHeads) throws {
        switch record.body {
        case let .capabilities(activityAvailable, pedometerAvailable):
            start(heads.capabilities, seq: seq, tMs: record.tMs)
            literal(",\"activityAvailable\":")
            literal(activityAvailable ? "true" : "false")
            literal(",\"pedometerAvailable\":")
            literal(pedometerAvailable ? "true" : "false")
        case let .location(latitude, longitude, speed, course, hacc):
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
        case let .activity(report):
            start(heads.activity, seq: seq, tMs: record.tMs)
            literal(",\"activity\":\"")
            literal(report.activity.rawValue)
            literal("\",\"confidence\":\"")
            literal(report.confidence.rawValue)
            buffer.append(UInt8(ascii: "\""))
        case let .steps(count):
            start(heads.steps, seq: seq, tMs: record.tMs)
            literal(",\"steps\":")
            integer(Int64(count))
        case let .impact(impact):
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
