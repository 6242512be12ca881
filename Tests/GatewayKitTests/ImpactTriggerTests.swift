import Testing

@testable import GatewayKit

/// A 100 Hz stream at rest (1 g on z) with `pulses` of (start, seconds, g on x) added.
private func stream(seconds: Double, pulses: [(start: Double, length: Double, g: Double)]) -> [AccelerationSample] {
    (0..<Int(seconds * 100)).map { i in
        let t = Double(i) / 100
        let x = pulses.first { t >= $0.start && t < $0.start + $0.length }?.g ?? 0
        return AccelerationSample(t: t, x: x, y: 0, z: 1)
    }
}

@Test func quietStreamTriggersNothing() {
    #expect(ImpactTrigger().impacts(in: stream(seconds: 10, pulses: [])).isEmpty)
}

@Test func onePulseGivesOneImpactWithPeakDurationAndWindow() throws {
    let impacts = ImpactTrigger().impacts(in: stream(seconds: 10, pulses: [(5.0, 0.08, 40)]))
    let impact = try #require(impacts.count == 1 ? impacts.first : nil)
    #expect(abs(impact.t - 5.0) < 0.011)
    #expect(abs(impact.peakG - (40.0 * 40 + 1).squareRoot()) < 1e-9)
    #expect(abs(impact.durationMs - 80) < 11)
    #expect(impact.samples.first!.t >= -1.0 && impact.samples.first!.t < -0.98)
    #expect(impact.samples.last!.t <= 2.0 && impact.samples.last!.t > 1.98)
}

@Test func bounceInsideTheWindowIsTheSameRecordButALaterHitIsNot() {
    let impacts = ImpactTrigger().impacts(
        in: stream(seconds: 12, pulses: [(2.0, 0.02, 20), (2.4, 0.02, 5), (6.0, 0.03, 8)]))
    #expect(impacts.count == 2)
    #expect(impacts.map { Int($0.t.rounded()) } == [2, 6])
}
