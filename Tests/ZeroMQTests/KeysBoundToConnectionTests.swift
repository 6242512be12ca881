import CZeroMQ
import Foundation
import RoadSaveTestKit
import SystemKit
import Testing
import ZeroMQ

/// A message on a CurveZMQ server socket answers to its connection's key as the allow-list in force lists it
/// (`CurveAllowList.entry(for:role:)`), not to the name the key had at the handshake: the lookup as a value, the
/// ZAP reply's metadata, and a real connection whose key is replaced under its name by a reload.
@Suite("KeysBoundToConnection", .serialized, .timeLimit(.minutes(1)))
struct KeysBoundToConnectionTests {
    @Test func theEntryIsTheKeysAndMustStillCarryTheNameItWasAdmittedUnder() throws {
        let k1 = try ZMQCurve.keyPair().publicKey
        let k2 = try ZMQCurve.keyPair().publicKey
        let admitted = CurvePeer(name: "gw-1", publicKey: k1)
        let listed = try CurveAllowList(text: "gateway \(k1) gw-1 app-1\noperator \(k2) alice")
        #expect(try listed.entry(for: admitted, role: .gateway).applications == ["app-1"])

        func refusal(_ list: CurveAllowList, _ peer: CurvePeer?, role: CurveRole = .gateway) -> CurveKeyRefusal? {
            do {
                _ = try list.entry(for: peer, role: role)
                return nil
            } catch {
                return error
            }
        }
        // The line changed to another key under the same name, every application: K1 gets nothing of it.
        let replaced = try CurveAllowList(text: "gateway \(k2) gw-1")
        let replacedRefusal = try #require(refusal(replaced, admitted))
        #expect(
            replacedRefusal
                == CurveKeyRefusal(
                    role: .gateway, name: "gw-1",
                    message:
                        "gateway key \"gw-1\" is no longer in the allow-list (removed or replaced since this connection's handshake)"
                ))
        // Removed altogether; listed in another role only; listed under another name; a message without the metadata.
        #expect(
            refusal(try CurveAllowList(text: ""), admitted)?.message.contains("no longer in the allow-list") == true)
        #expect(refusal(try CurveAllowList(text: "operator \(k1) gw-1"), admitted) != nil)
        let renamed = try #require(refusal(try CurveAllowList(text: "gateway \(k1) gw-9"), admitted))
        #expect(
            renamed.message
                == "gateway key \"gw-1\" is listed under another name since this connection's handshake: connect again")
        #expect(refusal(listed, nil)?.message == "gateway key unknown: the message carries no key from the handshake")
        // Each role words it for itself, and no refusal shows key material.
        #expect(
            refusal(replaced, CurvePeer(name: "alice", publicKey: k1), role: .operator)?.message
                .hasPrefix("operator key \"alice\" is no longer") == true)
        for text in [replacedRefusal.message, renamed.message] {
            #expect(!text.contains(k1) && !text.contains(k2))
        }
    }

    @Test func anAcceptedHandshakeCarriesTheKeyAsMetadata() throws {
        let client = try ZMQCurve.keyPair()
        let list = try CurveAllowList(text: "gateway \(client.publicKey) gw-1")
        var binaryKey = [UInt8](repeating: 0, count: 32)
        try #require(zmq_z85_decode(&binaryKey, client.publicKey) != nil)
        let request = ["1.0", "7", "gateway", "127.0.0.1", "", "CURVE"].map { Array($0.utf8) } + [binaryKey]
        let accepted = ZAPHandler.decide(request, allowList: list)
        #expect(accepted.reply.last == ZAPHandler.metadata([(ZAPHandler.publicKeyProperty, client.publicKey)]))
        let refused = ZAPHandler.decide(request, allowList: try CurveAllowList(text: ""))
        #expect(refused.reply.last == [], "a refused key gets no metadata")
    }

    /// One message received by the server: its body, who libzmq says sent it, and what the list in force says of them.
    struct Received: Sendable {
        var body: String
        var peer: CurvePeer?
        var entryName: String?
        var refusal: String?
    }

    /// A reactor with a ZAP handler and a ROUTER secured for gateways, recording every message.
    final class Server: @unchecked Sendable { // Sendable: `received` is locked; the rest is set before use
        let context: ZMQContext
        let reactor: Reactor
        let received = Locked<[Received]>([])
        let endpoint = Locked("")

        init(keys: (publicKey: String, secretKey: String), allowList: String) async throws {
            context = try ZMQContext()
            reactor = Reactor(name: "keyed", context: context)
            reactor.start { [received, endpoint] loop in
                let zap = try ZAPHandler(loop: loop, allowListPath: allowList) { _ in }
                loop.setValue(zap)
                let socket = try loop.socket(.router)
                try zap.secure(socket, role: .gateway, secretKey: keys.secretKey)
                try socket.bind("tcp://127.0.0.1:*")
                endpoint.withLock { $0 = socket.lastEndpoint }
                loop.onReadable(socket) { socket in
                    socket.drain(limit: 100, failed: { _ in }) { frames in
                        let entry = zap.entry(for: socket.lastPeer, role: .gateway)
                        let message = Received(
                            body: String(decoding: frames.last ?? [], as: UTF8.self), peer: socket.lastPeer,
                            entryName: try? entry.get().name,
                            refusal: { if case .failure(let refusal) = entry { refusal.message } else { nil } }())
                        received.withLock { $0.append(message) }
                        return true
                    }
                }
            }
            _ = try await reactor.run { _ in }
        }

        func reload() async throws {
            _ = try await reactor.run { loop in try loop.value(ZAPHandler.self)!.reload() }
        }

        func waitFor(_ count: Int) async -> Bool {
            await eventually(timeout: 60) { received.current.count >= count }
        }

        func stop() async {
            reactor.stop()
            _ = await reactor.finished()
            context.terminate()
        }
    }

    /// A CURVE DEALER on a reactor of its own: one connection, kept open between sends.
    final class Client: @unchecked Sendable { // Sendable: the socket is touched only on the reactor
        let context: ZMQContext
        let reactor: Reactor

        init(_ keys: CurveClientKeys, endpoint: String) async throws {
            context = try ZMQContext()
            reactor = Reactor(name: "client", context: context)
            reactor.start { loop in
                let socket = try loop.socket(.dealer)
                try socket.setCurveClient(keys)
                try socket.connect(endpoint)
                loop.setValue(socket)
            }
            _ = try await reactor.run { _ in }
        }

        func send(_ body: String) async throws {
            _ = try await reactor.run { loop in try loop.value(ZMQSocket.self)!.send([body]) }
        }

        func stop() async {
            reactor.stop()
            _ = await reactor.finished()
            context.terminate()
        }
    }

    @Test func aKeyReplacedUnderItsNameIsRefusedOnTheConnectionItHasOpen() async throws {
        let serverKeys = try ZMQCurve.keyPair()
        let k1 = try ZMQCurve.keyPair()
        let k2 = try ZMQCurve.keyPair()
        let list = FileManager.default.temporaryDirectory.appendingPathComponent("allow-\(UUID().uuidString.prefix(8))")
            .path
        try "gateway \(k1.publicKey) gw-1 app-1\n".write(toFile: list, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: list) }
        let server = try await Server(keys: serverKeys, allowList: list)
        let first = try await Client(
            CurveClientKeys(
                serverPublicKey: serverKeys.publicKey, publicKey: k1.publicKey,
                secretKey: k1.secretKey), endpoint: server.endpoint.current)
        try await first.send("before")
        try #require(await server.waitFor(1))

        try "gateway \(k2.publicKey) gw-1\n".write(toFile: list, atomically: true, encoding: .utf8)
        try await server.reload()
        try await first.send("after")
        try #require(await server.waitFor(2))
        // The name's new key connects and is served under the same name.
        let second = try await Client(
            CurveClientKeys(
                serverPublicKey: serverKeys.publicKey, publicKey: k2.publicKey,
                secretKey: k2.secretKey), endpoint: server.endpoint.current)
        try await second.send("new key")
        try #require(await server.waitFor(3))
        for client in [first, second] { await client.stop() }
        await server.stop()

        let received = server.received.current
        #expect(received.map(\.body) == ["before", "after", "new key"])
        // libzmq hands every message the key the handshake proved, next to the name.
        #expect(received[0].peer == CurvePeer(name: "gw-1", publicKey: k1.publicKey))
        #expect(received[1].peer == CurvePeer(name: "gw-1", publicKey: k1.publicKey), "the same connection")
        #expect(received[0].entryName == "gw-1" && received[0].refusal == nil)
        #expect(received[1].entryName == nil)
        #expect(
            received[1].refusal?.contains("gateway key \"gw-1\" is no longer in the allow-list") == true,
            "\(received[1])")
        #expect(received[2].peer == CurvePeer(name: "gw-1", publicKey: k2.publicKey) && received[2].entryName == "gw-1")
    }
}
