import Foundation
import RoadSaveTestKit
import Testing

/// The docs (`README.md` and `docs/*.md`) against what the built `roadsave` documents in `--help`, both ways: every
/// flag and `ROADSAVE_*` variable that `roadsave COMMAND --help` prints (every command of `roadsave --help`, and the
/// subcommands a command's help lists, as convert's datasets and ctl's commands) is in the docs; every `ROADSAVE_*`
/// variable the docs name is one a command prints (or one of the few read by tests and the compose file, each checked
/// to be read where it is said to be); and every flag the docs give a `roadsave` command is one that command prints.
@Suite(.serialized) struct DocsCoverageTests {
    /// The package root, from this file (`Tests/CLITests/DocsCoverageTests.swift`).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Variables the docs may name that no command prints, and where each is read (a file or a folder searched).
    static let variablesOfTestsAndFiles: [String: String] = [
        "ROADSAVE_SHARED_DATA": "Services/Recordings", // where the tests find the public datasets
        "ROADSAVE_TEST_SEED": "Tests/RoadSaveTestKit", // a test's seed
        "ROADSAVE_BIN": "Tests/RoadSaveTestKit", // the executables the process tests run
        "ROADSAVE_BIN_DIR": "Tests/RoadSaveTestKit",
        "ROADSAVE_PROGRESS_EVERY": "Shared/TerminalProgress", // the progress meter's test hook
        "ROADSAVE_KEYS": "docker-compose.yml", // compose's variables
        "ROADSAVE_IMAGE": "docker-compose.yml",
    ]

    /// Programs whose flags are not `roadsave`'s: a code line or span that runs one of them is not checked.
    static let otherTools: Set<String> = [
        "python3", "python", "swift", "swiftc", "docker", "docker-compose", "make", "kubectl", "perf", "sqlite3",
        "curl", "git", "sudo", "env", "bash", "sh",
    ]
    static let separators: Set<String> = ["|", "||", "&&", ";"]

    static let flagPattern = #"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*"#
    static let variablePattern = #"(?<![A-Z0-9_])ROADSAVE_[A-Z0-9]+(?:_[A-Z0-9]+)*"#

    /// One command's help and the helps of the subcommands it lists.
    struct Command: Sendable {
        var name: String
        var helps: [String]
        var flags: Set<String> {
            Set(helps.flatMap { DocsCoverageTests.matches(DocsCoverageTests.flagPattern, in: $0) })
        }
        var variables: Set<String> {
            Set(helps.flatMap { DocsCoverageTests.matches(DocsCoverageTests.variablePattern, in: $0) })
        }
    }

    /// Every command's help, read once for the suite.
    static let commands = Task<[Command], any Error> { try await readCommands() }

    static func help(_ arguments: [String]) async throws -> String {
        let result = try await ChildProcess.run(
            Executables.roadsave, arguments + ["--help"],
            environment: ChildProcess.environment(adding: [:]), limit: 120)
        guard result.status == 0, !result.stdout.isEmpty else {
            throw TestFailure(
                "roadsave \((arguments + ["--help"]).joined(separator: " ")) failed (\(result.status)): \(result.stderr)"
            )
        }
        return result.stdout
    }

