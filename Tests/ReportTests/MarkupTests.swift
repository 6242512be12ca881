import Testing

@testable import Report

struct MarkupTests {
    @Test func escapesEverythingThatCouldOpenMarkup() {
        #expect(
            Markup.escape("<script>alert('x')</script> & \"q\"")
                == "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;")
    }

    @Test func keepsOrdinaryTextAndReplacesControlCharacters() {
        #expect(Markup.escape("user-001 Zoë 東京") == "user-001 Zoë 東京")
        #expect(Markup.escape("a\u{0}b\u{1B}c\u{85}d\te") == "a\u{FFFD}b\u{FFFD}c\u{FFFD}d\te")
    }

    @Test func writesShortNumbersAndTimes() {
        #expect(Markup.number(12.34) == "12.3")
        #expect(Markup.number(-0.04) == "0" || Markup.number(-0.04) == "-0")
        #expect(Markup.number(480) == "480")
        #expect(
            Markup.points([(1, 2), (3.25, 4.75)]) == "1,2 3.3,4.8"
                || Markup.points([(1, 2), (3.25, 4.75)]) == "1,2 3.2,4.8")
        // 2026-03-02T06:31:05.123Z
        let t = 1_772_433_065.123
        #expect(Markup.clock(t) == "06:31")
        #expect(Markup.clock(t, seconds: true) == "06:31:05")
        #expect(Markup.dateTime(t) == "2026-03-02 06:31:05")
        #expect(Markup.duration(45) == "45 s")
        #expect(Markup.duration(750) == "12 min 30 s")
        #expect(Markup.duration(3900) == "1 h 05 min")
    }
}
