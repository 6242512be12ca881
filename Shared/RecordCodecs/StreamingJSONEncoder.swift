import Foundation

/// JSON written straight into bytes as the values encode themselves, for detection's checkpoint rows: Foundation's
/// JSONEncoder first builds a tree of every value, and took ~100 µs for one device's state (1.9 KB; measured over
/// 40,000 states of a benchmark's store), most of a checkpoint's cost with many devices, while devices waiting to
/// leave memory at the next checkpoint piled up.
///
/// What it writes JSONDecoder reads as it reads JSONEncoder's output: objects with members in the order encoded,
/// numbers in their shortest exact form. It streams, so a container is complete when a container above it is
/// written to again, which is how every synthesized and hand-written `encode(to:)` here works. Anything it does not
/// follow that way (a container written to after a later one of its parent, a super encoder, Data, Date, URL or
/// Decimal whose JSON form JSONEncoder chooses itself, a number JSON cannot hold) makes `encode` throw
/// `Unsupported`: the caller then encodes that value with JSONEncoder.
public struct StreamingJSONEncoder {
    public struct Unsupported: Error {}

    private let reused: JSONReusedEncoding?
    /// The writer of an encoder that is for one thread, kept from one value to the next: its buffers stay grown.
    private let kept: JSONStreamWriter?

    public init() {
        reused = nil
        kept = nil
    }

    /// Values of `type` equal to the last one this encoder wrote are copied from its bytes, not encoded again: for
    /// a value that many others hold (an application's settings, in each of its devices' states: half a state's
    /// bytes). Such an encoder is for one thread, and keeps its buffers from one value to the next (a checkpoint
    /// encodes thousands of states, each a few KB: growing a new buffer for each was most of the allocations left
    /// once the states' own containers were arrays).
    public init<Reused: Encodable & Equatable>(reusing type: Reused.Type) {
        let reused = JSONReusedEncodingOf<Reused>()
        self.reused = reused
        kept = JSONStreamWriter(reused: reused)
    }

    public func encode<Value: Encodable>(_ value: Value) throws -> [UInt8] {
        let writer = kept ?? JSONStreamWriter(reused: reused)
        writer.reset()
        let encoder = JSONStreamEncoder(writer: writer, depth: 0)
        try encoder.encodeValue(value)
        writer.close(toDepth: 0)
        guard !writer.failed else { throw Unsupported() }
        // Many results are kept at once (a checkpoint's rows until written): none with a grown buffer's spare half,
        // and none that is the kept writer's buffer.
        let bytes = writer.bytes
        return kept != nil || bytes.capacity - bytes.count > 256 ? Array(bytes[...]) : bytes
    }
}

/// The output and the containers open in it, outermost first. The state is a struct behind a pointer: as stored
/// properties of a class, every append paid a dynamic exclusivity check (a fifth of the encoder's time in perf).
final class JSONStreamWriter {
    struct State {
        var bytes: [UInt8] = []
        /// Per open container: its closing byte, whether it holds an element yet, and an identity (so that a
        /// container written to after it was closed is caught).
        var closers: [UInt8] = []
        var hasElements: [Bool] = []
        var identities: [Int] = []
        var nextIdentity = 0
        /// Something was not followed (see `StreamingJSONEncoder`): the output is not used.
        var failed = false
    }

    private let state: UnsafeMutablePointer<State>
    let reused: JSONReusedEncoding?

    init(reused: JSONReusedEncoding?) {
        self.reused = reused
        state = .allocate(capacity: 1)
        state.initialize(to: State())
        state.pointee.bytes.reserveCapacity(2048)
    }

    deinit {
        state.deinitialize(count: 1)
        state.deallocate()
    }

    /// Empty, for the next value; the buffers keep their capacity.
    func reset() {
        state.pointee.bytes.removeAll(keepingCapacity: true)
        state.pointee.closers.removeAll(keepingCapacity: true)
        state.pointee.hasElements.removeAll(keepingCapacity: true)
        state.pointee.identities.removeAll(keepingCapacity: true)
        state.pointee.nextIdentity = 0
        state.pointee.failed = false
    }

    var bytes: [UInt8] { state.pointee.bytes }
    var byteCount: Int { state.pointee.bytes.count }
    var lastByte: UInt8? { state.pointee.bytes.last }
    var depth: Int { state.pointee.closers.count }

    var failed: Bool {
        get { state.pointee.failed }
        set { state.pointee.failed = newValue }
    }

