import Testing

@testable import Wire

@Suite("Acknowledgements")
struct AcknowledgementTests {
    static let ack = Acknowledgement(
        accepted: 2,
        rejected: [
            Rejection(index: 1, field: "lat", reason: "91.0 is outside -90…90"),
            Rejection(index: 4, field: "(record)", reason: "expected a map, found a string"),
        ])

    @Test func jsonIsTheContractShape() {
        #expect(
            String(decoding: Self.ack.encode(as: .json), as: UTF8.self)
                == #"{"accepted":2,"rejected":[{"index":1,"field":"lat","reason":"91.0 is outside -90…90"},"#
                + #"{"index":4,"field":"(record)","reason":"expected a map, found a string"}]}"#)
        #expect(
            String(decoding: Acknowledgement(accepted: 7).encode(as: .json), as: UTF8.self)
                == #"{"accepted":7,"rejected":[]}"#)
    }

    @Test func msgpackIsTheSameMap() {
        // {"accepted": 7, "rejected": []}: fixmap 2, fixstr 8 "accepted", 7, fixstr 8 "rejected", fixarray 0
        #expect(
            Acknowledgement(accepted: 7).encode(as: .msgpack)
                == [0x82, 0xA8] + Array("accepted".utf8) + [0x07, 0xA8] + Array("rejected".utf8) + [0x90])
    }

    @Test("the all-accepted answer, packed without its document, is the bytes the document packs to")
    func allAcceptedPackedDirectly() {
        for accepted in [0, 7, 127, 128, 255, 256, 65_535, 65_536, 10_000_000, Int(Int32.max) + 1] {
            let ack = Acknowledgement(accepted: accepted)
            #expect(ack.encode(as: .msgpack) == MessagePack.encode(ack.value), "accepted \(accepted)")
        }
    }

    @Test(arguments: ContentType.allCases)
    func roundTrips(_ contentType: ContentType) throws {
        #expect(try Acknowledgement.decode(Self.ack.encode(as: contentType), contentType: contentType) == Self.ack)
        let unreadable = Acknowledgement.unreadable(WireError(.malformed, "not JSON", offset: 3))
        #expect(try Acknowledgement.decode(unreadable.encode(as: contentType), contentType: contentType) == unreadable)
    }

    @Test func unreadableBatchHasIndexMinusOne() {
        let ack = Acknowledgement.unreadable(
            WireError(.unexpectedShape, "a batch must be an array of records", offset: 0))
        #expect(ack.accepted == 0)
        #expect(ack.rejected.count == 1)
        #expect(ack.rejected.first?.index == -1)
        #expect(ack.rejected.first?.field == "(batch)")
        #expect(ack.rejected.first?.reason.contains("array") == true)
    }

    /// Refusals that pass (the rate limit, a journal that could not store the batch) say when to send the batch
    /// again; every other rejection is final and has no such time.
    @Test(arguments: ContentType.allCases)
    func refusalsThatPassSayWhenToSendAgain(_ contentType: ContentType) throws {
        let store = Acknowledgement.storeFailed(
            reason: "the journal could not store the batch (disk full)", retryAfterMs: 1000)
        #expect(
            String(decoding: store.encode(as: .json), as: UTF8.self)
                == #"{"accepted":0,"rejected":[{"index":-1,"field":"store","reason":"the journal could not store the batch (disk full)"}],"retryAfterMs":1000}"#
        )
        let rate = Acknowledgement.rateLimited(reason: "over 10 records/s", retryAfterMs: 250)
        for ack in [store, rate] {
            let decoded = try Acknowledgement.decode(ack.encode(as: contentType), contentType: contentType)
            #expect(decoded == ack)
        }
        #expect(store.resendAfterMs == 1000 && store.rateLimitRetryAfterMs == nil)
        #expect(rate.resendAfterMs == 250 && rate.rateLimitRetryAfterMs == 250)
        // A final rejection that happens to carry a time is still final.
        var final = Acknowledgement.unreadable(reason: "not an array")
        final.retryAfterMs = 5
        #expect(final.resendAfterMs == nil && Self.ack.resendAfterMs == nil)
    }

    @Test func decodesWhatOthersWrite() throws {
        // White space, other member order, unknown members, numbers with a fraction of zero.
        let text =
            #" { "rejected" : [ { "reason": "missing", "field": "user", "index": 0, "hint": 1 } ], "batch": "b1", "accepted": 3.0 } "#
        #expect(
            try Acknowledgement.decode(Array(text.utf8), contentType: .json)
                == Acknowledgement(accepted: 3, rejected: [Rejection(index: 0, field: "user", reason: "missing")]))
    }

    @Test func rejectsWrongShapes() {
        let cases: [(String, String)] = [
            (#"[]"#, ""),
            (#"{"rejected": []}"#, "accepted"),
            (#"{"accepted": -1, "rejected": []}"#, "accepted"),
            (#"{"accepted": 1.5, "rejected": []}"#, "accepted"),
            (#"{"accepted": "2", "rejected": []}"#, "accepted"),
            (#"{"accepted": 2}"#, "rejected"),
            (#"{"accepted": 2, "rejected": {}}"#, "rejected"),
            (#"{"accepted": 2, "rejected": [3]}"#, "rejected[0]"),
            (#"{"accepted": 2, "rejected": [{"index": -2, "field": "a", "reason": "b"}]}"#, "rejected[0].index"),
            (#"{"accepted": 2, "rejected": [{"index": 0, "field": 1, "reason": "b"}]}"#, "rejected[0].field"),
            (#"{"accepted": 2, "rejected": [{"index": 0, "field": "a"}]}"#, "rejected[0].reason"),
        ]
        for (text, path) in cases {
            do {
                let ack = try Acknowledgement.decode(Array(text.utf8), contentType: .json)
                Issue.record("\(text) decoded to \(ack)")
            } catch {
                #expect(error.code == .unexpectedShape, "\(text): \(error)")
                #expect(error.path == path, "\(text): \(error)")
            }
        }
        #expect(throws: WireError.self) { try Acknowledgement.decode([0xC1], contentType: .msgpack) }
    }
}
