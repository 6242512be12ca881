/// One metric as Prometheus scrapes it: a name, its help text, its type and its samples (one per label set).
public struct MetricFamily: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case counter, gauge, histogram
    }

    /// One value of the family. `suffix` is "_bucket", "_sum" or "_count" for a histogram's parts, empty otherwise.
    public struct Sample: Sendable, Equatable {
        public var suffix: String
        public var labels: [(name: String, value: String)]
        public var value: Double

        public init(suffix: String = "", labels: [(name: String, value: String)] = [], value: Double) {
            self.suffix = suffix
            self.labels = labels
            self.value = value
        }

        public static func == (a: Sample, b: Sample) -> Bool {
            a.suffix == b.suffix && a.value == b.value
                && a.labels.map(\.name) == b.labels.map(\.name) && a.labels.map(\.value) == b.labels.map(\.value)
        }
    }

    public var name: String
    public var help: String
    public var kind: Kind
    public var samples: [Sample]

    public init(name: String, help: String, kind: Kind, samples: [Sample]) {
        self.name = name
        self.help = help
        self.kind = kind
        self.samples = samples
    }

    /// A counter or gauge with one unlabelled value.
    public static func single(_ name: String, _ kind: Kind, _ help: String, _ value: Double) -> MetricFamily {
        MetricFamily(name: name, help: help, kind: kind, samples: [Sample(value: value)])
    }

    public static func single(_ name: String, _ kind: Kind, _ help: String, _ value: Int) -> MetricFamily {
        single(name, kind, help, Double(value))
    }

    /// A counter or gauge with one label, a sample per value of it (in the label's order, so scrapes are stable).
    public static func labelled(
        _ name: String, _ kind: Kind, _ help: String, label: String,
        _ values: [String: Int]
    ) -> MetricFamily {
        MetricFamily(
            name: name, help: help, kind: kind,
            samples: values.sorted { $0.key < $1.key }.map {
                Sample(labels: [(label, $0.key)], value: Double($0.value))
            })
    }
}
