// With `disorder` the stream looks like a gateway's: records up to 3 s late, ~1% twice with the same seq, but the same
// set of (user, seq) as the ordered stream.

import Foundation
import Simulator
import Testing

@Suite struct Disorder {
    @Test func shuffledAndDuplicatedButTheSameRecords() {
        var options = SimulationOptions(devices: 3, seed: 17, durationMinutes: 15)
        let ordered = simulate(options).lines
        options.disorder = true
        let (shuffled, truth) = simulate(options)
        let parsed = shuffled.compactMap(Rec.init)
        #expect(parsed.count == shuffled.count)
        #expect(truth == simulate(SimulationOptions(devices: 3, seed: 17, durationMinutes: 15)).truth)

        // Same set of (user, seq), the duplicates identical to their originals.
        #expect(Set(shuffled) == Set(ordered))
        #expect(shuffled.count > ordered.count)
        let keys = parsed.map { "\($0.user)#\($0.seq)" }
        #expect(Set(keys).count == ordered.count)
        let duplicates = shuffled.count - ordered.count
        #expect(Double(duplicates) / Double(ordered.count) > 0.003 && Double(duplicates) / Double(ordered.count) < 0.03)

        // Out of order within a device, but never by more than 3 s.
        var outOfOrder = 0
        for device in truth {
            let records = parsed.filter { $0.user == device.user }
            #expect(records.first?.kind == "capabilities")
            var latest = -Double.infinity
            for record in records {
                if record.t < latest { outOfOrder += 1 }
                #expect(record.t >= latest - 3.0, "\(record.line)")
                latest = max(latest, record.t)
            }
        }
        #expect(outOfOrder > 100)
    }
}
