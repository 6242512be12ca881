import SystemKit
import Testing

@Suite struct LinkHearingTests {
    @Test func eachChangeIsSaidOnceAndTheSilenceIsMeasuredFromTheLastAnswer() {
        var hearing = LinkHearing(silentAfter: 6, since: 100)
        #expect(hearing.check(at: 105) == nil)
        #expect(hearing.check(at: 106.5) == .fellSilent(unanswered: 6.5))
        #expect(hearing.check(at: 120) == nil && hearing.isSilent, "said once")
        #expect(hearing.answered(at: 121) == .answersAgain(unanswered: 21))
        #expect(hearing.answered(at: 122) == nil && !hearing.isSilent)
        #expect(hearing.unanswered(at: 125) == 3)
        #expect(hearing.answered(at: 110) == nil && hearing.lastAnswer == 122, "an older answer moves nothing back")
    }
}
