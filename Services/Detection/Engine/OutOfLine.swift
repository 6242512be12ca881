/// A value kept on the heap behind one pointer, with value semantics (copied on write): for state that most devices
/// do not have most of the time (a movement run, a trip in progress), so that an idle device's inline state stays
/// small, and so that a run or trip is updated in place instead of being copied out of an enum and back per fix.
///
/// The value lives in the header of a `ManagedBuffer` and is reached through its pointer: no exclusivity check at
/// run time (a class's `var` would cost one per access), and no copy of the value to read or change a field.
struct OutOfLine<Value> {
    private final class Storage: ManagedBuffer<Value, Void> {}

    private var storage: Storage

    init(_ value: Value) {
        storage = Self.makeStorage(value)
    }

    private static func makeStorage(_ value: Value) -> Storage {
        unsafeDowncast(Storage.create(minimumCapacity: 0) { _ in value }, to: Storage.self)
    }

    var value: Value {
        storage.withUnsafeMutablePointerToHeader { $0.pointee }
    }

    /// Reads the value where it is (a part of it, without copying the rest).
    func read<Result>(_ body: (Value) -> Result) -> Result {
        storage.withUnsafeMutablePointerToHeader { body($0.pointee) }
    }

    /// Changes the value in place (after copying it if another `OutOfLine` shares the storage).
    mutating func modify<Result>(_ body: (inout Value) -> Result) -> Result {
        if !isKnownUniquelyReferenced(&storage) { storage = Self.makeStorage(value) }
        return storage.withUnsafeMutablePointerToHeader { body(&$0.pointee) }
    }

    /// Whether both hold the same storage (shared settings).
    func isShared(with other: OutOfLine<Value>) -> Bool { storage === other.storage }
}

// @unchecked: the storage is only written when uniquely referenced (`modify`), so a copy of an `OutOfLine` never sees
// another's writes: it is exactly as Sendable as its value, and the compiler checks that part (issue 21).
extension OutOfLine: @unchecked Sendable where Value: Sendable {}
