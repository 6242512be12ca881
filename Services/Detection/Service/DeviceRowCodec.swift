import CZstd
import Foundation
import RoadSaveModel
import Storage
import SystemKit

/// detection's device rows (a device's state as JSON, ~2 KB) compressed with zstd against a dictionary: the first
/// row this store ever compressed. Devices' states are alike (the same keys, their application's settings, similar
/// numbers), so against another device's JSON a parked phone's row takes ~100 bytes instead of ~1,900 (170 on
/// average over a simulated fleet of a million); alone, zstd only halves it. A checkpoint of 200,000 devices then
/// writes ~35 MB instead of ~400 MB, and the rows of devices leaving memory, held until that write, take as much
/// less memory.
///
/// A compressed row is `0x00`, the dictionary's ID (4 bytes, little-endian) and a zstd frame; anything else is
/// JSON as written before (it starts with `{`), read as it is. Dictionaries are kept in the store's
/// `row_dictionaries` table, written in the transaction of the first checkpoint that uses one, and never changed:
/// a row is readable as long as the store is.
final class DeviceRowCodec: @unchecked Sendable {
    // @unchecked: `dictionaries` and the decompression context are used under `lock`; the compression side
    // (`compressor`, `unsaved`) only on the checkpoint writer's thread.
    private let lock = Locked()
    private var dictionaries: [UInt32: [UInt8]] = [:]
    private let decompression: OpaquePointer
    private var compressor: (id: UInt32, context: OpaquePointer, dictionary: OpaquePointer)?
    /// A dictionary made but not yet in a committed transaction (`dictionaryToStore`, `stored`).
    private var unsaved: (id: UInt32, content: [UInt8])?
    /// Where rows are compressed before being copied out at their size (rows are held by the thousand until their
    /// checkpoint is written: none may keep a buffer of the JSON's size).
    private var scratch: [UInt8] = []

    static let marker: UInt8 = 0
    static let headerSize = 5
    /// zstd's fastest levels: a row is compressed on the checkpoint writer's thread, once per change.
    static let level: Int32 = 1

    struct CorruptRow: Error, CustomStringConvertible {
        let description: String
    }

    init() {
        decompression = ZSTD_createDCtx()
    }

    deinit {
        ZSTD_freeDCtx(decompression)
        if let compressor {
            ZSTD_freeCCtx(compressor.context)
            ZSTD_freeCDict(compressor.dictionary)
        }
    }

    static let schema = "CREATE TABLE IF NOT EXISTS row_dictionaries(id INTEGER PRIMARY KEY, content BLOB NOT NULL)"

    /// Reads the store's dictionaries (at opening); the newest is used for new rows.
    func load(from database: SQLiteDatabase) throws {
        var loaded: [UInt32: [UInt8]] = [:]
        try database.statement("SELECT id, content FROM row_dictionaries").query { row in
            loaded[UInt32(truncatingIfNeeded: row.integer(0))] = row.blob(1)
        }
        lock.withLock { dictionaries = loaded }
    }

    // MARK: Compressing (the checkpoint writer's thread)

    /// The row for `json`: compressed against the store's dictionary (made from `json` if there is none yet), or
    /// `json` itself if compression failed (it is read as JSON).
    func compress(_ json: [UInt8]) -> [UInt8] {
        guard let compressor = compressorMaking(from: json) else { return json }
        let bound = ZSTD_compressBound(json.count)
        if scratch.count < bound { scratch = [UInt8](repeating: 0, count: bound) }
        let size = scratch.withUnsafeMutableBytes { output in
            json.withUnsafeBytes { input in
                ZSTD_compress_usingCDict(
                    compressor.context, output.baseAddress, output.count, input.baseAddress,
                    input.count, compressor.dictionary)
            }
        }
        guard ZSTD_isError(size) == 0 else { return json }
        var row: [UInt8] = []
        row.reserveCapacity(Self.headerSize + size)
        row.append(Self.marker)
        withUnsafeBytes(of: compressor.id.littleEndian) { row.append(contentsOf: $0) }
        row.append(contentsOf: scratch[..<size])
        return row
    }

    /// A dictionary made by `compress` that the store does not have yet: written by the checkpoint's transaction,
    /// then `stored()`.
    var dictionaryToStore: (id: UInt32, content: [UInt8])? { unsaved }

    func stored() {
        unsaved = nil
    }

    private func compressorMaking(from json: [UInt8]) -> (
        id: UInt32, context: OpaquePointer, dictionary: OpaquePointer
    )? {
        if let compressor { return compressor }
        let (id, content, made): (UInt32, [UInt8], Bool) = lock.withLock {
            if let newest = dictionaries.keys.max() { return (newest, dictionaries[newest]!, false) }
            dictionaries[1] = json
            return (1, json, true)
        }
        if made { unsaved = (id, content) }
        guard let context = ZSTD_createCCtx() else { return nil }
        guard let dictionary = content.withUnsafeBytes({ ZSTD_createCDict($0.baseAddress, $0.count, Self.level) })
        else {
            ZSTD_freeCCtx(context)
            return nil
        }
        compressor = (id, context, dictionary)
        return compressor
    }

    // MARK: Reading (any thread)

    /// The JSON of `device`'s stored row; an error names the device.
    func json(_ row: [UInt8], of device: DeviceID) throws -> [UInt8] {
        do {
            return try json(row)
        } catch let error as CorruptRow {
            throw CorruptRow(description: "the row of \(device): \(error.description)")
        }
    }

    /// The JSON of a stored row (compressed or not).
    func json(_ row: [UInt8]) throws -> [UInt8] {
        guard row.first == Self.marker else { return row }
        guard row.count > Self.headerSize else {
            throw CorruptRow(description: "a compressed device row of \(row.count) bytes")
        }
        let id = row[1..<Self.headerSize].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return try lock.withLock {
            guard let dictionary = dictionaries[id] else {
                throw CorruptRow(
                    description: "a device row compressed against dictionary \(id), which the store does not have")
            }
            return try row.withUnsafeBytes { stored in
                let frame = UnsafeRawBufferPointer(rebasing: stored[Self.headerSize...])
                let size = ZSTD_getFrameContentSize(frame.baseAddress, frame.count)
                // ZSTD_CONTENTSIZE_UNKNOWN and ZSTD_CONTENTSIZE_ERROR: the two largest values.
                guard size < UInt64.max - 1, size <= 64 << 20 else {
                    throw CorruptRow(description: "a compressed device row whose size cannot be read")
                }
                var json = [UInt8](repeating: 0, count: Int(size))
                let written = json.withUnsafeMutableBytes { output in
                    dictionary.withUnsafeBytes { content in
                        ZSTD_decompress_usingDict(
                            decompression, output.baseAddress, output.count, frame.baseAddress,
                            frame.count, content.baseAddress, content.count)
                    }
                }
                guard ZSTD_isError(written) == 0, written == json.count else {
                    let reason = ZSTD_isError(written) != 0 ? String(cString: ZSTD_getErrorName(written)) : "short"
                    throw CorruptRow(description: "a compressed device row that does not decompress (\(reason))")
                }
                return json
            }
        }
    }
}
