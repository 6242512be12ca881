import Foundation
import RecordCodecs
import RoadSaveModel
import Testing

@testable import Wire

/// The fast MessagePack record path (`MessagePackRecordScanner` + the shared validator) against the gateway batch's
/// path (`MessagePack.decodeRecords`: structural scan, msgpack-c, walk to `JSONValue`, validation), record by
/// record, over every fixture record, hand-written encodings and thousands of damaged ones.
@Suite("MessagePackRecordScanner agrees with the batch decoder")
struct MessagePackRecordScannerTests {
    /// What the batch decoder makes of one record (sent as a batch of one).
    func batchResult(_ record: [UInt8]) -> Result<SensorRecord, RecordError>? {
        guard let results = try? MessagePack.decodeRecords([0x91] + record) else { return nil }
        return results.first
    }

    /// What a record file reader makes of the bytes: the fast path, the general one behind it.
    func fileResult(_ bytes: [UInt8]) -> (Result<SensorRecord, RecordError>, length: Int)? {
        bytes.withUnsafeBufferPointer { buffer -> (Result<SensorRecord, RecordError>, length: Int)? in
            guard let base = buffer.baseAddress else { return nil }
            var fields = RecordFields()
            switch MessagePackRecordScanner.scan(
                base, count: buffer.count, into: &fields, identifiers: IdentifierCache())
            {
            case .record(let length):
                let result = Result { () throws(RecordError) -> SensorRecord in try RecordDecoding.record(from: fields)
                }
                return (result, length)
            case .incomplete:
                return nil
            case .general:
                guard case .complete(let length) = MessagePack.extent(base, count: buffer.count) else { return nil }
                return (MessagePack.record(base, count: length), length)
            }
        }
    }

    func expectAgreement(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
        let extent = bytes.withUnsafeBufferPointer { MessagePack.extent($0.baseAddress!, count: $0.count) }
        guard case .complete(let length) = extent else { return }
        let record = Array(bytes[..<length])
        let file = fileResult(record)
        let batch = batchResult(record)
        let hex = record.map { String($0, radix: 16) }.joined(separator: " ")
        guard let file else {
            Issue.record("no result for a complete object: \(hex)", sourceLocation: sourceLocation)
            return
        }
        #expect(file.length == length, sourceLocation: sourceLocation)
        // The fast path against the general one on the same bytes: the same record or the same error.
        let general = record.withUnsafeBufferPointer { MessagePack.record($0.baseAddress!, count: $0.count) }
        #expect(String(reflecting: file.0) == String(reflecting: general), "\(hex)", sourceLocation: sourceLocation)
        // Against the batch decoder: the same record; where it refuses the record, or the whole batch, so does the
        // reader (its byte offsets count from the batch, so only the field is compared).
        switch (file.0, batch) {
        case (.success(let a), .success(let b)?):
            #expect(String(reflecting: a) == String(reflecting: b), "\(hex)", sourceLocation: sourceLocation)
        case (.failure(let a), .failure(let b)?):
            #expect(a.field == b.field, "\(hex)", sourceLocation: sourceLocation)
        case (.failure, nil):
            break
        default:
            Issue.record("reader \(file.0), batch \(String(describing: batch)): \(hex)", sourceLocation: sourceLocation)
        }
    }

    static func encoded(_ record: SensorRecord) -> [UInt8] { MessagePack.encode(record: record) }

