// The device gateway's impact trigger (PROTOCOL §2): whenever the acceleration magnitude passes 2.0 g the gateway
// sends one `impact` record with the peak, the time spent above the threshold and the raw window from 1 s before
// to 2 s after the peak. The simulator and the converters of real recordings both cut impacts with this one
// trigger, so what reaches detection has the same shape whether it was synthesised or recorded.

/// One accelerometer sample: time in seconds (any epoch), acceleration in g on each axis.
public struct AccelerationSample: Sendable, Equatable {
    public var t: Double
    public var x: Double
    public var y: Double
    public var z: Double

    public init(t: Double, x: Double, y: Double, z: Double) {
        self.t = t
        self.x = x
        self.y = y
        self.z = z
    }

    public var magnitude: Double { (x * x + y * y + z * z).squareRoot() }
}

/// What the gateway sends for one triggered event.
public struct TriggeredImpact: Sendable, Equatable {
    /// Time of the peak.
    public var t: Double
    /// Peak magnitude, in g.
    public var peakG: Double
    /// Time spent above the trigger threshold during the event, in milliseconds.
    public var durationMs: Double
    /// The raw window from `windowBefore` before to `windowAfter` after the peak, times relative to the peak.
    public var samples: [AccelerationSample]
}

public struct ImpactTrigger: Sendable {
    public static let gatewayThresholdG = 2.0

    public var thresholdG: Double
    public var windowBefore: Double
    public var windowAfter: Double

    public init(
        thresholdG: Double = ImpactTrigger.gatewayThresholdG, windowBefore: Double = 1.0, windowAfter: Double = 2.0
    ) {
        self.thresholdG = thresholdG
        self.windowBefore = windowBefore
        self.windowAfter = windowAfter
    }

    /// Longest gap between two samples counted as time above the threshold: sparse logs (a few Hz) would
    /// otherwise turn one sample above 2 g into a long "duration".
    public static let maximumSampleGap = 0.05

    /// Cuts impacts from a stream of samples in time order. After a trigger the gateway is busy until the window
    /// after the peak has been captured, so crossings inside that window (bounces, secondary hits) belong to the
    /// same record; a crossing after it starts a new record.
    public func impacts(in samples: [AccelerationSample]) -> [TriggeredImpact] {
        var result: [TriggeredImpact] = []
        var index = 0
        while index < samples.count {
            guard samples[index].magnitude > thresholdG else {
                index += 1
                continue
            }
            // The event lasts from the first crossing until the window after its peak closes; the peak may move
            // later while the signal keeps rising within the window after the first crossing.
            var peakIndex = index
            var end = index
            while end < samples.count, samples[end].t <= samples[peakIndex].t + windowAfter {
                if samples[end].magnitude > samples[peakIndex].magnitude,
                    samples[end].t - samples[index].t <= windowAfter
                {
                    peakIndex = end
                }
                end += 1
            }
            let peak = samples[peakIndex]
            var first = peakIndex
            while first > 0, samples[first - 1].t >= peak.t - windowBefore { first -= 1 }
            let window = samples[first..<end].map { AccelerationSample(t: $0.t - peak.t, x: $0.x, y: $0.y, z: $0.z) }
            result.append(
                TriggeredImpact(
                    t: peak.t, peakG: peak.magnitude,
                    durationMs: secondsAbove(around: peakIndex, in: samples) * 1000,
                    samples: window))
            index = end
        }
        return result
    }

    /// How long the magnitude stayed above the threshold in the one continuous stretch that holds the peak.
    private func secondsAbove(around peakIndex: Int, in samples: [AccelerationSample]) -> Double {
        var first = peakIndex
        while first > 0, samples[first - 1].magnitude > thresholdG { first -= 1 }
        var last = peakIndex
        while last + 1 < samples.count, samples[last + 1].magnitude > thresholdG { last += 1 }
        // Each sample above stands for the time to its neighbours, half on each side, capped for sparse logs.
        var seconds = 0.0
        for i in first...last {
            let before = i > 0 ? min(samples[i].t - samples[i - 1].t, Self.maximumSampleGap) : 0
            let after = i + 1 < samples.count ? min(samples[i + 1].t - samples[i].t, Self.maximumSampleGap) : 0
            seconds += (before + after) / 2
        }
        return seconds
    }
}
