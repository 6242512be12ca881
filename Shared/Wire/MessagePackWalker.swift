import CMessagePack
import RecordCodecs
import RoadSaveModel

/// Turns msgpack-c objects (already checked by `Scan`) into `JSONValue`s. `base` is the start of the input, so a
/// string's offset is its pointer minus `base`.
struct Walker {
    let base: UnsafeRawPointer

    func value(_ object: msgpack_object) throws(WireError) -> JSONValue {
        switch object.type {
        case MSGPACK_OBJECT_NIL:
            return .null
        case MSGPACK_OBJECT_BOOLEAN:
            return .bool(object.via.boolean)
        case MSGPACK_OBJECT_POSITIVE_INTEGER:
            return .number(Double(object.via.u64))
        case MSGPACK_OBJECT_NEGATIVE_INTEGER:
            return .number(Double(object.via.i64))
        case MSGPACK_OBJECT_FLOAT64, MSGPACK_OBJECT_FLOAT32:
            let number = object.via.f64
            guard number.isFinite else { throw WireError(.nonFinite, "\(number) is not a finite number") }
            return .number(number)
        case MSGPACK_OBJECT_STR:
            return .string(try string(object.via.str.ptr, object.via.str.size))
        case MSGPACK_OBJECT_ARRAY:
            let count = Int(object.via.array.size)
            var elements: [JSONValue] = []
            elements.reserveCapacity(count)
            if let pointer = object.via.array.ptr {
                for index in 0..<count {
                    do throws(WireError) {
                        elements.append(try value(pointer[index]))
                    } catch {
                        throw error.inside("[\(index)]")
                    }
                }
            }
            return .array(elements)
        case MSGPACK_OBJECT_MAP:
            return .object(try members(object))
        default:
            // Refused by the scan already; kept for completeness.
            throw WireError(.unsupportedType, "\(MessagePack.typeName(object)) is not accepted")
        }
    }

    func members(_ object: msgpack_object) throws(WireError) -> [(String, JSONValue)] {
        let count = Int(object.via.map.size)
        var members: [(String, JSONValue)] = []
        members.reserveCapacity(count)
        guard let pairs = object.via.map.ptr else { return members }
        for index in 0..<count {
            let key = try self.key(pairs[index].key)
            do throws(WireError) {
                members.append((key, try value(pairs[index].val)))
            } catch {
                throw error.inside(key)
            }
        }
        return members
    }

    func key(_ object: msgpack_object) throws(WireError) -> String {
        guard object.type == MSGPACK_OBJECT_STR else {
            throw WireError(.nonStringKey, "a map key must be a string, found \(MessagePack.typeName(object))")
        }
        return try string(object.via.str.ptr, object.via.str.size)
    }

    /// One element of a batch: a record or the reason it is not one.
    func record(_ object: msgpack_object) -> Result<SensorRecord, RecordError> {
        guard object.type == MSGPACK_OBJECT_MAP else {
            return .failure(
                RecordError(field: "(record)", reason: "expected a map, found \(MessagePack.typeName(object))"))
        }
        let count = Int(object.via.map.size)
        var members: [(String, JSONValue)] = []
        members.reserveCapacity(count)
        if let pairs = object.via.map.ptr {
            for index in 0..<count {
                let key: String
                do throws(WireError) {
                    key = try self.key(pairs[index].key)
                } catch {
                    return .failure(RecordError(field: "(record)", reason: "member \(index + 1): \(error)"))
                }
                do throws(WireError) {
                    members.append((key, try value(pairs[index].val)))
                } catch {
                    let inner = error.inside(key)
                    var detail = error.reason
                    if let offset = error.offset { detail += " at byte \(offset)" }
                    return .failure(RecordError(field: inner.path, reason: detail))
                }
            }
        }
        do throws(RecordError) {
            return .success(try RecordDecoding.record(from: .object(members)))
        } catch {
            return .failure(error)
        }
    }

    func string(_ pointer: UnsafePointer<CChar>?, _ size: UInt32) throws(WireError) -> String {
        guard let pointer, size > 0 else { return "" }
        let bytes = UnsafeBufferPointer(
            start: UnsafeRawPointer(pointer).assumingMemoryBound(to: UInt8.self),
            count: Int(size))
        if let known = KnownStrings.lookup(bytes) { return known }
        // `String(decoding:)` is the fast, non-generic path; it repairs invalid UTF-8 with U+FFFD, so a result whose
        // bytes differ from the input means the input was not valid (ASCII, the common case, is checked first).
        let text = String(decoding: bytes, as: UTF8.self)
        var ascii = true
        for byte in bytes where byte >= 0x80 {
            ascii = false
            break
        }
        if !ascii, !text.utf8.elementsEqual(bytes) {
            throw WireError(
                .invalidUTF8, "a string that is not valid UTF-8",
                offset: UnsafeRawPointer(pointer) - base)
        }
        return text
    }
}
