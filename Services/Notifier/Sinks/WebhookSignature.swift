import CSodium

/// libsodium is initialised once, on first use, by Swift's thread-safe lazy initialisation of a static.
/// (`sodium_init` is itself idempotent and thread-safe in current libsodium; this keeps it to one call regardless.)
enum Sodium {
    static let initialised: Bool = sodium_init() >= 0

    static func ensureInitialised() {
        // A failure would mean no usable random source; HMAC needs none, so it is not fatal here.
        _ = initialised
    }
}

/// The signature of webhook bodies: `sha256=` + lowercase hex HMAC-SHA256(secret, body), computed with libsodium over the
/// exact bytes sent, so a receiver verifies it before parsing anything.
public enum WebhookSignature {
    public static let prefix = "sha256="
    public static let macLength = 32

    /// HMAC-SHA256 of `message` under `key` (any key length, RFC 2104): libsodium's
    /// `crypto_auth_hmacsha256_init/update/final`, since the one-shot `crypto_auth_hmacsha256` takes only 32-byte keys.
    public static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        Sodium.ensureInitialised()
        var state = crypto_auth_hmacsha256_state()
        var mac = [UInt8](repeating: 0, count: macLength)
        // An empty array may have no storage: libsodium is then given a valid pointer and a length of zero, not NULL.
        let keyStorage = key.isEmpty ? [0] : key
        keyStorage.withUnsafeBufferPointer { pointer in
            _ = crypto_auth_hmacsha256_init(&state, pointer.baseAddress!, key.count)
        }
        let messageStorage = message.isEmpty ? [0] : message
        messageStorage.withUnsafeBufferPointer { pointer in
            _ = crypto_auth_hmacsha256_update(&state, pointer.baseAddress!, UInt64(message.count))
        }
        mac.withUnsafeMutableBufferPointer { mac in
            _ = crypto_auth_hmacsha256_final(&state, mac.baseAddress!)
        }
        // The state holds the key's pads: wiped before it goes out of scope.
        withUnsafeMutableBytes(of: &state) { sodium_memzero($0.baseAddress, $0.count) }
        return mac
    }

    /// `"sha256=" + lowercase hex HMAC-SHA256(secret, body)`.
    public static func sign(body: [UInt8], secret: [UInt8]) -> String {
        prefix + hex(hmacSHA256(key: secret, message: body))
    }

    /// Whether `header` is the signature of `body` under `secret`: `sha256=` followed by exactly 64 hex digits (either
    /// case), compared in constant time (`sodium_memcmp`). Anything malformed is rejected.
    public static func verify(body: [UInt8], secret: [UInt8], header: String) -> Bool {
        guard header.hasPrefix(prefix), let given = bytes(fromHex: header.utf8.dropFirst(prefix.utf8.count)),
            given.count == macLength
        else { return false }
        var expected = hmacSHA256(key: secret, message: body)
        defer { expected.withUnsafeMutableBytes { sodium_memzero($0.baseAddress, $0.count) } }
        return expected.withUnsafeBytes { expected in
            given.withUnsafeBytes { given in sodium_memcmp(expected.baseAddress, given.baseAddress, macLength) == 0 }
        }
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    private static func bytes(fromHex text: Substring.UTF8View) -> [UInt8]? {
        guard text.count % 2 == 0 else { return nil }
        var result = [UInt8]()
        result.reserveCapacity(text.count / 2)
        var high: UInt8? = nil
        for character in text {
            let value: UInt8
            switch character {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = character - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = character - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): value = character - UInt8(ascii: "A") + 10
            default: return nil
            }
            if let first = high {
                result.append(first << 4 | value)
                high = nil
            } else {
                high = value
            }
        }
        return result
    }
}
