/// The `seq` values one device's records were taken with, for duplicate detection in a few hundred bytes instead of
/// a set: the highest value taken and a bitmap of the `size` values up to it. A gateway numbers a device's records
/// consecutively, so they arrive mostly increasing and only a little out of order; a repeated value within `size`
/// of the highest is found exactly.
///
/// Values further behind than that are not remembered:
/// - `contains` says no, so such a record is judged by its time instead (the reorder stage rejects it as late when
///   records after it were already applied, which is what a far-behind repeat almost always is);
/// - `insert` of one (a record that was in fact taken, its time being fine) means the device's numbering restarted,
///   say with a new gateway session: the window starts again from it, forgetting the old numbers.
struct SequenceWindow: Sendable, Equatable {
    /// How many values, counting down from the highest, are remembered.
    let size: Int
    /// The highest value taken since the numbering last (re)started.
    private(set) var highest: UInt64?
    /// A ring of bits: value `v` at bit `v % (64 · words.count)`; valid for the `size` values up to `highest`.
    /// Allocated with the first value, so a device that never sends a `seq` holds none.
    private var words: [UInt64] = []

    init(size: Int) {
        self.size = max(1, size)
    }

    private var ringBits: UInt64 { UInt64(words.count) * 64 }

    func contains(_ seq: UInt64) -> Bool {
        guard let highest, seq <= highest, highest - seq < UInt64(size) else { return false }
        return bit(seq)
    }

    mutating func insert(_ seq: UInt64) {
        if words.isEmpty { words = Array(repeating: 0, count: (size + 63) / 64) }
        guard let current = highest else {
            highest = seq
            set(seq)
            return
        }
        if seq > current {
            // The values skipped over were not taken: their bits may still hold values a ring older.
            if seq - current >= ringBits {
                clearAll()
            } else {
                var skipped = current &+ 1
                while skipped < seq {
                    clear(skipped)
                    skipped += 1
                }
            }
            highest = seq
        } else if current - seq >= UInt64(size) {
            // Far behind the highest and yet taken: the numbering restarted.
            clearAll()
            highest = seq
        }
        set(seq)
    }

    /// The remembered values, ascending.
    var values: [UInt64] {
        var values: [UInt64] = []
        forEachRun { first, count in values.append(contentsOf: first..<first + count) }
        return values
    }

    /// The remembered values as runs of consecutive ones, `[first, count, first, count, …]`, ascending: a gateway
    /// numbers a device's records consecutively, so they are usually one run (two numbers, where the values would
    /// be up to `size`; checkpoints hold them so).
    var runs: [UInt64] {
        var runs: [UInt64] = []
        forEachRun { first, count in
            runs.append(first)
            runs.append(count)
        }
        return runs
    }

    private func forEachRun(_ body: (_ first: UInt64, _ count: UInt64) -> Void) {
        guard let highest else { return }
        var value = highest - min(highest, UInt64(size - 1))
        var runStart: UInt64?
        while true {
            if bit(value) {
                if runStart == nil { runStart = value }
            } else if let start = runStart {
                body(start, value - start)
                runStart = nil
            }
            if value == highest { break }
            value += 1
        }
        if let start = runStart { body(start, highest - start + 1) }
    }

    private func bit(_ value: UInt64) -> Bool {
        let position = value % ringBits
        return words[Int(position / 64)] & (1 << (position % 64)) != 0
    }

    private mutating func set(_ value: UInt64) {
        let position = value % ringBits
        words[Int(position / 64)] |= 1 << (position % 64)
    }

    private mutating func clear(_ value: UInt64) {
        let position = value % ringBits
        words[Int(position / 64)] &= ~(1 << (position % 64))
    }

    private mutating func clearAll() {
        for index in words.indices { words[index] = 0 }
    }
}
