#if canImport(Glibc)
import Glibc
#endif
import SystemKit
import Testing

/// A handler is a C function pointer: it reaches the counter through a static, as the commands' `SignalFlag` does.
private enum Received {
    static let counter = SignalCounter()
}

@Suite struct SignalCounterTests {
    @Test func startsEmptyAndKeepsTheLastSignalAndTheCount() {
        let counter = SignalCounter()
        #expect(counter.signal == 0 && counter.times == 0)
        counter.record(SIGTERM)
        counter.record(SIGINT)
        #expect(counter.signal == SIGINT)
        #expect(counter.times == 2)
    }

    @Test func recordsFromARealSignalHandler() {
        _ = Received.counter.signal
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { number in Received.counter.record(number) }
        sigemptyset(&action.sa_mask)
        var previous = sigaction()
        sigaction(SIGUSR2, &action, &previous)
        defer { sigaction(SIGUSR2, &previous, nil) }
        // Delivered to this thread before `raise` returns (it is not blocked here).
        raise(SIGUSR2)
        #expect(Received.counter.signal == SIGUSR2)
        #expect(Received.counter.times == 1)
    }
}