    @Test func everyFixtureRecordDecodesTheFastWayToItself() throws {
        for record in Fixtures.records + Fixtures.jsonExactRecords {
            let bytes = Self.encoded(record)
            let fields = bytes.withUnsafeBufferPointer { buffer -> RecordFields? in
                var fields = RecordFields()
                if case .record(let length) = MessagePackRecordScanner.scan(
                    buffer.baseAddress!, count: buffer.count,
                    into: &fields, identifiers: IdentifierCache())
                {
                    #expect(length == bytes.count)
                    return fields
                }
                return nil
            }
            let decoded = try RecordDecoding.record(from: try #require(fields))
            #expect(decoded == record && String(reflecting: decoded) == String(reflecting: record))
            expectAgreement(bytes)
        }
    }

    /// Integers of every width, float32, map16, str8 keys, unknown members, repeated members, nil values.
    @Test func handWrittenEncodingsAgree() {
        func str(_ text: String) -> [UInt8] { [0xA0 | UInt8(text.utf8.count)] + Array(text.utf8) }
        func str8(_ text: String) -> [UInt8] { [0xD9, UInt8(text.utf8.count)] + Array(text.utf8) }
        let head = str("kind") + str("steps") + str("app") + str("a") + str("user") + str("b")
        let numbers: [[UInt8]] = [
            [0x05], [0xFF], [0xCC, 0xC8], [0xCD, 0x01, 0x00], [0xCE, 0x69, 0x8A, 0x2B, 0x00],
            [0xCF, 0, 0, 0, 0, 0x69, 0x8A, 0x2B, 0x00], [0xD0, 0x85], [0xD1, 0x80, 0x00],
            [0xD2, 0x69, 0x8A, 0x2B, 0x00],
            [0xD3, 0, 0, 0, 0, 0x69, 0x8A, 0x2B, 0x00], [0xCA, 0x4E, 0xD3, 0x14, 0x56], [0xCA, 0x7F, 0xC0, 0, 0],
            [0xCB, 0x41, 0xDA, 0x62, 0x8A, 0xC0, 0, 0, 0], [0xCB, 0x7F, 0xF0, 0, 0, 0, 0, 0, 0], [0xC0], [0xC3],
            str("x"), [0x90], [0x80], [0xC4, 0x01, 0x00], [0xD4, 0x01, 0x00], [0xC1],
        ]
        for number in numbers {
            expectAgreement([0x86] + head + str("t") + number + str("steps") + [0x01])
            expectAgreement([0x86] + head + str("t") + [0xCE, 0x69, 0x8A, 0x2B, 0x00] + str("steps") + number)
            expectAgreement(
                [0xDE, 0x00, 0x07] + head + str8("t") + [0xCE, 0x69, 0x8A, 0x2B, 0x00] + str("steps") + [0x01]
                    + str("zzz") + number)
            expectAgreement(
                [0x87] + head + str("t") + [0xCE, 0x69, 0x8A, 0x2B, 0x00] + str("steps") + [0x01]
                    + str("steps") + number)
        }
        // Not a map; a map with a non-string key; a non-UTF-8 key or value; deep nesting in an unknown member.
        expectAgreement([0x93, 0x01, 0x02, 0x03])
        expectAgreement([0x81, 0x01, 0x02])
        expectAgreement([0x81, 0xA2, 0xC3, 0x28, 0x01])
        expectAgreement([0x86] + head.dropLast(2) + [0xA2, 0xC3, 0x28] + str("t") + [0x01] + str("steps") + [0x01])
        expectAgreement([0x81] + str("x") + Array(repeating: 0x91, count: 40) + [0x01])
    }

    /// Each byte of each fixture record replaced by bytes that change its type or length, and cut short.
    @Test func damagedRecordsAgree() {
        let replacements: [UInt8] = [
            0x00, 0x7F, 0x80, 0x8F, 0x90, 0x94, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xC4, 0xCA, 0xCB,
            0xCC, 0xD3, 0xD4, 0xD9, 0xDC, 0xDE, 0xDF, 0xE0, 0xFF, 0x41, 0xC3,
        ]
        var checked = 0
        for record in Fixtures.records {
            let bytes = Self.encoded(record)
            for index in bytes.indices {
                var damaged = bytes
                damaged[index] = replacements[(index * 7 + checked) % replacements.count]
                expectAgreement(damaged + Array(repeating: 0xC0, count: 64))
                checked += 1
                // A cut record is incomplete for the scanner, never a record.
                let cut = Array(bytes[..<index])
                let outcome = cut.withUnsafeBufferPointer { buffer -> MessagePackRecordScanner.Outcome in
                    var fields = RecordFields()
                    return MessagePackRecordScanner.scan(
                        buffer.baseAddress ?? UnsafePointer(bitPattern: 1)!,
                        count: buffer.count, into: &fields, identifiers: nil)
                }
                if case .record = outcome { Issue.record("a record cut at \(index) was read whole") }
            }
        }
        #expect(checked > 500)
    }
}

/// `RecordFileReader`: records in chunks, across chunk boundaries, bad records skipped, truncation reported.
@Suite("RecordFileReader")
struct RecordFileReaderTests {
    func temporaryFile(_ bytes: [UInt8], _ name: String) throws -> String {
        let path = NSTemporaryDirectory() + "record-file-reader-\(getpid())-\(name)"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    func readAll(_ path: String, _ format: RecordFileFormat) throws -> (
        items: [(Int, RecordFileReader.Item)], failure: RecordFileReader.Failure?
    ) {
        let reader = try RecordFileReader(path: path, format: format)
        var items: [(Int, RecordFileReader.Item)] = []
        while let next = reader.next() { items.append(next) }
        return (items, reader.failure)
    }

    /// Enough records to cross several 1 MiB chunks, with impacts of hundreds of samples among them.
    static let many: [SensorRecord] = (0..<12_000).map { index in
        var record = Fixtures.records[index % Fixtures.records.count]
        record.seq = UInt64(index)
        if index % 1000 == 7 {
            record.payload = .impact(
                ImpactObservation(
                    peakG: 3, durationMs: 10,
                    samples: (0..<700).map {
                        ImpactSample(dt: Double($0) / 100, x: 0.1, y: -0.2, z: 1.0 / Double($0 + 1))
                    }))
        }
        return record
    }

    @Test func messagePackRecordsComeBackAcrossChunkBoundaries() throws {
        let bytes = Self.many.flatMap { MessagePack.encode(record: $0) }
        #expect(bytes.count > 1 << 20)
        let path = try temporaryFile(bytes, "many.msgpack")
        defer { unlink(path) }
        let (items, failure) = try readAll(path, RecordFileFormat(path: path))
        #expect(failure == nil)
        #expect(items.count == Self.many.count)
        for (position, (number, item)) in items.enumerated() {
            #expect(number == position + 1)
            guard case .record(let record) = item, record == Self.many[position] else {
                Issue.record("record \(number): \(item)")
                return
            }
        }
    }

    @Test func ndjsonLinesComeBackAcrossChunkBoundariesAsTheLineReaderNumbersThem() throws {
        var text = ""
        for (index, record) in Self.many.prefix(6000).enumerated() {
            text += record.json() + (index % 500 == 3 ? "\r\n  \n\n" : "\n")
        }
        text += "{\"kind\":\"steps\"}" // a last line without a line break, and bad
        let path = try temporaryFile(Array(text.utf8), "many.ndjson")
        defer { unlink(path) }
        let (items, failure) = try readAll(path, .ndjson)
        #expect(failure == nil)
        var expected: [(Int, Result<SensorRecord, RecordError>)] = []
        var lineReader = try NDJSONLineReader(path: path)
        lineReader.forEachLine { line, number in
            expected.append(
                (
                    number,
                    Result { () throws(RecordError) -> SensorRecord in
                        try RecordDecoding.recordThroughParser(fromJSON: Array(line))
                    }
                ))
        }
        #expect(items.count == expected.count)
        for ((number, item), (expectedNumber, result)) in zip(items, expected) {
            #expect(number == expectedNumber)
            switch (item, result) {
            case (.record(let a), .success(let b)): #expect(a == b)
            case (.invalid(let a), .failure(let b)): #expect(a == b)
            default: Issue.record("line \(number): \(item) but \(result)")
            }
        }
    }

    @Test func aBadMessagePackRecordIsReportedAndSkipped() throws {
        let good = MessagePack.encode(record: Fixtures.records[0])
        // A record whose lat is a string, one with a bin member (refused by the batch decoder), then a good one.
        var badLat = MessagePack.encode(
            .object([
                ("kind", .string("location")), ("app", .string("a")),
                ("user", .string("b")), ("t", .number(1_772_433_000)),
                ("lat", .string("north")), ("lon", .number(1)),
            ]))
        let withBin: [UInt8] =
            [0x82, 0xA4] + Array("kind".utf8) + [0xA5] + Array("steps".utf8) + [0xA1, 0x78, 0xC4, 0x02, 0x00, 0x01]
        badLat += withBin
        let path = try temporaryFile(good + badLat + good, "bad.msgpack")
        defer { unlink(path) }
        let (items, failure) = try readAll(path, .msgpack)
        #expect(failure == nil)
        #expect(items.count == 4)
        guard items.count == 4 else { return }
        guard case .record = items[0].1, case .invalid(let lat) = items[1].1, case .invalid(let bin) = items[2].1,
            case .record = items[3].1
        else {
            Issue.record("\(items)")
            return
        }
        #expect(lat == RecordError(field: "lat", reason: "expected a number, found a string"))
        #expect(bin.field == "(record)" && bin.reason.contains("binary data (bin) is not accepted"))
        #expect(items.map(\.0) == [1, 2, 3, 4])
    }

    @Test func aTruncatedLastRecordIsAClearFailure() throws {
        let good = MessagePack.encode(record: Fixtures.records[7])
        let path = try temporaryFile(good + good.prefix(good.count - 5), "truncated.msgpack")
        defer { unlink(path) }
        let (items, failure) = try readAll(path, .msgpack)
        #expect(items.count == 1)
        let reason = try #require(failure).reason
        #expect(
            reason.contains("ends inside record 2") && reason.contains("byte \(good.count)")
                && reason.contains("truncated"))
    }

    @Test func bytesThatStartNoObjectStopTheReading() throws {
        let good = MessagePack.encode(record: Fixtures.records[0])
        let path = try temporaryFile(good + [0xC1] + good, "reserved.msgpack")
        defer { unlink(path) }
        let (items, failure) = try readAll(path, .msgpack)
        #expect(items.count == 1)
        #expect(try #require(failure).reason.contains("record 2"))
    }

    @Test func formatsFollowTheOptionOrTheName() throws {
        #expect(RecordFileFormat(path: "x.msgpack") == .msgpack)
        #expect(RecordFileFormat(path: "X.MSGPACK") == .msgpack)
        #expect(RecordFileFormat(path: "x.ndjson") == .ndjson)
        #expect(RecordFileFormat(path: "-") == .ndjson)
        #expect(try RecordFileFormat(option: "msgpack", path: "-") == .msgpack)
        #expect(throws: RecordFileFormat.UnknownFormat.self) { try RecordFileFormat(option: "xml", path: nil) }
    }
}
