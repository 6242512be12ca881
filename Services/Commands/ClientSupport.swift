import CommandSettings
import Logging
import ServiceKit
import SystemKit
import TerminalProgress
import ZeroMQ

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

// What the client commands (send, tail, ctl, up) share: plain output without buffering, usage errors, and a
// signal flag that a synchronous loop can check between short waits.

/// A reason to end a command with an exit status and a message for standard error.
struct CommandExit: Error {
    var status: Int32
    var message: String

    init(_ status: Int32, _ message: String) {
        self.status = status
        self.message = message
    }

    /// A usage error: exit 2, the message names the option.
    static func usage(_ message: String) -> CommandExit { CommandExit(2, message) }
}

enum Console {
    /// Writes `text` to a file descriptor with `write(2)` (no stdio buffering, so a line is out as soon as it is written;
    /// one call for a short line, so lines of several writers do not interleave). False when the reader is gone.
    /// On standard error a progress line that shows is cleared for the text and drawn again below it.
    @discardableResult
    static func write(_ text: String, to fd: Int32) -> Bool {
        if fd == 2, StatusLine.standardError.isShowing {
            StatusLine.standardError.writeAbove(text)
            return true
        }
        return writeAll(fd, text)
    }

    /// One line on standard output.
    @discardableResult
    static func out(_ line: String) -> Bool { write(line + "\n", to: 1) }

    /// One line on standard error.
    static func err(_ line: String) { write(line + "\n", to: 2) }

    /// Prints a usage error the way the services do and returns its status.
    static func fail(_ command: String, _ failure: CommandExit) -> Int32 {
        if failure.status == 2 {
            err("roadsave \(command): \(failure.message)\nRun 'roadsave \(command) --help' for usage.")
        } else {
            err("roadsave \(command): \(failure.message)")
        }
        return failure.status
    }
}

/// SIGTERM / SIGINT as a flag for synchronous loops that wait in short steps (a `zmq_poll` of at most ~100 ms, a
/// `usleep`). The handler only stores into an atomic, which is async-signal-safe, so it may run on any thread:
/// unlike a mask set in `main`, it also covers threads the runtime started before. Signals are blocked while the
/// handlers are installed, so one arriving during `install()` is not lost and does not kill the process.
enum SignalFlag {
    private static let received = SignalCounter()
    /// SIGHUP, counted apart where it is installed: it asks `up` to have its services re-read their allow-lists, and
    /// is neither a stop nor a second signal.
    private static let hangups = SignalCounter()

    static func install(_ signals: [Int32] = [SIGTERM, SIGINT]) {
        _ = received.signal // the statics are made here, not in the handler
        _ = hangups.signal
        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals { sigaddset(&set, signal) }
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &set, &previous)
        for signal in signals {
            var action = sigaction()
            #if canImport(Glibc)
                action.__sigaction_handler.sa_handler = { number in
                    (number == SIGHUP ? SignalFlag.hangups : SignalFlag.received).record(number)
                }
            #else
                action.sa_handler = { number in
                    (number == SIGHUP ? SignalFlag.hangups : SignalFlag.received).record(number)
                }
            #endif
            sigemptyset(&action.sa_mask)
            action.sa_flags = SA_RESTART
            sigaction(signal, &action, nil)
        }
        // Unblock these signals in this thread (a pending one is handled now).
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }

    /// The last signal received (0 = none).
    static var signal: Int32 { received.signal }
    /// How many signals arrived so far (SIGHUP not counted).
    static var times: Int32 { received.times }
    /// How many SIGHUPs arrived so far.
    static var hangupTimes: Int32 { hangups.times }

    static func name(_ signal: Int32) -> String {
        switch signal {
        case SIGTERM: "SIGTERM"
        case SIGINT: "SIGINT"
        case SIGKILL: "SIGKILL"
        case SIGHUP: "SIGHUP"
        case SIGSEGV: "SIGSEGV"
        case SIGABRT: "SIGABRT"
        case SIGILL: "SIGILL"
        case SIGTRAP: "SIGTRAP"
        case SIGBUS: "SIGBUS"
        default: "signal \(signal)"
        }
    }
}

/// Sleeps, in steps of at most 100 ms so that a signal is noticed; returns false when one arrived.
func sleepUnlessSignalled(_ seconds: Double) -> Bool {
    let deadline = MonotonicClock.now() + seconds
    while true {
        if SignalFlag.signal != 0 { return false }
        let left = deadline - MonotonicClock.now()
        if left <= 0 { return true }
        usleep(useconds_t(min(left, 0.1) * 1_000_000))
    }
}

