import Testing
import Wire

@testable import IngestService

/// The per-gateway-key token buckets as a value, with the time as numbers: no sleeps.
struct GatewayRateLimiterTests {
    @Test func aKeyMaySendItsBurstAtOnceThenWaitsForTheRefill() {
        var limiter = GatewayRateLimiter(rate: 100, burst: 200)
        #expect(limiter.admit(150, key: "gw-a", now: 10) == .admitted)
        #expect(limiter.admit(50, key: "gw-a", now: 10) == .admitted, "the burst is 200 records")
        let refused = limiter.admit(30, key: "gw-a", now: 10)
        #expect(refused == .refused(retryAfter: 0.3), "30 records come back at 100 a second in 0.3 s")
        #expect(refused.retryAfterMilliseconds == 300)
        #expect(limiter.admit(30, key: "gw-a", now: 10.2).retryAfterMilliseconds == 100, "refilled 20, 10 to go")
        #expect(limiter.admit(30, key: "gw-a", now: 10.3) == .admitted)
        // A long pause refills to the burst, never above it.
        #expect(limiter.admit(200, key: "gw-a", now: 1000) == .admitted)
        #expect(limiter.admit(1, key: "gw-a", now: 1000).retryAfterMilliseconds == 10)
    }

    @Test func keysHaveTheirOwnBuckets() {
        var limiter = GatewayRateLimiter(rate: 10, burst: 10)
        #expect(limiter.admit(10, key: "flood", now: 0) == .admitted)
        #expect(limiter.admit(1, key: "flood", now: 0) != .admitted)
        #expect(limiter.admit(10, key: "quiet", now: 0) == .admitted, "one key's flood does not spend another's")
        #expect(limiter.admit(5, key: "", now: 0) == .admitted, "the plaintext gateways' shared key is one more key")
    }

    @Test func aBatchLargerThanTheBurstPassesWhenTheBucketIsFullAndLeavesADebt() {
        var limiter = GatewayRateLimiter(rate: 100, burst: 100)
        #expect(limiter.admit(10, key: "k", now: 0) == .admitted)
        // 500 records can never fit in a bucket of 100: they wait for a full bucket instead of forever.
        #expect(limiter.admit(500, key: "k", now: 0) == .refused(retryAfter: 0.1))
        #expect(limiter.admit(500, key: "k", now: 0.1) == .admitted)
        // The debt of 400 is paid before anything else goes: the average rate holds.
        #expect(limiter.admit(1, key: "k", now: 0.1).retryAfterMilliseconds == 4010)
        #expect(limiter.admit(1, key: "k", now: 4.11) == .admitted)
    }

    @Test func aClockThatGoesBackwardsAddsNothingAndLocksNobodyOut() {
        var limiter = GatewayRateLimiter(rate: 10, burst: 10)
        #expect(limiter.admit(10, key: "k", now: 100) == .admitted)
        #expect(limiter.admit(1, key: "k", now: 50) == .refused(retryAfter: 0.1), "a step back refills nothing")
        #expect(limiter.admit(1, key: "k", now: 50.1) == .admitted, "the refill starts again from the new reading")
        #expect(limiter.admit(5, key: "k", now: 40) != .admitted)
    }

    @Test func emptyBatchesCostNothing() {
        var limiter = GatewayRateLimiter(rate: 1, burst: 1)
        #expect(limiter.admit(1, key: "k", now: 0) == .admitted)
        #expect(limiter.admit(0, key: "k", now: 0) == .admitted)
    }

    @Test func keysNotSeenForARefillTimeAreForgottenSoMemoryStaysBounded() {
        var limiter = GatewayRateLimiter(rate: 1000, burst: 1000)
        for index in 0..<10_000 {
            _ = limiter.admit(10, key: "key-\(index)", now: 0.5)
        }
        #expect(limiter.buckets.count == 10_000)
        // A second later every one of them is full again, as good as new: the next sweep drops them all.
        _ = limiter.admit(10, key: "busy", now: 1.6)
        #expect(limiter.buckets.count == 1)
        #expect(limiter.buckets["busy"] != nil)
        // A key forgotten starts with a full bucket, as it would have had anyway.
        #expect(limiter.admit(1000, key: "key-7", now: 1.6) == .admitted)
        // At the next sweep a key that is not full again yet is kept.
        #expect(limiter.admit(600, key: "late", now: 2.3) == .admitted)
        _ = limiter.admit(1, key: "other", now: 2.65)
        #expect(limiter.buckets["late"] != nil, "400 + 350 records: not full again")
        #expect(limiter.buckets["key-7"] == nil && limiter.buckets["busy"] == nil, "full again since 1.6 s")
        _ = limiter.admit(1, key: "other", now: 10)
        #expect(Set(limiter.buckets.keys) == ["other"])
    }

