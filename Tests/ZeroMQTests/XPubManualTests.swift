import Foundation
import Testing
import ZeroMQ

@Suite("XPUB manual", .timeLimit(.minutes(1)))
struct XPubManualTests {
    @Test("ZMQ_XPUB_MANUAL: the subscription comes up with its metadata and only what the application applies is sent")
    func manualSubscriptions() async throws {
        let (message, received) = try await onThread {
            () -> ((frames: [[UInt8]], properties: [String: String])?, [[String]]) in
            let context = try ZMQContext()
            defer { context.terminate() }
            let xpub = try ZMQSocket(context, .xpub)
            defer { xpub.close() }
            try xpub.setXPubManual(true)
            try xpub.setReceiveTimeout(milliseconds: 5000)
            let endpoint = try bindAny(xpub, .tcp, "xpub-manual")
            let sub = try ZMQSocket(context, .sub)
            defer { sub.close() }
            try sub.setReceiveTimeout(milliseconds: 5000)
            try sub.subscribe("")
            try sub.connect(endpoint)

            // The SUB asked for everything; the application applies "b." instead.
            let message = try xpub.receive(properties: ["Socket-Type", "Peer-Address", "User-Id"])
            try xpub.subscribe("b.")
            try xpub.send(["a.1", "not applied"])
            try xpub.send(["b.1", "applied"])
            try xpub.send(["c.1", "not applied"])
            try xpub.send(["b.2", "applied"])
            var received: [[String]] = []
            while received.count < 2, let frames = try sub.receive() { received.append(text(frames)!) }
            // ZMQ_UNSUBSCRIBE applies to the connection of the last message received too.
            try sub.subscribe("z")
            let second = try xpub.receive()
            try require(second == [[1] + bytes("z")], "second subscription \(String(describing: second))")
            try xpub.unsubscribe("b.")
            try xpub.subscribe("end")
            try xpub.send(["b.3", "after the unsubscription"])
            try xpub.send(["end"])
            received.append(text(try sub.receive())!)
            return (message, received)
        }
        #expect(message?.frames == [[1]])
        #expect(message?.properties["Socket-Type"] == "SUB")
        #expect(message?.properties["Peer-Address"] == "127.0.0.1")
        #expect(message?.properties["User-Id"] == nil)
        #expect(received == [["b.1", "applied"], ["b.2", "applied"], ["end"]])
    }

    @Test("ZAP reply metadata: ZMTP properties")
    func zapMetadata() {
        #expect(
            ZAPHandler.metadata([("Connection", "12")]) == [10] + Array("Connection".utf8) + [0, 0, 0, 2]
                + Array("12".utf8))
        #expect(ZAPHandler.metadata([]) == [])
    }
}
