import Foundation
import Testing
import ZeroMQ

#if canImport(Glibc)
    import Glibc
#endif

/// `--key FILE` with a file that holds only `secret-key` (written by hand or by a tool that keeps the halves apart):
/// the public key is derived from the secret one, so no `.pub` is needed; a `.pub` beside it must agree.
@Suite("Secret-only key files")
struct SecretOnlyKeyFileTests {
    @Test func aSecretOnlyFileGivesTheWholePairAndAMismatchedPubBesideItIsRefused() throws {
        let directory = CurveTests.folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let pair = try CurveKeyPair.generate(name: "gw-1")
        let path = directory + "/gw-1.key"
        try "#   ZeroMQ secret key\ncurve\n    secret-key = \"\(pair.secretKey!)\"\n"
            .write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o600)

        let read = try CurveKeyPair.readSecret(path)
        #expect(read.publicKey == pair.publicKey && read.secretKey == pair.secretKey && read.name == "gw-1")

        // The matching .pub beside it is fine; another key's .pub is a mix-up, refused.
        try "curve\n    public-key = \"\(pair.publicKey)\"\n".write(
            toFile: path + ".pub", atomically: true, encoding: .utf8)
        #expect(try CurveKeyPair.readSecret(path).publicKey == pair.publicKey)
        let other = try CurveKeyPair.generate(name: "other")
        try "curve\n    public-key = \"\(other.publicKey)\"\n".write(
            toFile: path + ".pub", atomically: true, encoding: .utf8)
        #expect { try CurveKeyPair.readSecret(path) } throws: { "\($0)".contains("holds another public key") }
        // A public-only file is still no secret file.
        #expect { try CurveKeyPair.readSecret(path + ".pub") } throws: { _ in true }
    }
}
