import Foundation

/// An `Encoder` whose value starts at `depth` containers deep in the writer's output.
struct JSONStreamEncoder: Encoder {
    let writer: JSONStreamWriter
    let depth: Int
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(
            JSONStreamKeyedContainer<Key>(
                writer: writer, identity: openContainer(UInt8(ascii: "{"), UInt8(ascii: "}")),
                index: depth))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        JSONStreamUnkeyedContainer(
            writer: writer, identity: openContainer(UInt8(ascii: "["), UInt8(ascii: "]")), index: depth)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        JSONStreamSingleValue(encoder: self)
    }

    /// A value gets one container: asked for a second one, or after a value, this encoder gives up.
    private func openContainer(_ opener: UInt8, _ closer: UInt8) -> Int {
        guard writer.depth >= depth, !valueStarted() else {
            writer.failed = true
            return -1
        }
        writer.close(toDepth: depth)
        return writer.open(opener, closer)
    }

    /// Whether something was written for this value already (the byte before it is its key's colon, a comma, an
    /// opening bracket, or nothing at the top).
    func valueStarted() -> Bool {
        guard writer.depth == depth, let last = writer.lastByte else { return writer.depth > depth }
        return
            !(last == UInt8(ascii: ":") || last == UInt8(ascii: ",") || last == UInt8(ascii: "[")
            || last == UInt8(ascii: "{"))
    }

    /// Writes `value` here; nothing written at all gives `{}`, as JSONEncoder does.
    func encodeValue<Value: Encodable>(_ value: Value) throws {
        if Value.self == Data.self || Value.self == Date.self || Value.self == URL.self || Value.self == Decimal.self {
            writer.failed = true
            return
        }
        if let reused = writer.reused, try reused.write(value, with: self) { return }
        let before = writer.byteCount
        try value.encode(to: self)
        if writer.byteCount == before { writer.writeLiteral("{}") }
    }

    /// Writes a primitive here (a single-value container).
    func encodePrimitive(_ write: (JSONStreamWriter) -> Void) {
        guard writer.depth >= depth, !valueStarted() else {
            writer.failed = true
            return
        }
        writer.close(toDepth: depth)
        write(writer)
    }
}

struct JSONStreamSingleValue: SingleValueEncodingContainer {
    let encoder: JSONStreamEncoder
    var codingPath: [any CodingKey] { [] }

    mutating func encodeNil() throws { encoder.encodePrimitive { $0.writeLiteral("null") } }
    mutating func encode(_ value: Bool) throws { encoder.encodePrimitive { $0.writeLiteral(value ? "true" : "false") } }
    mutating func encode(_ value: String) throws { encoder.encodePrimitive { $0.writeString(value) } }
    mutating func encode(_ value: Double) throws { encoder.encodePrimitive { $0.writeFloatingPoint(value) } }
    mutating func encode(_ value: Float) throws { encoder.encodePrimitive { $0.writeFloatingPoint(value) } }
    mutating func encode(_ value: Int) throws { encoder.encodePrimitive { $0.writeInteger(value) } }
    mutating func encode(_ value: Int8) throws { encoder.encodePrimitive { $0.writeInteger(value) } }
    mutating func encode(_ value: Int16) throws { encoder.encodePrimitive { $0.writeInteger(value) } }
    mutating func encode(_ value: Int32) throws { encoder.encodePrimitive { $0.writeInteger(value) } }
    mutating func encode(_ value: Int64) throws { encoder.encodePrimitive { $0.writeInteger(value) } }
    mutating func encode(_ value: UInt) throws { encoder.encodePrimitive { $0.writeInteger(value) } }
    mutating func encode(_ value: UInt8) throws { encoder.encodePrimitive { $0.writeInteger(value) } }
    mutating func encode(_ value: UInt16) throws { encoder.encodePrimitive { $0.writeInteger(value) } }
    mutating func encode(_ value: UInt32) throws { encoder.encodePrimitive { $0.writeInteger(value) } }
    mutating func encode(_ value: UInt64) throws { encoder.encodePrimitive { $0.writeInteger(value) } }

    mutating func encode<Value: Encodable>(_ value: Value) throws {
        guard encoder.writer.depth >= encoder.depth, !encoder.valueStarted() else {
            encoder.writer.failed = true
            return
        }
        encoder.writer.close(toDepth: encoder.depth)
        try encoder.encodeValue(value)
    }
}

