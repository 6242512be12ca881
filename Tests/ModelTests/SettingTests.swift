import CommandSettings
import Testing

/// `Setting<Value>` and `SettingValues`: typed values, their checks, where a value comes from, and how they are shown.
@Suite struct SettingTests {
    static let window = Setting<Double>(
        flag: "--window", environment: "T_WINDOW", key: "window", default: 10, range: 0...600,
        help: "seconds late")
    static let attempts = Setting<Int>(
        flag: "--attempts", environment: "T_ATTEMPTS", key: "attempts", default: 3, range: 1...20,
        help: "attempts")
    static let token = Setting<String?>.text(
        flag: "--token", environment: "T_TOKEN", key: "token", help: "a credential",
        secret: true)
    static let password = Setting<String>(
        flag: "--password", environment: "T_PASSWORD", key: "password", default: "swordfish-1234",
        shown: "swordfish-1234", help: "the default is a secret too", secret: true
    ) { text, _ in text }
    static let insecure = Setting<Bool>(
        flag: "--insecure", environment: "T_INSECURE", key: "insecure", help: "plaintext",
        switch: true)
    static let all: [any AnySetting] = [window, attempts, token, password, insecure]

    func values(_ arguments: [String], environment: [String: String] = [:], file: [String: String] = [:]) throws
        -> SettingValues
    {
        let options = try CommandLineOptions(
            arguments, valued: SettingValues.valued(Self.all),
            flags: SettingValues.switches(Self.all))
        return SettingValues(Self.all, options: options, environment: environment, file: file)
    }

    func message(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch {
            return (error as? CommandLineOptions.UsageError)?.message ?? "\(error)"
        }
    }

    @Test func textIsParsedIntoTheSettingsType() throws {
        #expect(try Self.window.parse("2.5") == 2.5)
        #expect(try Self.attempts.parse("7") == 7)
        #expect(try Self.attempts.parse("7.0") == 7) // a whole number written as a number
        #expect(try Self.insecure.parse("yes") && !(try Self.insecure.parse("off")))
        #expect(try Self.token.parse("abc") == "abc")
        #expect(try values(["--window", "30", "--attempts", "5"]).value(Self.window) == 30)
    }

    @Test func aValueOutOfRangeNamesTheFlagAndTheRange() {
        #expect(
            message { _ = try Self.window.parse("601") } == "--window must be a number from 0.0 to 600.0, got \"601\"")
        #expect(
            message { _ = try Self.window.parse("soon") } == "--window must be a number from 0.0 to 600.0, got \"soon\""
        )
        #expect(message { _ = try Self.window.parse("nan") } != nil)
        #expect(
            message { _ = try Self.attempts.parse("2.5") }
                == "--attempts must be a whole number from 1 to 20, got \"2.5\"")
        #expect(
            message { _ = try Self.attempts.parse("0") } == "--attempts must be a whole number from 1 to 20, got \"0\"")
        #expect(
            message { _ = try Self.insecure.parse("perhaps") } == "--insecure must be true or false, got \"perhaps\"")
        // Checked when the value is read, whatever gave it.
        #expect(
            message { _ = try values([], environment: ["T_WINDOW": "-1"]).value(Self.window) }?.hasPrefix("--window")
                == true)
    }

    @Test func flagsWinOverTheEnvironmentWhichWinsOverTheFileWhichWinsOverTheDefault() throws {
        let file = ["window": "40"]
        let environment = ["T_WINDOW": "20"]
        let fromDefault = try values([])
        #expect(try fromDefault.value(Self.window) == 10 && fromDefault.source(of: Self.window) == .default)
        let fromFile = try values([], file: file)
        #expect(try fromFile.value(Self.window) == 40 && fromFile.source(of: Self.window) == .file)
        let fromEnvironment = try values([], environment: environment, file: file)
        #expect(try fromEnvironment.value(Self.window) == 20 && fromEnvironment.source(of: Self.window) == .environment)
        let fromFlag = try values(["--window=30"], environment: environment, file: file)
        #expect(try fromFlag.value(Self.window) == 30 && fromFlag.source(of: Self.window) == .flag)
        #expect(fromFlag.describe().contains("  window=30 (flag)"))
        #expect(fromDefault.describe().contains("  window=10 (default)"))
        // A setting without a default and not given is nil, and shown as unset.
        #expect(try fromDefault.value(Self.token) == nil)
        #expect(fromDefault.describe().contains("  token=(unset)"))
    }

    @Test func secretsAreMaskedInTheDescriptionAndTheHelp() throws {
        let given = try values(["--token", "a-very-long-token-value"])
        let text = given.describe()
        #expect(!text.contains("a-very-long-token-value") && text.contains("token=a-…ue (flag)"))
        #expect(!text.contains("swordfish-1234") && text.contains("password=sw…34 (default)"))
        for help in [SettingHelp.service(Self.all), SettingHelp.command(Self.all)] {
            #expect(!help.contains("swordfish-1234") && help.contains("(default sw…34)"), "\(help)")
            #expect(help.contains("(default 10)") && help.contains("(default 3)"), "\(help)")
        }
        #expect(SettingHelp.service(Self.all).contains("env T_WINDOW, file key [window]"))
        #expect(
            SettingHelp.command(Self.all).contains(
                "  --window S" + String(repeating: " ", count: 12) + "seconds late (default 10)"))
    }

    @Test func aSwitchIsOffUnlessGivenAndTakesNoValue() throws {
        #expect(try !values([]).value(Self.insecure))
        #expect(try values(["--insecure"]).value(Self.insecure))
        #expect(try values([], environment: ["T_INSECURE": "true"]).value(Self.insecure))
        #expect(throws: CommandLineOptions.UsageError.self) { try values(["--insecure=yes"]) }
        // Neither help nor describe claim a default for a switch; the help lists it without a value.
        #expect(try values([]).describe().contains("  insecure=(unset)"))
        #expect(
            SettingHelp.command(Self.all).contains("  --insecure" + String(repeating: " ", count: 12) + "plaintext"))
        #expect(
            SettingHelp.service(Self.all).contains("  --insecure" + String(repeating: " ", count: 18) + "plaintext\n"))
    }

    @Test func longHelpIsWrappedUnderItsColumn() {
        let long = Setting<Double>(
            flag: "--long", environment: "T_LONG", key: "long", default: 1, range: 0...2,
            help: Array(repeating: "word", count: 40).joined(separator: " "))
        let lines = SettingHelp.command([long], width: 60).split(separator: "\n")
        #expect(lines.count > 1 && lines.allSatisfy { $0.count <= 60 })
        #expect(lines.dropFirst().allSatisfy { $0.hasPrefix(String(repeating: " ", count: 24) + "word") })
        #expect(lines.last?.hasSuffix("(default 1)") == true)
    }
}
