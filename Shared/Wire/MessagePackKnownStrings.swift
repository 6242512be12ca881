#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Field names and enumerated values that every record, ack and envelope repeats. Matching them by length and bytes
/// is cheaper than validating UTF-8 and building a `String` each time; the strings returned are literals (small or
/// immortal: no allocation, no reference counting). Generated from one list; keep it sorted by length.
enum KnownStrings {
    @inline(__always)
    private static func equal(_ bytes: UnsafeBufferPointer<UInt8>, _ literal: StaticString) -> Bool {
        memcmp(bytes.baseAddress!, literal.utf8Start, bytes.count) == 0
    }

    static func lookup(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        switch bytes.count {
        case 1:
            if equal(bytes, "t") { return "t" }
        case 3:
            if equal(bytes, "app") { return "app" }
            if equal(bytes, "seq") { return "seq" }
            if equal(bytes, "lat") { return "lat" }
            if equal(bytes, "lon") { return "lon" }
            if equal(bytes, "low") { return "low" }
        case 4:
            if equal(bytes, "kind") { return "kind" }
            if equal(bytes, "user") { return "user" }
            if equal(bytes, "hacc") { return "hacc" }
            if equal(bytes, "high") { return "high" }
        case 5:
            if equal(bytes, "speed") { return "speed" }
            if equal(bytes, "steps") { return "steps" }
            if equal(bytes, "peakG") { return "peakG" }
            if equal(bytes, "index") { return "index" }
            if equal(bytes, "field") { return "field" }
            if equal(bytes, "event") { return "event" }
        case 6:
            if equal(bytes, "course") { return "course" }
            if equal(bytes, "impact") { return "impact" }
            if equal(bytes, "medium") { return "medium" }
            if equal(bytes, "reason") { return "reason" }
            if equal(bytes, "tripID") { return "tripID" }
            if equal(bytes, "isTest") { return "isTest" }
        case 7:
            if equal(bytes, "samples") { return "samples" }
            if equal(bytes, "walking") { return "walking" }
            if equal(bytes, "running") { return "running" }
            if equal(bytes, "cycling") { return "cycling" }
            if equal(bytes, "unknown") { return "unknown" }
            if equal(bytes, "endDate") { return "endDate" }
            if equal(bytes, "crashID") { return "crashID" }
            if equal(bytes, "dataGap") { return "dataGap" }
        case 8:
            if equal(bytes, "activity") { return "activity" }
            if equal(bytes, "location") { return "location" }
            if equal(bytes, "accepted") { return "accepted" }
            if equal(bytes, "rejected") { return "rejected" }
            if equal(bytes, "latitude") { return "latitude" }
        case 9:
            if equal(bytes, "startDate") { return "startDate" }
            if equal(bytes, "endReason") { return "endReason" }
            if equal(bytes, "longitude") { return "longitude" }
            if equal(bytes, "stopDelay") { return "stopDelay" }
        case 10:
            if equal(bytes, "confidence") { return "confidence" }
            if equal(bytes, "durationMs") { return "durationMs" }
            if equal(bytes, "automotive") { return "automotive" }
            if equal(bytes, "stationary") { return "stationary" }
            if equal(bytes, "detectedAt") { return "detectedAt" }
            if equal(bytes, "tripDidEnd") { return "tripDidEnd" }
        case 12:
            if equal(bytes, "capabilities") { return "capabilities" }
            if equal(bytes, "tripDidStart") { return "tripDidStart" }
        case 13:
            if equal(bytes, "crashDetected") { return "crashDetected" }
        case 14:
            if equal(bytes, "distanceMetres") { return "distanceMetres" }
        case 15:
            if equal(bytes, "detectionPaused") { return "detectionPaused" }
        case 17:
            if equal(bytes, "activityAvailable") { return "activityAvailable" }
            if equal(bytes, "monitoringStopped") { return "monitoringStopped" }
        case 18:
            if equal(bytes, "pedometerAvailable") { return "pedometerAvailable" }
        case 20:
            if equal(bytes, "detectionModeChanged") { return "detectionModeChanged" }
        default: break
        }
        return nil
    }
}
