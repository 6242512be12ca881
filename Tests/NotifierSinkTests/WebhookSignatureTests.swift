import Testing

@testable import NotifierSinks

@Suite struct WebhookSignatureTests {
    static func hex(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            bytes.append(UInt8(text[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }

    // RFC 4231 §4.2, 4.3, 4.5 and 4.7: HMAC-SHA-256 of test cases 1, 2, 4 and 6 (a key longer than SHA-256's block).
    static let vectors: [(key: [UInt8], data: [UInt8], mac: String)] = [
        (
            [UInt8](repeating: 0x0b, count: 20), Array("Hi There".utf8),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        ),
        (
            Array("Jefe".utf8), Array("what do ya want for nothing?".utf8),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        ),
        (
            Array(1...25), [UInt8](repeating: 0xcd, count: 50),
            "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"
        ),
        (
            [UInt8](repeating: 0xaa, count: 131), Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        ),
    ]

    @Test(arguments: 0..<4)
    func rfc4231KnownAnswers(_ index: Int) {
        let vector = Self.vectors[index]
        #expect(WebhookSignature.hmacSHA256(key: vector.key, message: vector.data) == Self.hex(vector.mac))
        #expect(WebhookSignature.sign(body: vector.data, secret: vector.key) == "sha256=" + vector.mac)
        #expect(WebhookSignature.verify(body: vector.data, secret: vector.key, header: "sha256=" + vector.mac))
    }

    @Test func signatureIsLowercaseHexWithPrefix() {
        let signature = WebhookSignature.sign(body: Array("{}".utf8), secret: Array("s3cret".utf8))
        #expect(signature.hasPrefix("sha256="))
        #expect(signature.count == 7 + 64)
        #expect(signature.dropFirst(7).allSatisfy { "0123456789abcdef".contains($0) })
        // Empty key and body are valid HMAC inputs (and must not pass NULL to libsodium).
        #expect(
            WebhookSignature.sign(body: [], secret: [])
                == "sha256=b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad")
    }

    @Test func verifyRejectsTampering() {
        let body = Array(#"{"event":"crashDetected","crashID":"c-1"}"#.utf8)
        let secret = Array("shared-secret".utf8)
        let header = WebhookSignature.sign(body: body, secret: secret)
        #expect(WebhookSignature.verify(body: body, secret: secret, header: header))
        // Upper-case hex is the same signature.
        #expect(
            WebhookSignature.verify(body: body, secret: secret, header: "sha256=" + header.dropFirst(7).uppercased()))

        var changedBody = body
        changedBody[changedBody.count - 3] ^= 0x01
        #expect(!WebhookSignature.verify(body: changedBody, secret: secret, header: header))
        #expect(!WebhookSignature.verify(body: body + [0x20], secret: secret, header: header))
        #expect(!WebhookSignature.verify(body: body, secret: Array("shared-secreT".utf8), header: header))
        #expect(!WebhookSignature.verify(body: body, secret: [], header: header))

        let hex = String(header.dropFirst(7))
        let short = String(hex.dropLast())
        let cut = String(hex.dropLast(2))
        var malformed: [String] = ["", "sha256=", hex, "sha1=" + hex, "SHA256=" + hex, "sha256=" + short]
        malformed += ["sha256=" + hex + "0", "sha256=" + hex + "00", " sha256=" + hex, "sha256= " + short]
        malformed += ["sha256=" + cut + "zz", "sha256=" + cut + "\u{E9}"]
        for malformed in malformed {
            #expect(!WebhookSignature.verify(body: body, secret: secret, header: malformed), "\(malformed)")
        }
    }
}
