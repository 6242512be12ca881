import CommandSettings
import Foundation
import Testing
import ZeroMQ

@testable import ServiceKit

/// `--curve-server-key` (CurveSettings.upstreamKeys): the client keys of a service's links to the feeds it reads.
@Suite struct CurveUpstreamKeysTests {
    /// Key files in a temporary folder: this service's pair (`own.key`), two upstream servers (`up-1`, `up-2`), and an
    /// empty allow-list (what `serverKeys` needs beside the secret key).
    struct Folder {
        let path: String
        let own: CurveKeyPair, up1: CurveKeyPair, up2: CurveKeyPair

        init() throws {
            path =
                FileManager.default.temporaryDirectory.appendingPathComponent("roadsave-upstream-\(UUID().uuidString)")
                .path
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            own = try CurveKeyPair.generate(name: "own")
            up1 = try CurveKeyPair.generate(name: "up-1")
            up2 = try CurveKeyPair.generate(name: "up-2")
            for pair in [own, up1, up2] { _ = try pair.write(directory: path) }
            try "".write(toFile: file("allow.txt"), atomically: true, encoding: .utf8)
        }

        func file(_ name: String) -> String { (path as NSString).appendingPathComponent(name) }
        func remove() { try? FileManager.default.removeItem(atPath: path) }
    }

    static let specs = CurveSettings.specs + [CurveSettings.upstreamSpec(upstream: "the upstream")]

    /// What a service would take from these flags for its links to `endpoints`.
    static func keys(
        _ arguments: [String], endpoints: [String],
        environment: [String: String] = [:]
    ) throws(CommandLineOptions.UsageError) -> [CurveClientKeys]? {
        let source = try ServiceConfiguration(specs: specs, arguments: arguments, environment: environment)
        let own = try CurveSettings.serverKeys(source, endpoints: [])
        return try CurveSettings.upstreamKeys(source, flag: "--upstream", endpoints: endpoints, own: own)
    }

    /// The usage error's message, nil when the flags were accepted.
    static func message(_ arguments: [String], endpoints: [String]) -> String? {
        do {
            _ = try keys(arguments, endpoints: endpoints)
            return nil
        } catch {
            return error.message
        }
    }

    @Test func oneFileServesEveryEndpointAndAListMatchesThemInOrder() throws {
        let folder = try Folder()
        defer { folder.remove() }
        let ownFlags = ["--curve-secret-key", folder.file("own.key"), "--allow", folder.file("allow.txt")]
        let endpoints = ["tcp://10.0.0.1:5551", "tcp://10.0.0.2:5551"]

        let one = try #require(
            try Self.keys(ownFlags + ["--curve-server-key", folder.file("up-1.key.pub")], endpoints: endpoints))
        #expect(one.map(\.serverPublicKey) == [folder.up1.publicKey, folder.up1.publicKey])
        #expect(one.allSatisfy { $0.publicKey == folder.own.publicKey && $0.secretKey == folder.own.secretKey })

        // A list, one per endpoint; the second is a secret file, whose public half is used.
        let list = try #require(
            try Self.keys(
                ownFlags + [
                    "--curve-server-key",
                    folder.file("up-1.key.pub") + ", " + folder.file("up-2.key"),
                ],
                endpoints: endpoints))
        #expect(list.map(\.serverPublicKey) == [folder.up1.publicKey, folder.up2.publicKey])

        // From the environment too.
        let fromEnvironment = try Self.keys(
            ownFlags, endpoints: endpoints,
            environment: ["ROADSAVE_CURVE_SERVER_KEY": folder.file("up-2.key.pub")])
        #expect(fromEnvironment?.map(\.serverPublicKey) == [folder.up2.publicKey, folder.up2.publicKey])
    }

    @Test func withoutAServerKeyOnlyLoopbackOrInsecureLinksArePlaintext() throws {
        #expect(try Self.keys([], endpoints: ["tcp://127.0.0.1:5551", "ipc:///tmp/feed", "tcp://localhost:1"]) == nil)
        #expect(try Self.keys(["--insecure"], endpoints: ["tcp://ingest:5551"]) == nil)
        let refused = Self.message([], endpoints: ["tcp://127.0.0.1:5551", "tcp://ingest:5551"])
        #expect(
            refused?.contains("--upstream tcp://ingest:5551 is on another machine, but no --curve-server-key") == true,
            "\(refused ?? "accepted")")
        #expect(refused?.contains("--insecure") == true)
    }

    @Test func usageErrorsNameWhatIsWrong() throws {
        let folder = try Folder()
        defer { folder.remove() }
        let ownFlags = ["--curve-secret-key", folder.file("own.key"), "--allow", folder.file("allow.txt")]
        let endpoints = ["tcp://10.0.0.1:5551", "tcp://10.0.0.2:5551", "tcp://10.0.0.3:5551"]
        let cases: [([String], String)] = [
            (["--curve-server-key", folder.file("up-1.key.pub")], "--curve-server-key needs --curve-secret-key"),
            (
                ownFlags + ["--curve-server-key", folder.file("up-1.key.pub") + "," + folder.file("up-2.key.pub")],
                "--curve-server-key: 2 files for 3 endpoints of --upstream"
            ),
            (
                ownFlags + ["--curve-server-key", folder.file("missing.pub")],
                "--curve-server-key: cannot read the key file \(folder.file("missing.pub"))"
            ),
            (ownFlags + ["--curve-server-key", folder.file("allow.txt")], "holds no public-key"),
            (
                ownFlags + ["--curve-server-key", folder.file("up-1.key.pub") + ",," + folder.file("up-2.key.pub")],
                "file 2 of the list is empty"
            ),
        ]
        for (arguments, expected) in cases {
            let message = Self.message(arguments, endpoints: endpoints)
            #expect(message?.contains(expected) == true, "\(arguments): \(message ?? "accepted")")
        }
    }
}