struct JSONStreamKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let writer: JSONStreamWriter
    /// The container's identity in the writer and its index among the open containers.
    let identity: Int
    let index: Int
    var codingPath: [any CodingKey] { [] }

    /// Starts the member `key`; false when the container was closed (the writer has failed).
    private func member(_ key: Key) -> Bool {
        guard !writer.failed, writer.beginElement(of: identity, at: index) else { return false }
        writer.writeKey(key.stringValue)
        return true
    }

    mutating func encodeNil(forKey key: Key) throws { if member(key) { writer.writeLiteral("null") } }
    mutating func encode(_ value: Bool, forKey key: Key) throws {
        if member(key) { writer.writeLiteral(value ? "true" : "false") }
    }
    mutating func encode(_ value: String, forKey key: Key) throws { if member(key) { writer.writeString(value) } }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        if member(key) { writer.writeFloatingPoint(value) }
    }
    mutating func encode(_ value: Float, forKey key: Key) throws { if member(key) { writer.writeFloatingPoint(value) } }
    mutating func encode(_ value: Int, forKey key: Key) throws { if member(key) { writer.writeInteger(value) } }
    mutating func encode(_ value: Int8, forKey key: Key) throws { if member(key) { writer.writeInteger(value) } }
    mutating func encode(_ value: Int16, forKey key: Key) throws { if member(key) { writer.writeInteger(value) } }
    mutating func encode(_ value: Int32, forKey key: Key) throws { if member(key) { writer.writeInteger(value) } }
    mutating func encode(_ value: Int64, forKey key: Key) throws { if member(key) { writer.writeInteger(value) } }
    mutating func encode(_ value: UInt, forKey key: Key) throws { if member(key) { writer.writeInteger(value) } }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { if member(key) { writer.writeInteger(value) } }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { if member(key) { writer.writeInteger(value) } }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { if member(key) { writer.writeInteger(value) } }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { if member(key) { writer.writeInteger(value) } }

    mutating func encode<Value: Encodable>(_ value: Value, forKey key: Key) throws {
        guard member(key) else { return }
        try JSONStreamEncoder(writer: writer, depth: index + 1).encodeValue(value)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type,
        forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        let identity = member(key) ? writer.open(UInt8(ascii: "{"), UInt8(ascii: "}")) : -1
        return KeyedEncodingContainer(
            JSONStreamKeyedContainer<NestedKey>(
                writer: writer, identity: identity,
                index: index + 1))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let identity = member(key) ? writer.open(UInt8(ascii: "["), UInt8(ascii: "]")) : -1
        return JSONStreamUnkeyedContainer(writer: writer, identity: identity, index: index + 1)
    }

    mutating func superEncoder() -> any Encoder { unsupported() }
    mutating func superEncoder(forKey key: Key) -> any Encoder { unsupported() }

    private func unsupported() -> any Encoder {
        writer.failed = true
        return JSONStreamEncoder(writer: writer, depth: Int.max)
    }
}

/// Three words, so that the `any UnkeyedEncodingContainer` it is returned as holds it in place: a fourth boxed it on
/// the heap, once for every fix of a GPS track in a checkpoint.
struct JSONStreamUnkeyedContainer: UnkeyedEncodingContainer {
    let writer: JSONStreamWriter
    private let identity32: Int32
    private let index32: Int32
    private(set) var count = 0
    var codingPath: [any CodingKey] { [] }

    var identity: Int { Int(identity32) }
    var index: Int { Int(index32) }

    init(writer: JSONStreamWriter, identity: Int, index: Int) {
        self.writer = writer
        // A depth or identity beyond Int32 (never, for a checkpoint) only fails the encoding, which falls back.
        identity32 = Int32(clamping: identity)
        index32 = Int32(clamping: index)
        if Int(identity32) != identity || Int(index32) != index { writer.failed = true }
    }

    private mutating func element() -> Bool {
        guard !writer.failed, writer.beginElement(of: identity, at: index) else { return false }
        count += 1
        return true
    }

    mutating func encodeNil() throws { if element() { writer.writeLiteral("null") } }
    mutating func encode(_ value: Bool) throws { if element() { writer.writeLiteral(value ? "true" : "false") } }
    mutating func encode(_ value: String) throws { if element() { writer.writeString(value) } }
    mutating func encode(_ value: Double) throws { if element() { writer.writeFloatingPoint(value) } }
    mutating func encode(_ value: Float) throws { if element() { writer.writeFloatingPoint(value) } }
    mutating func encode(_ value: Int) throws { if element() { writer.writeInteger(value) } }
    mutating func encode(_ value: Int8) throws { if element() { writer.writeInteger(value) } }
    mutating func encode(_ value: Int16) throws { if element() { writer.writeInteger(value) } }
    mutating func encode(_ value: Int32) throws { if element() { writer.writeInteger(value) } }
    mutating func encode(_ value: Int64) throws { if element() { writer.writeInteger(value) } }
    mutating func encode(_ value: UInt) throws { if element() { writer.writeInteger(value) } }
    mutating func encode(_ value: UInt8) throws { if element() { writer.writeInteger(value) } }
    mutating func encode(_ value: UInt16) throws { if element() { writer.writeInteger(value) } }
    mutating func encode(_ value: UInt32) throws { if element() { writer.writeInteger(value) } }
    mutating func encode(_ value: UInt64) throws { if element() { writer.writeInteger(value) } }

    mutating func encode<Value: Encodable>(_ value: Value) throws {
        guard element() else { return }
        try JSONStreamEncoder(writer: writer, depth: index + 1).encodeValue(value)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
        -> KeyedEncodingContainer<NestedKey>
    {
        let identity = element() ? writer.open(UInt8(ascii: "{"), UInt8(ascii: "}")) : -1
        return KeyedEncodingContainer(
            JSONStreamKeyedContainer<NestedKey>(
                writer: writer, identity: identity,
                index: index + 1))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let identity = element() ? writer.open(UInt8(ascii: "["), UInt8(ascii: "]")) : -1
        return JSONStreamUnkeyedContainer(writer: writer, identity: identity, index: index + 1)
    }

    mutating func superEncoder() -> any Encoder {
        writer.failed = true
        return JSONStreamEncoder(writer: writer, depth: Int.max)
    }
}