    func open(_ opener: UInt8, _ closer: UInt8) -> Int {
        state.pointee.bytes.append(opener)
        state.pointee.closers.append(closer)
        state.pointee.hasElements.append(false)
        state.pointee.nextIdentity += 1
        state.pointee.identities.append(state.pointee.nextIdentity)
        return state.pointee.nextIdentity
    }

    /// Closes the containers deeper than `depth`.
    func close(toDepth depth: Int) {
        while state.pointee.closers.count > depth {
            state.pointee.bytes.append(state.pointee.closers.removeLast())
            state.pointee.hasElements.removeLast()
            state.pointee.identities.removeLast()
        }
    }

    /// Before an element of the container `identity` at `index`: closes the containers opened inside it since,
    /// and writes the separator. False (and `failed`) if that container was closed already.
    func beginElement(of identity: Int, at index: Int) -> Bool {
        guard index < state.pointee.identities.count, state.pointee.identities[index] == identity else {
            state.pointee.failed = true
            return false
        }
        close(toDepth: index + 1)
        if state.pointee.hasElements[index] {
            state.pointee.bytes.append(UInt8(ascii: ","))
        } else {
            state.pointee.hasElements[index] = true
        }
        return true
    }

    private func append(_ byte: UInt8) {
        state.pointee.bytes.append(byte)
    }

    private func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        state.pointee.bytes.append(contentsOf: bytes)
    }

    func append(_ bytes: [UInt8]) {
        state.pointee.bytes.append(contentsOf: bytes)
    }

    func bytes(from start: Int) -> [UInt8] {
        Array(state.pointee.bytes[start...])
    }

    func writeKey(_ key: String) {
        writeString(key)
        append(UInt8(ascii: ":"))
    }

    func writeString(_ string: String) {
        var string = string
        string.withUTF8 { utf8 in
            append(UInt8(ascii: "\""))
            var start = 0
            for index in 0..<utf8.count {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                append(UnsafeBufferPointer(rebasing: utf8[start..<index]))
                start = index + 1
                append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): append(byte)
                case 0x0A: append(UInt8(ascii: "n"))
                case 0x0D: append(UInt8(ascii: "r"))
                case 0x09: append(UInt8(ascii: "t"))
                default:
                    let hex = Array("0123456789abcdef".utf8)
                    for escaped in [
                        UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                        hex[Int(byte >> 4)], hex[Int(byte & 0xF)],
                    ] { append(escaped) }
                }
            }
            append(UnsafeBufferPointer(rebasing: utf8[start...]))
            append(UInt8(ascii: "\""))
        }
    }

    func writeLiteral(_ text: StaticString) {
        append(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    func writeInteger<Integer: BinaryInteger>(_ value: Integer) {
        var text = String(value)
        text.withUTF8 { append($0) }
    }

    /// The shortest text that reads back as the same number (as JSONEncoder writes it: "60", not "60.0"). JSON has
    /// no infinity or NaN: JSONEncoder refuses them, and so does this (through its fallback).
    func writeFloatingPoint<Number: BinaryFloatingPoint & LosslessStringConvertible>(_ value: Number) {
        guard value.isFinite else {
            failed = true
            return
        }
        var text = value.description
        text.withUTF8 { utf8 in
            let whole =
                utf8.count > 2 && utf8[utf8.count - 2] == UInt8(ascii: ".") && utf8[utf8.count - 1] == UInt8(ascii: "0")
            append(UnsafeBufferPointer(rebasing: utf8[..<(whole ? utf8.count - 2 : utf8.count)]))
        }
    }
}

/// The bytes of the last value of one type an encoder wrote (`StreamingJSONEncoder.init(reusing:)`).
class JSONReusedEncoding {
    /// Writes `value` if it is of the type kept (from the bytes kept when it is equal to the last); false if not.
    func write<Value: Encodable>(_ value: Value, with encoder: JSONStreamEncoder) throws -> Bool { false }
}

final class JSONReusedEncodingOf<Reused: Encodable & Equatable>: JSONReusedEncoding {
    private var last: Reused?
    private var bytes: [UInt8] = []

    override func write<Value: Encodable>(_ value: Value, with encoder: JSONStreamEncoder) throws -> Bool {
        guard Value.self == Reused.self, let typed = value as? Reused else { return false }
        if let last, last == typed {
            encoder.writer.append(bytes)
            return true
        }
        let start = encoder.writer.byteCount
        try value.encode(to: encoder)
        // Its containers are complete once it has returned (see `StreamingJSONEncoder`).
        encoder.writer.close(toDepth: encoder.depth)
        guard !encoder.writer.failed, encoder.writer.byteCount > start else {
            last = nil
            return true
        }
        last = typed
        bytes = encoder.writer.bytes(from: start)
        return true
    }
}
