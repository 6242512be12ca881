/// Counts of observations by upper bound, Prometheus-style (cumulative when rendered), with their sum.
public struct Histogram: Sendable, Equatable {
    /// The upper bounds of the buckets, increasing; `+Inf` is implicit.
    public let bounds: [Double]
    /// Observations per bucket (not cumulative); the last one is above every bound.
    private(set) var counts: [UInt64]
    public private(set) var sum = 0.0
    public private(set) var count: UInt64 = 0

    public init(bounds: [Double]) {
        precondition(zip(bounds, bounds.dropFirst()).allSatisfy { $0 < $1 }, "histogram bounds must increase")
        self.bounds = bounds
        counts = Array(repeating: 0, count: bounds.count + 1)
    }

    /// Seconds, from half a millisecond to ten seconds: platform calls and other round trips.
    public static func seconds() -> Histogram {
        Histogram(bounds: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10])
    }

    /// Sizes by powers of ten, 1 to a million: records in a batch.
    public static func sizes() -> Histogram {
        Histogram(bounds: [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000])
    }

    public mutating func observe(_ value: Double) {
        // Buckets are few: a linear search beats a binary one here.
        var index = 0
        while index < bounds.count, value > bounds[index] { index += 1 }
        counts[index] += 1
        sum += value
        count += 1
    }

    /// The family of this histogram alone.
    public func family(_ name: String, help: String) -> MetricFamily {
        MetricFamily(name: name, help: help, kind: .histogram, samples: samples())
    }

    /// The `_bucket` (cumulative, with `le`), `_sum` and `_count` samples, under `labels`.
    public func samples(labels: [(name: String, value: String)] = []) -> [MetricFamily.Sample] {
        var result: [MetricFamily.Sample] = []
        var cumulative: UInt64 = 0
        for (index, bound) in bounds.enumerated() {
            cumulative += counts[index]
            result.append(
                .init(
                    suffix: "_bucket", labels: labels + [("le", PrometheusText.number(bound))],
                    value: Double(cumulative)))
        }
        result.append(.init(suffix: "_bucket", labels: labels + [("le", "+Inf")], value: Double(count)))
        result.append(.init(suffix: "_sum", labels: labels, value: sum))
        result.append(.init(suffix: "_count", labels: labels, value: Double(count)))
        return result
    }
}