    /// The commands `roadsave --help` lists (`  replay FILE  …`), each with its help, and for a command whose usage
    /// names an upper-case placeholder (`roadsave convert DATASET FILE`, `roadsave ctl COMMAND …`) the help of every
    /// value its help lists under that placeholder (`DATASET and FILE:`, `COMMAND is one of:`).
    static func readCommands() async throws -> [Command] {
        let top = try await help([])
        let names = captures(#"(?m)^  ([a-z][a-z-]*)(?=\s|$)"#, in: top)
        guard !names.isEmpty else { throw TestFailure("roadsave --help lists no command:\n\(top)") }
        var commands: [Command] = []
        for name in names {
            let text = try await help([name])
            var command = Command(name: name, helps: [text])
            if let placeholder = captures(#"Usage: roadsave \#(name) ([A-Z]+)\b"#, in: text).first,
                let block = captures(#"(?m)^\#(placeholder)\b[^\n]*:\n((?:  [^\n]*\n)+)"#, in: text).first
            {
                for sub in captures(#"(?m)^  ([A-Za-z][\w-]*)(?=\s)"#, in: block) {
                    command.helps.append(try await help([name, sub]))
                }
            }
            commands.append(command)
        }
        return commands
    }

    /// `README.md` and every `docs/*.md`, by path relative to the root.
    static func documents() throws -> [(path: String, text: String)] {
        let docs = root.appendingPathComponent("docs")
        let pages = try FileManager.default.contentsOfDirectory(atPath: docs.path).filter { $0.hasSuffix(".md") }
            .sorted()
        return try (["README.md"] + pages.map { "docs/\($0)" }).map {
            ($0, try String(contentsOf: root.appendingPathComponent($0), encoding: .utf8))
        }
    }

    // MARK: Tests

    @Test func everyFlagAndVariableOfEveryCommandIsInTheDocs() async throws {
        let commands = try await Self.commands.value
        let corpus = try Self.documents().map(\.text).joined(separator: "\n")
        var missing: [String] = []
        for command in commands {
            let flags = command.flags.sorted().filter {
                !Self.contains(corpus, #"(?<![\w-])"# + NSRegularExpression.escapedPattern(for: $0) + #"(?![\w-])"#)
            }
            let variables = command.variables.sorted().filter {
                !Self.contains(corpus, #"(?<![A-Z0-9_])"# + $0 + #"(?![A-Z0-9_])"#)
            }
            if !(flags + variables).isEmpty {
                missing.append("roadsave \(command.name): \((flags + variables).joined(separator: ", "))")
            }
        }
        #expect(commands.count >= 12, "commands read from roadsave --help: \(commands.map(\.name))")
        #expect(
            missing.isEmpty,
            "printed by --help but in neither README.md nor docs/*.md:\n\(missing.joined(separator: "\n"))")
    }

    @Test func everyVariableTheDocsNameIsOneACommandPrints() async throws {
        let known = Set(try await Self.commands.value.flatMap(\.variables))
        var unknown: [String] = []
        for (path, text) in try Self.documents() {
            for variable in Set(Self.matches(Self.variablePattern, in: text)).sorted()
            where !known.contains(variable) && Self.variablesOfTestsAndFiles[variable] == nil {
                unknown.append("\(path): \(variable)")
            }
        }
        #expect(
            unknown.isEmpty,
            "named in the docs but printed by no roadsave COMMAND --help:\n\(unknown.joined(separator: "\n"))")
        // The variables of the tests and the compose file are read where this suite says.
        for (variable, place) in Self.variablesOfTestsAndFiles.sorted(by: { $0.key < $1.key }) {
            #expect(
                try Self.mentions(variable, in: Self.root.appendingPathComponent(place)),
                "\(variable) is not read in \(place)")
        }
    }

    @Test func everyFlagTheDocsGiveARoadsaveCommandIsOneItPrints() async throws {
        let commands = try await Self.commands.value
        let flagsByCommand = Dictionary(uniqueKeysWithValues: commands.map { ($0.name, $0.flags) })
        let allFlags = Set(commands.flatMap(\.flags))
        var wrong: [String] = []
        for (path, text) in try Self.documents() {
            let (code, prose) = Self.codeRegions(text)
            // Code (fenced lines and inline spans): flags after `roadsave COMMAND` are that command's.
            for region in code {
                for (command, flag) in Self.roadsaveFlags(in: region, commands: flagsByCommand)
                where !(flagsByCommand[command]?.contains(flag) ?? false) {
                    wrong.append("\(path): roadsave \(command) \(flag) (in `\(region.prefix(120))`)")
                }
            }
            // Prose lines that name `roadsave ` and no other program: their code spans' flags are some command's.
            for line in prose.split(separator: "\n").map(String.init)
            where line.contains("roadsave ") && !Self.contains(line, Self.otherProgramInProse) {
                for span in Self.captures("`([^`]+)`", in: line) {
                    for flag in Self.matches(Self.flagPattern, in: span) where !allFlags.contains(flag) {
                        wrong.append("\(path): \(flag) is no roadsave command's (in \"\(line.prefix(120))\")")
                    }
                }
            }
        }
        #expect(
            wrong.isEmpty, "flags in the docs that no roadsave COMMAND --help prints:\n\(wrong.joined(separator: "\n"))"
        )
    }

    // MARK: Reading the docs

    /// A prose line that runs another program (a script, the toolchain, docker…) is about that program's flags.
    static let otherProgramInProse =
        #"python3|scripts/|\bswift\b|docker|\bmake\b|kubectl|\bperf\b|sqlite3|Fuzz/|swiftc|roadsave-bench|\.py\b"#

    /// The code of a page (each line of its fenced blocks, `\`-continued lines joined, and each inline code span) and
    /// its prose (the page without its fenced blocks).
    static func codeRegions(_ text: String) -> (code: [String], prose: String) {
        let fence = #"(?ms)^```[^\n]*\n(.*?)^```"#
        var code: [String] = []
        for block in captures(fence, in: text) {
            code += block.replacingOccurrences(of: "\\\n", with: " ").split(separator: "\n").map(String.init)
        }
        let prose = replacing(fence, in: text, with: "")
        code += captures("`([^`]+)`", in: prose)
        return (code, prose)
    }

    /// The flags given to `roadsave COMMAND` in one line or span of code, with the command: after `roadsave` (or a
    /// path ending in `/roadsave`) at the start, after a variable assignment or a shell separator, followed by a known
    /// command, until a separator, a comment or another program.
    static func roadsaveFlags(in region: String, commands: [String: Set<String>]) -> [(String, String)] {
        let tokens = region.split(whereSeparator: \.isWhitespace).map(String.init)
        var found: [(String, String)] = []
        var owner: String?
        var previous: String?
        var index = 0
        func atCommandPosition() -> Bool {
            guard let previous else { return true }
            return separators.contains(previous) || contains(previous, #"^[A-Z_][A-Z0-9_]*="#) || previous == "$"
        }
        while index < tokens.count {
            let token = tokens[index]
            let bare = token.trimmingCharacters(in: CharacterSet(charactersIn: "(["))
            if token.hasPrefix("#") || separators.contains(token) {
                owner = nil
            } else if contains(bare, #"^(?:[\w./-]*/)?roadsave$"#), atCommandPosition(), index + 1 < tokens.count,
                case let next = tokens[index + 1].trimmingCharacters(in: CharacterSet(charactersIn: "`),;")),
                commands[next] != nil
            {
                owner = next
                index += 1
            } else if atCommandPosition(),
                otherTools.contains(bare) || bare.hasPrefix("scripts/") || bare.hasPrefix("Fuzz/")
                    || bare.hasSuffix(".py")
                    || contains(bare, #"(^|/)roadsave-"#)
            {
                owner = nil
            } else if let owner {
                found += matches(flagPattern, in: token).map { (owner, $0) }
            }
            previous = token
            index += 1
        }
        return found
    }

    // MARK: Helpers

    static func regex(_ pattern: String) -> NSRegularExpression {
        try! NSRegularExpression(pattern: pattern)
    }

    static func matches(_ pattern: String, in text: String) -> [String] {
        let range = NSRange(text.startIndex..., in: text)
        return regex(pattern).matches(in: text, range: range).compactMap {
            Range($0.range, in: text).map { String(text[$0]) }
        }
    }

    /// The first capture group of every match.
    static func captures(_ pattern: String, in text: String) -> [String] {
        let range = NSRange(text.startIndex..., in: text)
        return regex(pattern).matches(in: text, range: range).compactMap {
            Range($0.range(at: 1), in: text).map { String(text[$0]) }
        }
    }

    static func contains(_ text: String, _ pattern: String) -> Bool {
        regex(pattern).firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
    }

    static func replacing(_ pattern: String, in text: String, with replacement: String) -> String {
        regex(pattern).stringByReplacingMatches(
            in: text, range: NSRange(text.startIndex..., in: text),
            withTemplate: replacement)
    }

    /// Whether a file, or any file in a folder, holds `word`.
    static func mentions(_ word: String, in place: URL) throws -> Bool {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: place.path, isDirectory: &isFolder) else { return false }
        guard isFolder.boolValue else { return try String(contentsOf: place, encoding: .utf8).contains(word) }
        let files =
            FileManager.default.enumerator(at: place, includingPropertiesForKeys: nil)?.compactMap { $0 as? URL } ?? []
        return files.contains { (try? String(contentsOf: $0, encoding: .utf8))?.contains(word) ?? false }
    }
}
