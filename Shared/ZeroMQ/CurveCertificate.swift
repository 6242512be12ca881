import CZeroMQ
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Why a CurveZMQ key file could not be written or used. The message names the file and what to do.
public struct CurveKeyError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// A CurveZMQ key pair (Z85 text, 40 characters each) read from, or written to, ZeroMQ's certificate files.
///
/// The files are those of libzmq's `zcert` and pyzmq's `zmq.auth.create_certificates` / `load_certificate`: a
/// `metadata` section (`name = "…"`) and a `curve` section with `public-key = "…"`, plus `secret-key = "…"` in the
/// secret file. `NAME.key` holds both keys (mode 0600), `NAME.key.pub` only the public one, to hand to the peers.
public struct CurveKeyPair: Sendable, Equatable {
    public var name: String
    public var publicKey: String
    /// Nil for a key read from a public file.
    public var secretKey: String?

    public init(name: String, publicKey: String, secretKey: String?) {
        self.name = name
        self.publicKey = publicKey
        self.secretKey = secretKey
    }

    /// A new key pair from libzmq (`zmq_curve_keypair`).
    public static func generate(name: String) throws -> CurveKeyPair {
        guard ZMQCurve.isAvailable else {
            throw CurveKeyError("this libzmq was built without CURVE (zmq_has(\"curve\") is false)")
        }
        let pair = try ZMQCurve.keyPair()
        return CurveKeyPair(name: name, publicKey: pair.publicKey, secretKey: pair.secretKey)
    }

    // MARK: Files

    /// The secret file for `name` in `directory`, and the public file beside it.
    public static func paths(name: String, directory: String) -> (secret: String, public: String) {
        let secret = (directory as NSString).appendingPathComponent("\(name).key")
        return (secret, secret + ".pub")
    }

    /// Writes `NAME.key` (both keys, mode 0600, created with that mode so it is never readable by others) and
    /// `NAME.key.pub` (public key, mode 0644). Refuses to overwrite either.
    public func write(directory: String) throws -> (secret: String, public: String) {
        guard let secretKey else { throw CurveKeyError("\(name): no secret key to write") }
        let paths = Self.paths(name: name, directory: directory)
        for path in [paths.secret, paths.public] where FileManager.default.fileExists(atPath: path) {
            throw CurveKeyError("\(path) exists; remove it first or choose another name")
        }
        try Self.create(paths.public, mode: 0o644, text: certificate(secret: nil))
        try Self.create(paths.secret, mode: 0o600, text: certificate(secret: secretKey))
        return paths
    }