    @Test func theRefusalIsAMachineReadableAckNamingTheKeyTheLimitAndTheWait() throws {
        let limiter = GatewayRateLimiter(rate: 1000, burst: 2000)
        let ack = limiter.refusal(key: "depot-7", records: 500, retryAfterMs: 250)
        #expect(ack.accepted == 0)
        #expect(ack.rejected.count == 1)
        let rejection = try #require(ack.rejected.first)
        #expect(rejection.index == -1 && rejection.field == "rate")
        #expect(
            rejection.reason.contains("gateway key \"depot-7\"") && rejection.reason.contains("1000 records/s")
                && rejection.reason.contains("bursts of 2000") && rejection.reason.contains("250 ms"),
            "\(rejection.reason)")
        #expect(ack.retryAfterMs == 250 && ack.rateLimitRetryAfterMs == 250)
        let plaintext = limiter.refusal(key: GatewayRateLimiter.key(forGateway: nil), records: 1, retryAfterMs: 1)
        #expect(plaintext.rejected.first?.reason.contains("plaintext gateways") == true)
        // On the wire, in both content types.
        for type in ContentType.allCases {
            #expect(try Acknowledgement.decode(ack.encode(as: type), contentType: type) == ack)
        }
        let json = String(decoding: ack.encode(as: .json), as: UTF8.self)
        #expect(
            json.hasPrefix("{\"accepted\":0,\"rejected\":[{\"index\":-1,\"field\":\"rate\",")
                && json.hasSuffix(",\"retryAfterMs\":250}"),
            "\(json)")
    }

    @Test func gatewayBatchAsksTheLimitWithTheRecordCountBeforeReadingTheRecords() throws {
        let records = Records.drive(user: "u", count: 7)
        for type in ContentType.allCases {
            var asked: [Int] = []
            let message = [Array("gw".utf8), Array("b1".utf8), type.frame, RecordBatch.encodeBatch(records, as: type)]
            let refused = GatewayBatch(
                message: message, applications: ["app-1"], maximumBatch: 100,
                devices: (
                    { _ in
                        Issue.record("a refused batch admitted a device")
                        return ([], [])
                    }, { _ in "" }
                ),
                rateLimit: { count in
                    asked.append(count)
                    return .rateLimited(reason: "slow down", retryAfterMs: 40)
                })
            #expect(asked == [7], "\(type)")
            #expect(refused.rateLimited && refused.records.isEmpty && refused.unreadable == nil)
            #expect(refused.acknowledgement.rateLimitRetryAfterMs == 40)
            let reply = try Acknowledgement.decode(refused.reply[2], contentType: type)
            #expect(reply.rejected.first?.field == "rate" && reply.retryAfterMs == 40)

            let admitted = GatewayBatch(
                message: message, applications: ["app-1"], maximumBatch: 100,
                rateLimit: { _ in nil })
            #expect(
                !admitted.rateLimited && admitted.records.count == 7 && admitted.acknowledgement.retryAfterMs == nil)
        }
    }

    @Test func recordCountsAreReadWithoutDecoding() {
        func json(_ text: String) -> Int? { GatewayBatch.recordCount(Array(text.utf8), contentType: .json) }
        #expect(json("[]") == 0)
        #expect(json(" \n[ ] ") == 0)
        #expect(json("[1]") == 1)
        #expect(
            json(#"[{"a":[1,2,{"b":","}]}, "x,]\"", [3,4] ,null]"#) == 4, "commas and brackets in strings and nesting")
        #expect(json("{}") == nil)
        #expect(json("[1,2") == nil)
        for count in [0, 5, 15, 16, 300, 70_000] {
            let body = RecordBatch.encodeBatch(Records.drive(user: "u", count: count), as: .msgpack)
            #expect(GatewayBatch.recordCount(body, contentType: .msgpack) == count)
            #expect(
                GatewayBatch.recordCount(
                    RecordBatch.encodeBatch(Records.drive(user: "u", count: min(count, 300)), as: .json),
                    contentType: .json) == min(count, 300))
        }
        #expect(GatewayBatch.recordCount([0x81], contentType: .msgpack) == nil, "a map is not a batch")
        #expect(GatewayBatch.recordCount([0xdc, 0x01], contentType: .msgpack) == nil, "a cut header")
    }
}
