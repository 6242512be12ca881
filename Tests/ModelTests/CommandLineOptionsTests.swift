import CommandSettings
import RoadSaveModel
import Testing

@Suite("CommandLineOptions")
struct CommandLineOptionsTests {
    let valued: Set<String> = ["--seed", "--devices", "--rate", "--mode", "--platform", "--out"]
    let flags: Set<String> = ["--help", "--verbose", "--legacy"]

    func parse(_ arguments: [String]) throws(CommandLineOptions.UsageError) -> CommandLineOptions {
        try CommandLineOptions(arguments, valued: valued, flags: flags)
    }

    /// The usage error message for `arguments`, or nil (with a test failure) if they parse.
    func usageError(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) -> String? {
        do {
            _ = try parse(arguments)
            Issue.record("expected a usage error for \(arguments)", sourceLocation: sourceLocation)
            return nil
        } catch {
            #expect(error.description == error.message, sourceLocation: sourceLocation)
            return error.message
        }
    }

    @Test func valuesSwitchesAndPositionals() throws {
        let options = try parse([
            "in.ndjson", "--seed", "42", "--verbose", "--platform=http://localhost:8080/x?a=b",
            "out.ndjson",
        ])
        #expect(options.string("--seed") == "42")
        #expect(options.string("--platform") == "http://localhost:8080/x?a=b") // split at the first '=' only
        #expect(options.string("--devices") == nil)
        #expect(options.has("--verbose"))
        #expect(!options.has("--help"))
        #expect(options.switches == ["--verbose"])
        #expect(options.positional == ["in.ndjson", "out.ndjson"])
        #expect(options.values == ["--seed": "42", "--platform": "http://localhost:8080/x?a=b"])
    }

    @Test func noArguments() throws {
        let options = try parse([])
        #expect(options.values.isEmpty && options.switches.isEmpty && options.positional.isEmpty)
    }

    @Test func inlineEmptyValueIsKept() throws {
        #expect(try parse(["--out="]).string("--out") == "")
    }

    @Test func valueMayStartWithADash() throws {
        // Documented behaviour: the argument after a valued option is always its value.
        #expect(try parse(["--rate", "-1.5"]).string("--rate") == "-1.5")
        #expect(try parse(["--out", "--verbose"]).string("--out") == "--verbose")
    }

    @Test func laterValueWins() throws {
        #expect(try parse(["--seed", "1", "--seed=2"]).string("--seed") == "2")
    }

    /// An option that may be given several times (send's --endpoint) keeps every value, in order.
    @Test func everyValueIsKeptInOrder() throws {
        let options = try parse(["--seed", "3", "--out=a", "--seed=1", "--seed", "2"])
        #expect(options.strings("--seed") == ["3", "1", "2"])
        #expect(options.strings("--out") == ["a"])
        #expect(options.strings("--rate").isEmpty)
    }

    @Test func singleDashIsPositional() throws {
        #expect(try parse(["-", "--legacy"]).positional == ["-"])
    }

    @Test func doubleDashEndsOptions() throws {
        let options = try parse(["--legacy", "--", "--verbose", "-x", "--seed", "file"])
        #expect(options.has("--legacy"))
        #expect(!options.has("--verbose"))
        #expect(options.positional == ["--verbose", "-x", "--seed", "file"])
        #expect(options.values.isEmpty)
    }

    @Test func doubleDashAtTheEnd() throws {
        #expect(try parse(["a", "--"]).positional == ["a"])
    }

    @Test func unknownOptionIsNamed() {
        #expect(usageError(["--nope"]) == "unknown option --nope")
        #expect(usageError(["--nope=3"]) == "unknown option --nope")
        #expect(usageError(["-v"]) == "unknown option -v")
        #expect(usageError(["file", "--Seed", "1"]) == "unknown option --Seed")
    }

    @Test func missingValueIsNamed() {
        #expect(usageError(["--seed"]) == "--seed needs a value")
        #expect(usageError(["a", "--verbose", "--platform"]) == "--platform needs a value")
    }

    @Test func flagGivenAValueIsRejected() {
        #expect(usageError(["--verbose=yes"]) == "--verbose takes no value")
        #expect(usageError(["--help="]) == "--help takes no value")
    }

    @Test func doubleInRange() throws {
        let options = try parse(["--rate", "2.5", "--seed=1e1"])
        #expect(try options.double("--rate", range: 0...10) == 2.5)
        #expect(try options.double("--seed", range: 0...10) == 10) // the bounds are included
        #expect(try options.double("--devices", range: 0...10) == nil)
    }

    @Test(arguments: ["11", "-0.1", "abc", "", "nan", "inf", "1,5", " 2"])
    func doubleOutOfRangeOrMalformedIsRejected(text: String) throws {
        let options = try parse(["--rate", text])
        #expect(throws: CommandLineOptions.UsageError.self) { try options.double("--rate", range: 0...10) }
        do {
            _ = try options.double("--rate", range: 0...10)
        } catch {
            #expect(error.message == "--rate must be a number from 0.0 to 10.0, got \"\(text)\"")
        }
    }

    @Test func integerInRange() throws {
        let options = try parse(["--devices", "100", "--seed", "0"])
        #expect(try options.integer("--devices", range: 1...100) == 100)
        #expect(try options.integer("--seed", range: 0...Int.max) == 0)
        #expect(try options.integer("--rate", range: 0...1) == nil)
    }

    @Test(arguments: ["0", "101", "2.5", "ten", "", "0x10", "1e2"])
    func integerOutOfRangeOrMalformedIsRejected(text: String) throws {
        let options = try parse(["--devices", text])
        do {
            let value = try options.integer("--devices", range: 1...100)
            Issue.record("accepted \(String(describing: value))")
        } catch {
            #expect(error.message == "--devices must be a whole number from 1 to 100, got \"\(text)\"")
        }
    }

    @Test func choiceAcceptsACase() throws {
        #expect(try parse(["--mode", "crashOnly"]).choice("--mode", CrashDetectionMode.self) == .crashOnly)
        #expect(try parse([]).choice("--mode", CrashDetectionMode.self) == nil)
    }

    @Test func choiceErrorListsTheChoices() throws {
        let options = try parse(["--mode=sometimes"])
        do {
            let mode = try options.choice("--mode", CrashDetectionMode.self)
            Issue.record("accepted \(String(describing: mode))")
        } catch {
            #expect(error.message == "--mode must be one of all, crashOnly, tripOnly, disabled, got \"sometimes\"")
        }
    }

    @Test func choiceIsCaseSensitive() throws {
        let options = try parse(["--mode", "CrashOnly"])
        #expect(throws: CommandLineOptions.UsageError.self) { try options.choice("--mode", CrashDetectionMode.self) }
    }
}