    /// Reads a secret file (both keys, or only `secret-key`: the public key is derived from it). Refused when the file is readable or writable by group or others, as ssh does,
    /// and when its public key does not belong to its secret key.
    public static func readSecret(_ path: String) throws -> CurveKeyPair {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw CurveKeyError("cannot read the secret key file \(path): \(String(cString: strerror(errno)))")
        }
        let mode = info.st_mode & 0o777
        if mode & 0o077 != 0 {
            throw CurveKeyError(
                "the secret key file \(path) is accessible by group or others (mode 0\(String(mode, radix: 8))); "
                    + "run: chmod 600 \(path)")
        }
        let pair = try read(path)
        guard let secret = pair.secretKey else {
            throw CurveKeyError("\(path) holds no secret-key (is it the .pub file?)")
        }
        guard let derived = ZMQCurve.publicKey(secretKey: secret) else {
            throw CurveKeyError("\(path): secret-key is not a valid 40-character Z85 key")
        }
        if derived != pair.publicKey {
            throw CurveKeyError("\(path): public-key does not belong to secret-key")
        }
        // A `.pub` beside it (NAME.key.pub) must be the same key: a mismatch means the files were mixed up.
        if let beside = try? readPublic(path + ".pub"), beside.publicKey != derived {
            throw CurveKeyError("\(path).pub holds another public key than \(path)'s secret key")
        }
        return pair
    }

    /// Reads a public file (or the public part of a secret file).
    public static func readPublic(_ path: String) throws -> CurveKeyPair {
        var pair = try read(path)
        pair.secretKey = nil
        return pair
    }

    /// Reads the client's secret key and, beside it, the server's public key: what a client socket needs.
    public static func read(_ path: String) throws -> CurveKeyPair {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CurveKeyError("cannot read the key file \(path)")
        }
        var name = ((path as NSString).lastPathComponent as NSString).deletingPathExtension
        if name.hasSuffix(".key") { name = String(name.dropLast(4)) }
        var publicKey: String?
        var secretKey: String?
        for rawLine in String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            guard !line.hasPrefix("#"), let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: equals)...].trimmingCharacters(in: CharacterSet(charactersIn: " \t\"'"))
            switch key {
            case "public-key": publicKey = value
            case "secret-key": secretKey = value
            case "name": if !value.isEmpty { name = value }
            default: continue
            }
        }
        // A secret-only file: the public key is a function of the secret key (Curve25519), so it is derived, not needed.
        if publicKey == nil, let secretKey { publicKey = ZMQCurve.publicKey(secretKey: secretKey) }
        guard let publicKey else { throw CurveKeyError("\(path) holds no public-key (not a ZeroMQ certificate file)") }
        guard ZMQCurve.isZ85Key(publicKey) else {
            throw CurveKeyError("\(path): public-key is not a 40-character Z85 key")
        }
        if let secretKey, !ZMQCurve.isZ85Key(secretKey) {
            throw CurveKeyError("\(path): secret-key is not a 40-character Z85 key")
        }
        return CurveKeyPair(name: name, publicKey: publicKey, secretKey: secretKey)
    }

    func certificate(secret: String?) -> String {
        let kind = secret == nil ? "Public" : "Secret"
        var text = """
            #   ****  Generated by roadsave keygen  ****
            #   ZeroMQ CURVE **\(kind)** Certificate
            #   \(secret == nil ? "Give this file to the peers that must recognise this key." : "DO NOT PROVIDE THIS FILE TO OTHER USERS nor change its permissions.")

            metadata
                name = "\(name)"
            curve
                public-key = "\(publicKey)"

            """
        if let secret { text += "    secret-key = \"\(secret)\"\n" }
        return text
    }

    private static func create(_ path: String, mode: mode_t, text: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else {
            throw CurveKeyError("cannot create \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        // The umask may have narrowed the mode; never widened it. Set it exactly.
        _ = fchmod(fd, mode)
        var bytes = Array(text.utf8)
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeMutableBytes { Glibc.write(fd, $0.baseAddress! + written, $0.count - written) }
            if n < 0 {
                if errno == EINTR { continue }
                throw CurveKeyError("cannot write \(path): \(String(cString: strerror(errno)))")
            }
            written += n
        }
        bytes.removeAll()
    }
}

extension ZMQCurve {
    /// The Z85 public key of a Z85 secret key (`zmq_curve_public`), nil if `secretKey` is not a key.
    public static func publicKey(secretKey: String) -> String? {
        guard isZ85Key(secretKey) else { return nil }
        var publicKey = [CChar](repeating: 0, count: 41)
        guard zmq_curve_public(&publicKey, secretKey) == 0 else { return nil }
        return String(decoding: publicKey.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// 40 characters of the Z85 alphabet.
    public static func isZ85Key(_ text: String) -> Bool {
        text.utf8.count == 40 && text.utf8.allSatisfy { z85Alphabet.contains($0) }
    }

    /// The Z85 text of 32 binary key bytes (as a ZAP request carries the client's key).
    public static func z85(_ key: [UInt8]) -> String? {
        guard key.count == 32 else { return nil }
        var text = [CChar](repeating: 0, count: 41)
        guard key.withUnsafeBufferPointer({ zmq_z85_encode(&text, $0.baseAddress, 32) }) != nil else { return nil }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static let z85Alphabet = Set(
        "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#".utf8)
}
