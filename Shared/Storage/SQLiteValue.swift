/// A value bound to a statement's parameter.
public enum SQLiteValue: Sendable, Equatable {
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
    /// Part of an array's bytes, bound where they are (a journal chunk's records inside its feed item).
    case blobSlice(ArraySlice<UInt8>)
    /// Text given as its UTF-8 bytes, part of an array, bound where they are (a gateway's batch ID in its frame).
    case textSlice(ArraySlice<UInt8>)
    case null
}

/// What a statement parameter can be given as.
public protocol SQLiteBindable {
    var sqliteValue: SQLiteValue { get }
}

extension Int: SQLiteBindable { public var sqliteValue: SQLiteValue { .integer(Int64(self)) } }
extension Int64: SQLiteBindable { public var sqliteValue: SQLiteValue { .integer(self) } }
extension UInt64: SQLiteBindable {
    /// Positions and sequence numbers stay below 2⁶³ (SQLite's integers are signed).
    public var sqliteValue: SQLiteValue { .integer(Int64(bitPattern: self)) }
}
extension Double: SQLiteBindable { public var sqliteValue: SQLiteValue { .real(self) } }
extension String: SQLiteBindable { public var sqliteValue: SQLiteValue { .text(self) } }
extension Array: SQLiteBindable where Element == UInt8 { public var sqliteValue: SQLiteValue { .blob(self) } }
extension ArraySlice: SQLiteBindable where Element == UInt8 { public var sqliteValue: SQLiteValue { .blobSlice(self) } }
extension Bool: SQLiteBindable { public var sqliteValue: SQLiteValue { .integer(self ? 1 : 0) } }
extension Optional: SQLiteBindable where Wrapped: SQLiteBindable {
    public var sqliteValue: SQLiteValue { self?.sqliteValue ?? .null }
}
extension SQLiteValue: SQLiteBindable { public var sqliteValue: SQLiteValue { self } }