/// Options shared by the clients' parsing: numbers with their ranges, in seconds and milliseconds.
extension CommandLineOptions {
    /// A timeout in seconds as libzmq milliseconds.
    func milliseconds(_ name: String, default value: Double, range: ClosedRange<Double>) throws(UsageError) -> (
        Double, Int32
    ) {
        let seconds = try double(name, range: range) ?? value
        return (seconds, Int32(max(1, (seconds * 1000).rounded())))
    }
}

/// `tcp://…`, `ipc://…` or `inproc://…` for a client to connect to (a `*` host is not connectable).
func validateConnectEndpoint(_ endpoint: String, flag: String) throws(CommandExit) -> String {
    do {
        return try Endpoint.validate(endpoint, flag: flag, connecting: true)
    } catch {
        throw .usage(error.message)
    }
}

/// What a client command's options tell the shared opening.
protocol ClientCommandOptions {
    /// `--help` or `-h` was given: the usage is printed, nothing else is checked or done.
    var help: Bool { get }
    /// The level of the command's own log lines on standard error.
    var logLevel: Log.Level { get }
}

/// The opening and the error handling every client command (send, tail, ctl, up) shares, so that each command
/// writes only what is its own: read the options (a bad one is exit 2 with the usage hint), answer `--help`, ignore
/// SIGPIPE (a reader that went away, as in `… | head`, must not kill the writer of the summary), optionally turn
/// SIGTERM and SIGINT into `SignalFlag`, and make a `CommandExit` thrown by the body its exit status and message.
enum ClientCommand {
    static func run<Options: ClientCommandOptions>(
        _ name: String, usage: String, signals: [Int32]? = [SIGTERM, SIGINT],
        options read: () throws -> Options,
        body: (Options, Log) throws(CommandExit) -> Int32
    ) -> Int32 {
        let (options, log): (Options, Log)
        switch prepare(name, usage: usage, signals: signals, options: read) {
        case .finished(let status): return status
        case .ready(let ready, let readyLog): (options, log) = (ready, readyLog)
        }
        do {
            return try body(options, log)
        } catch {
            return Console.fail(name, error)
        }
    }

    /// `run`, for a command whose body is async (those built on the client library, whose calls suspend).
    static func run<Options: ClientCommandOptions>(
        _ name: String, usage: String, signals: [Int32]? = [SIGTERM, SIGINT],
        options read: () throws -> Options,
        body: (Options, Log) async throws(CommandExit) -> Int32
    ) async -> Int32 {
        let (options, log): (Options, Log)
        switch prepare(name, usage: usage, signals: signals, options: read) {
        case .finished(let status): return status
        case .ready(let ready, let readyLog): (options, log) = (ready, readyLog)
        }
        do {
            return try await body(options, log)
        } catch {
            return Console.fail(name, error)
        }
    }

    /// What `run` does before the body: the options read (or their error said), `--help` printed, the signals set.
    private enum Prepared<Options> {
        case ready(Options, Log)
        /// Nothing to run: the exit status.
        case finished(Int32)
    }

    private static func prepare<Options: ClientCommandOptions>(
        _ name: String, usage: String, signals: [Int32]?, options read: () throws -> Options
    ) -> Prepared<Options> {
        let options: Options
        do {
            options = try readOptions(read)
        } catch {
            return .finished(Console.fail(name, error))
        }
        if options.help {
            print(usage)
            return .finished(0)
        }
        if let signals { SignalFlag.install(signals) }
        signal(SIGPIPE, SIG_IGN)
        return .ready(options, Log(category: name, minimumLevel: options.logLevel))
    }

    /// Reads options: the shared parser's errors and any other error while reading are usage errors (exit 2);
    /// a `CommandExit` keeps its own status.
    static func readOptions<Options>(_ read: () throws -> Options) throws(CommandExit) -> Options {
        do {
            return try read()
        } catch let error as CommandLineOptions.UsageError {
            throw .usage(error.message)
        } catch let error as CommandExit {
            throw error
        } catch {
            throw .usage("\(error)")
        }
    }
}

extension CommandLineOptions {
    /// `--help` and `-h`, the switches every client command takes.
    static let helpSwitches: Set<String> = ["--help", "-h"]

    /// `--help` or `-h` was given.
    var asksForHelp: Bool { has("--help") || has("-h") }
}
