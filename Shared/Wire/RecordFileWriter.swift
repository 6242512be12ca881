import RecordCodecs
import RoadSaveModel

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Writes records to a file descriptor as a record file (`RecordFileFormat`): NDJSON lines (`SensorRecord.json()`)
/// or MessagePack maps one after another (the batch element's map, every `Double` exact as float64, so reading the
/// file back gives the same records). Buffered; `flush()` at the end.
public struct RecordFileWriter: ~Copyable {
    public let format: RecordFileFormat
    private let descriptor: Int32
    private var buffer: [UInt8] = []
    private static let flushThreshold = 1 << 18

    public init(descriptor: Int32, format: RecordFileFormat) {
        self.descriptor = descriptor
        self.format = format
        buffer.reserveCapacity(Self.flushThreshold + (1 << 16))
    }

    public mutating func write(_ record: SensorRecord) throws(WriteError) {
        switch format {
        case .ndjson:
            buffer.append(contentsOf: record.json().utf8)
            buffer.append(0x0A)
        case .msgpack:
            buffer.append(contentsOf: MessagePack.encode(record: record))
        }
        if buffer.count >= Self.flushThreshold { try flush() }
    }

    public mutating func flush() throws(WriteError) {
        var offset = 0
        while offset < buffer.count {
            let written = buffer[offset...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                throw WriteError(reason: String(cString: strerror(errno)))
            }
            offset += written
        }
        buffer.removeAll(keepingCapacity: true)
    }

    public struct WriteError: Error, Sendable, CustomStringConvertible {
        public var reason: String
        public var description: String { "write failed: \(reason)" }
    }
}

extension MessagePack {
    /// One record as its PROTOCOL §2 map (the element of a MessagePack batch).
    public static func encode(record: SensorRecord) -> [UInt8] {
        withPacker(capacity: 160) { packer in packer.pack(record: record) }
    }
}
