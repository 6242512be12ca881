import Metrics
import Testing

@Suite("Prometheus text exposition")
struct PrometheusTextTests {
    @Test func familiesRenderWithHelpTypeAndEscapedLabels() {
        let text = PrometheusText.render([
            .single("jobs_total", .counter, "Jobs done,\nall of them \\ every one.", 3),
            MetricFamily(
                name: "queue", help: "Waiting.", kind: .gauge,
                samples: [
                    .init(labels: [("name", "a \"quoted\" \\ name\nwith a line")], value: 1.5)
                ]),
        ])
        #expect(
            text == """
                # HELP jobs_total Jobs done,\\nall of them \\\\ every one.
                # TYPE jobs_total counter
                jobs_total 3
                # HELP queue Waiting.
                # TYPE queue gauge
                queue{name="a \\"quoted\\" \\\\ name\\nwith a line"} 1.5

                """)
    }

    @Test func numbersAsTheFormatWritesThem() {
        #expect(PrometheusText.number(42) == "42")
        #expect(PrometheusText.number(-0.25) == "-0.25")
        #expect(PrometheusText.number(.infinity) == "+Inf")
        #expect(PrometheusText.number(-.infinity) == "-Inf")
        #expect(PrometheusText.number(.nan) == "NaN")
        #expect(PrometheusText.number(1e20) == "1e+20")
    }

    @Test func labelledFamiliesAreSortedByLabelValue() {
        let family = MetricFamily.labelled("events_total", .counter, "Events.", label: "kind", ["b": 2, "a": 1])
        #expect(family.samples.map { $0.labels[0].value } == ["a", "b"])
        #expect(family.samples.map(\.value) == [1, 2])
    }
}

@Suite("Histogram")
struct HistogramTests {
    @Test func bucketsAreCumulativeWithSumAndCount() {
        var histogram = Histogram(bounds: [1, 10])
        for value in [0.5, 1, 3, 10, 11, 500] { histogram.observe(value) }
        let samples = histogram.samples(labels: [("call", "x")])
        #expect(samples.map(\.suffix) == ["_bucket", "_bucket", "_bucket", "_sum", "_count"])
        #expect(samples.map(\.value) == [2, 4, 6, 525.5, 6])
        #expect(samples[0].labels.map(\.value) == ["x", "1"])
        #expect(samples[2].labels.map(\.value) == ["x", "+Inf"])
    }

    @Test func anEmptyHistogramHasEveryBucketAtZero() {
        let samples = Histogram.seconds().samples()
        #expect(samples.count == Histogram.seconds().bounds.count + 3)
        #expect(samples.allSatisfy { $0.value == 0 })
    }
}
