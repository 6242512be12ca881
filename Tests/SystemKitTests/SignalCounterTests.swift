import SystemKit
import Testing

#if canImport(Glibc)
    import Glibc
#endif

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
        // Unblocked on this thread (a pool thread may inherit a mask that blocks it), so `raise` delivers it here
        // before it returns.
        var only = sigset_t()
        var mask = sigset_t()
        sigemptyset(&only)
        sigaddset(&only, SIGUSR2)
        pthread_sigmask(SIG_UNBLOCK, &only, &mask)
        defer { pthread_sigmask(SIG_SETMASK, &mask, nil) }
        raise(SIGUSR2)
        #expect(Received.counter.signal == SIGUSR2)
        #expect(Received.counter.times == 1)
    }
}
