import CZeroMQ
import Foundation
import Testing
import ZeroMQ

/// Key files, allow-lists and ZAP decisions, without processes.
@Suite("Curve")
struct CurveTests {
    static func folder() -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("curve-\(UUID().uuidString.prefix(8))")
            .path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func keyFilesRoundTripAndTheSecretIsPrivate() throws {
        let directory = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let pair = try CurveKeyPair.generate(name: "gw-1")
        let paths = try pair.write(directory: directory)
        let attributes = try FileManager.default.attributesOfItem(atPath: paths.secret)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect(try CurveKeyPair.readSecret(paths.secret) == pair)
        let publicOnly = try CurveKeyPair.readPublic(paths.public)
        #expect(publicOnly.publicKey == pair.publicKey && publicOnly.secretKey == nil && publicOnly.name == "gw-1")
        #expect(throws: CurveKeyError.self) { try pair.write(directory: directory) } // never overwrites

        chmod(paths.secret, 0o640)
        #expect { try CurveKeyPair.readSecret(paths.secret) } throws: { error in
            "\(error)".contains("accessible by group or others (mode 0640)")
        }
        #expect { try CurveKeyPair.readSecret(paths.public) } throws: { error in "\(error)".contains("mode 0644") }
    }

    @Test func aSecretFileWhosePublicKeyIsNotItsOwnIsRefused() throws {
        let directory = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let one = try CurveKeyPair.generate(name: "a")
        let other = try CurveKeyPair.generate(name: "b")
        let mixed = CurveKeyPair(name: "a", publicKey: other.publicKey, secretKey: one.secretKey)
        let paths = try mixed.write(directory: directory)
        #expect { try CurveKeyPair.readSecret(paths.secret) } throws: { "\($0)".contains("does not belong") }
    }

    @Test func allowListLinesCommentsAndErrors() throws {
        let key1 = try ZMQCurve.keyPair().publicKey
        let key2 = try ZMQCurve.keyPair().publicKey
        let list = try CurveAllowList(
            text: """
                # role key name apps
                gateway \(key1) gw-1 app-1,app-2   # depot
                operator \(key2) alice
                subscriber \(key1) board *
                """)
        #expect(list.entry(role: .gateway, publicKey: key1)?.applications == ["app-1", "app-2"])
        #expect(list.entry(role: .operator, name: "alice")?.applications == nil)
        #expect(list.entry(role: .subscriber, publicKey: key1)?.allows(application: "x") == true)
        #expect(list.entry(role: .gateway, publicKey: key2) == nil)
        #expect { try CurveAllowList(text: "admin \(key1) x") } throws: {
            "\($0)".contains("line 1: unknown role \"admin\"")
        }
        #expect { try CurveAllowList(text: "\n gateway short x") } throws: {
            "\($0)".contains("line 2") && "\($0)".contains("Z85")
        }
        #expect { try CurveAllowList(text: "gateway \(key1) a\ngateway \(key1) b") } throws: {
            "\($0)".contains("listed twice")
        }
    }

    @Test func zapDecisions() throws {
        let client = try ZMQCurve.keyPair()
        let list = try CurveAllowList(text: "gateway \(client.publicKey) gw-1 app-1")
        let binaryKey = try #require(z85Decode(client.publicKey))
        func request(domain: String, mechanism: String = "CURVE", key: [UInt8]) -> [[UInt8]] {
            ["1.0", "7", domain, "127.0.0.1", "", mechanism].map { Array($0.utf8) } + [key]
        }
        let accepted = ZAPHandler.decide(request(domain: "gateway", key: binaryKey), allowList: list)
        #expect(
            accepted.reply.dropLast().map { String(decoding: $0, as: UTF8.self) } == ["1.0", "7", "200", "OK", "gw-1"])
        #expect(accepted.reply.last == ZAPHandler.metadata([(ZAPHandler.publicKeyProperty, client.publicKey)]))
        let wrongRole = ZAPHandler.decide(request(domain: "operator", key: binaryKey), allowList: list)
        #expect(String(decoding: wrongRole.reply[2], as: UTF8.self) == "400" && !wrongRole.decision.accepted)
        let plain = ZAPHandler.decide(
            ["1.0", "7", "gateway", "127.0.0.1", "", "NULL"].map { Array($0.utf8) }, allowList: list)
        #expect(String(decoding: plain.reply[2], as: UTF8.self) == "400")
    }

    /// The notifier's live socket on libzmq < 4.3.5 (domain `subscriber:unlimited`): keys of every application are
    /// accepted, keys limited to applications refused with the socket's reason, and unlisted keys refused as anywhere.
    @Test func zapDecisionsOnADomainForUnlimitedKeysOnly() throws {
        let limited = try ZMQCurve.keyPair()
        let unlimited = try ZMQCurve.keyPair()
        let starred = try ZMQCurve.keyPair()
        let stranger = try ZMQCurve.keyPair()
        let list = try CurveAllowList(
            text: """
                subscriber \(limited.publicKey) dash app-1
                subscriber \(unlimited.publicKey) ops
                subscriber \(starred.publicKey) board *
                gateway \(stranger.publicKey) gw-1
                """)
        let domain = ZAPHandler.domain(.subscriber, unlimitedKeysOnly: true)
        #expect(domain == "subscriber:unlimited")
        #expect(ZAPHandler.domain(.subscriber) == "subscriber")
        func decide(_ key: String, domain: String) throws -> (code: String, user: String, decision: ZAPDecision) {
            let request =
                ["1.0", "7", domain, "127.0.0.1", "", "CURVE"].map { Array($0.utf8) } + [try #require(z85Decode(key))]
            let result = ZAPHandler.decide(
                request, allowList: list, limitedKeyRefusal: "live filtering needs libzmq 4.3.5; use catch-up")
            return (
                String(decoding: result.reply[2], as: UTF8.self), String(decoding: result.reply[4], as: UTF8.self),
                result.decision
            )
        }
        let refused = try decide(limited.publicKey, domain: domain)
        #expect(refused.code == "400" && !refused.decision.accepted && refused.user.isEmpty)
        #expect(
            refused.decision.reason == "key limited to applications: live filtering needs libzmq 4.3.5; use catch-up")
        #expect(refused.decision.who == "dash")
        #expect(!refused.decision.reason.contains("app-1"), "applications are credentials: not in the log")
        for (key, name) in [(unlimited.publicKey, "ops"), (starred.publicKey, "board")] {
            let accepted = try decide(key, domain: domain)
            #expect(accepted.code == "200" && accepted.user == name && accepted.decision.accepted)
        }
        // The same limited key on the ordinary subscriber domain (catch-up; the live socket on libzmq >= 4.3.5).
        let ordinary = try decide(limited.publicKey, domain: "subscriber")
        #expect(ordinary.code == "200" && ordinary.user == "dash")
        // Unlisted for the role, or an unknown role with the suffix: refused.
        #expect(try decide(stranger.publicKey, domain: domain).code == "400")
        #expect(try decide(unlimited.publicKey, domain: "gateway:unlimited").code == "400")
        #expect(try decide(unlimited.publicKey, domain: "nobody:unlimited").decision.reason.contains("no known role"))
    }

    @Test func loopbackEndpoints() {
        #expect(CurveServerKeys.isLoopback("tcp://127.0.0.1:5550"))
        #expect(CurveServerKeys.isLoopback("tcp://[::1]:5550"))
        #expect(CurveServerKeys.isLoopback("ipc:///tmp/x"))
        #expect(!CurveServerKeys.isLoopback("tcp://*:5550"))
        #expect(!CurveServerKeys.isLoopback("tcp://0.0.0.0:5550"))
        #expect(!CurveServerKeys.isLoopback("tcp://eth0:5550"))
    }

    func z85Decode(_ text: String) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: 32)
        return zmq_z85_decode(&bytes, text) == nil ? nil : bytes
    }
}
