import Wire

/// Per-gateway-key rate limits at sensor-ingest: a token bucket of records per key. Each key may send `rate` records a
/// second on average, and up to `burst` at once after a pause. Pure: the time is an argument (the service passes its
/// monotonic clock, tests pass numbers), so it is tested without sleeps.
///
/// A batch is taken whole or refused whole, never split (the gateway keeps a refused batch and sends it again). A batch
/// larger than the burst would otherwise never pass: it is taken once the bucket is full, leaving the bucket in debt,
/// so the key's average rate still holds and the next batches wait for the debt to be paid.
///
/// Memory: a bucket that has refilled to the full burst is exactly a bucket never seen, so it is forgotten at the next
/// sweep. Only keys that sent within the last `burst / rate` seconds (plus one sweep interval) are held.
struct GatewayRateLimiter {
    /// Records a second, on average, per key (> 0).
    let rate: Double
    /// Records a key may send at once after a pause (≥ 1).
    let burst: Double
    private(set) var buckets: [String: Bucket] = [:]
    private var lastSweep: Double?

    struct Bucket: Equatable {
        /// Records the key may send now; negative after a batch larger than the burst (a debt).
        var tokens: Double
        /// The time `tokens` was computed for.
        var updatedAt: Double

        /// The bucket at `now`: refilled at `rate`, at most `burst`. A clock that went backwards adds nothing, and
        /// the refill starts again from the new reading (so a step back cannot lock a key out for its length).
        func refilled(at now: Double, rate: Double, burst: Double) -> Bucket {
            guard now > updatedAt else { return Bucket(tokens: tokens, updatedAt: now) }
            return Bucket(tokens: min(burst, tokens + (now - updatedAt) * rate), updatedAt: now)
        }
    }

    enum Decision: Equatable {
        case admitted
        /// Refused whole; the same batch will be admitted after `retryAfter` seconds if the key sends nothing else.
        case refused(retryAfter: Double)

        /// `retryAfter` in whole milliseconds, rounded up (at least 1), for the acknowledgement.
        var retryAfterMilliseconds: Int? {
            guard case .refused(let seconds) = self else { return nil }
            // Less a hair, so that 0.1 s computed as 0.10000000000000071 is 100 ms, not 101.
            return max(1, Int((seconds * 1000 - 1e-6).rounded(.up)))
        }
    }

    init(rate: Double, burst: Double) {
        precondition(rate > 0, "a rate limiter needs a rate above 0")
        self.rate = rate
        self.burst = max(1, burst)
    }

    /// Takes `records` from `key`'s bucket at time `now` (seconds, any origin), or refuses the batch whole.
    mutating func admit(_ records: Int, key: String, now: Double) -> Decision {
        sweep(now: now)
        guard records > 0 else { return .admitted }
        var bucket = buckets[key]?.refilled(at: now, rate: rate, burst: burst) ?? Bucket(tokens: burst, updatedAt: now)
        // A batch larger than the burst needs a full bucket, not more than can ever be there.
        let needed = min(Double(records), burst)
        guard bucket.tokens >= needed else {
            buckets[key] = bucket
            return .refused(retryAfter: (needed - bucket.tokens) / rate)
        }
        bucket.tokens -= Double(records)
        buckets[key] = bucket
        return .admitted
    }

    /// Forgets the buckets that are full again (no different from new ones), at most once per refill time.
    mutating func sweep(now: Double) {
        let interval = max(1, burst / rate)
        if let lastSweep, now >= lastSweep, now - lastSweep < interval { return }
        lastSweep = now
        buckets = buckets.filter { _, bucket in bucket.refilled(at: now, rate: rate, burst: burst).tokens < burst }
    }

    /// The limiter's key for a gateway: its allow-list name (the CurveZMQ User-Id), or, without keys, one key for all
    /// plaintext gateways: a connection's routing id would be no limit at all, since a new connection gets a new one.
    static func key(forGateway name: String?) -> String { name ?? "" }

    /// The acknowledgement of a batch of `records` refused by `admit` for `key` (see `key(forGateway:)`).
    func refusal(key: String, records: Int, retryAfterMs: Int) -> Acknowledgement {
        let who =
            key.isEmpty
            ? "plaintext gateways (no CurveZMQ key; they share one limit)"
            : "gateway key \"\(key)\""
        return .rateLimited(
            reason: """
                rate limit exceeded by \(who): at most \(Self.text(rate)) records/s with bursts of \(Self.text(burst)) \
                (--rate-limit, --rate-burst); the batch of \(records) records is refused whole and nothing of it is stored; send it \
                again after retryAfterMs (\(retryAfterMs) ms)
                """, retryAfterMs: retryAfterMs)
    }

    private static func text(_ number: Double) -> String {
        number == number.rounded() && abs(number) < 1e15 ? String(Int(number)) : String(number)
    }
}
