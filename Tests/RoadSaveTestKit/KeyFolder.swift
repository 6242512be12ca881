import Foundation
import Testing

/// A temporary folder of CurveZMQ key pairs made by `roadsave keygen` (as an operator makes them), the allow-list
/// lines keygen printed for the client keys, and the allow-list file `allow.txt` written from them.
public struct KeyFolder: Sendable {
    public let folder: URL
    /// The allow-list line of each client key made, by its name ("ROLE KEY NAME [APPS]").
    public private(set) var lines: [String: String] = [:]
    private let server: String?

    /// A new folder named `prefix-…` with a key pair for each of `servers` (the first is `serverSecret`'s), then one
    /// for each of `clients` (a name and its keygen options: `--role`, `--apps`), and `allow.txt` listing the clients
    /// named in `listing` (every client when nil; none, and no file, when empty).
    public init(
        prefix: String = "roadsave-curve", servers: [String], clients: [(name: String, options: [String])] = [],
        listing: [String]? = nil
    ) async throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "\(prefix)-\(UUID().uuidString.prefix(8))")
        server = servers.first
        for name in servers {
            _ = try await Self.keygen([name, "--directory", folder.path])
        }
        for (name, options) in clients {
            try await add(name, options)
        }
        let listed = listing ?? clients.map(\.name)
        if !listed.isEmpty { try writeAllowList(listed) }
    }

    public func path(_ name: String) -> String { folder.appendingPathComponent(name).path }
    public var serverSecret: String { path("\(server ?? "server").key") }
    public var serverPublic: String { path("\(server ?? "server").key.pub") }
    public var allowList: String { path("allow.txt") }

    /// A client key pair `name` (`arguments`: `--role`, `--apps`), its allow-list line noted in `lines` and returned.
    @discardableResult
    public mutating func add(_ name: String, _ arguments: [String]) async throws -> String {
        let line = try await Self.allowListLine(name, arguments, in: folder)
        lines[name] = line
        return line
    }

    /// Writes `allow.txt`: the lines of `names`, in that order.
    public func writeAllowList(_ names: [String]) throws {
        try (names.compactMap { lines[$0] }.joined(separator: "\n") + "\n").write(
            toFile: allowList, atomically: true,
            encoding: .utf8)
    }

    public func remove() { try? FileManager.default.removeItem(at: folder) }

    /// A key pair `name` made in `folder`; the allow-list line keygen printed for it.
    public static func allowListLine(_ name: String, _ arguments: [String], in folder: URL) async throws -> String {
        let made = try await keygen([name, "--directory", folder.path] + arguments)
        let line = try #require(made.first { $0.hasPrefix("allow-list line: ") }, "\(made)")
        return String(line.dropFirst("allow-list line: ".count))
    }

    /// `roadsave keygen ARGUMENTS`, which must exit 0 within 20 s; its standard output's lines.
    public static func keygen(_ arguments: [String]) async throws -> [String] {
        let child = try ChildProcess(
            name: "roadsave", executable: Executables.named("roadsave"), arguments: ["keygen"] + arguments)
        defer { child.kill() }
        let status = await child.waitForExit(timeout: 20)
        #expect(status == 0, "\(child.tail())")
        return child.lines
    }
}
