// Times written as text in the recordings' CSV files: ISO 8601 with a zone (CBS), or a local time without one whose
// zone only the dataset's documentation gives (Aalto TrafficSense: EEST; Go!Track: UTC-3). One parser for all, so a
// time reads the same whichever converter meets it.

public enum RecordingTime {
    /// `YYYY-MM-DD(T| )HH:MM:SS[.fff](Z|±HH:MM)` → Unix seconds; a time without a zone is read as UTC. Nil for
    /// anything else.
    public static func seconds(from text: Substring) -> Double? {
        guard let parsed = parse(text) else { return nil }
        return Double(parsed.wholeSeconds - (parsed.zoneOffset ?? 0)) + parsed.fraction
    }

    /// A local time without a zone (`YYYY-MM-DD HH:MM:SS[.fff]`) in a zone `utcOffset` seconds east of UTC → Unix
    /// seconds. Nil for anything else, and for a time that names its own zone: adding the dataset's offset to it
    /// would count the zone twice.
    public static func seconds(fromLocal text: Substring, utcOffset: Int) -> Double? {
        guard let parsed = parse(text), parsed.zoneOffset == nil else { return nil }
        return Double(parsed.wholeSeconds - utcOffset) + parsed.fraction
    }

    /// The time read as if it were UTC (whole seconds and the fraction, added last so that the fraction is not
    /// rounded against a large number twice), and the zone's offset east of UTC in seconds when the text gives one.
    /// Hand-written because a CBS day file holds 150 000 of them and the formatter classes are slow.
    static func parse(_ text: Substring) -> (wholeSeconds: Int, fraction: Double, zoneOffset: Int?)? {
        let chars = Array(text.utf8)
        guard chars.count >= 19, chars[4] == UInt8(ascii: "-"), chars[7] == UInt8(ascii: "-"),
            chars[10] == UInt8(ascii: "T") || chars[10] == UInt8(ascii: " "),
            chars[13] == UInt8(ascii: ":"), chars[16] == UInt8(ascii: ":")
        else { return nil }
        func digits(_ range: Range<Int>) -> Int? {
            var value = 0
            for index in range {
                let c = chars[index]
                guard c >= UInt8(ascii: "0"), c <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(c - UInt8(ascii: "0"))
            }
            return value
        }
        guard let year = digits(0..<4), let month = digits(5..<7), let day = digits(8..<10),
            let hour = digits(11..<13), let minute = digits(14..<16), let second = digits(17..<19),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var index = 19
        var fraction = 0.0
        if index < chars.count, chars[index] == UInt8(ascii: ".") {
            index += 1
            var scale = 0.1
            while index < chars.count, chars[index] >= UInt8(ascii: "0"), chars[index] <= UInt8(ascii: "9") {
                fraction += Double(chars[index] - UInt8(ascii: "0")) * scale
                scale /= 10
                index += 1
            }
        }
        var offset: Int?
        if index < chars.count {
            if chars[index] == UInt8(ascii: "Z"), index + 1 == chars.count {
                offset = 0
            } else if chars[index] == UInt8(ascii: "+") || chars[index] == UInt8(ascii: "-"), chars.count == index + 6,
                chars[index + 3] == UInt8(ascii: ":"), let hours = digits((index + 1)..<(index + 3)),
                let minutes = digits((index + 4)..<(index + 6))
            {
                offset = (hours * 3600 + minutes * 60) * (chars[index] == UInt8(ascii: "+") ? 1 : -1)
            } else {
                return nil
            }
        }
        let seconds = daysFromCivil(year: year, month: month, day: day) * 86400 + hour * 3600 + minute * 60 + second
        return (seconds, fraction, offset)
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146097 + doe - 719468
    }
}
