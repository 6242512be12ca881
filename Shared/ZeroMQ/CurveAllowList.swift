import Foundation

/// What a CurveZMQ client key may do, by role. Each server socket asks the ZAP handler for one role (its ZAP domain).
public enum CurveRole: String, Sendable, CaseIterable {
    /// Sends record batches to ingest's gateway socket, for the applications it is listed with.
    case gateway
    /// Sends control commands to detection's control socket, optionally for some applications only.
    case `operator`
    /// Subscribes to the notifier's events and asks its catch-up socket, optionally for some applications only.
    case subscriber
    /// Another RoadSave service reading a feed (detection reading ingest's journal, the notifier detection's outbox).
    case service
}

/// The allow-list file: which client public keys may connect, in which role, under which name, for which applications.
///
/// One key a line; blank lines, lines starting with `#`, and `# …` after the name or the applications are ignored
/// (`#` is also a Z85 character, so a key may contain it):
///
///     # role       public key (Z85, 40 characters)             name          applications (optional)
///     gateway      Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID    gw-depot-3    app-1,app-2
///     operator     rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7    alice
///     subscriber   JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6    dashboard     app-1
///
/// A line without applications (or with `*`) allows every application. The name is what the service sees for each
/// message (ZAP's User-Id) and what the logs and the audit trail show; it must be unique within a role, as must the
/// key. A key may be listed in several roles (one line each).
public struct CurveAllowList: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        public var role: CurveRole
        public var publicKey: String
        public var name: String
        /// Nil: every application.
        public var applications: Set<String>?

        public init(role: CurveRole, publicKey: String, name: String, applications: Set<String>?) {
            self.role = role
            self.publicKey = publicKey
            self.name = name
            self.applications = applications
        }

        public func allows(application: String) -> Bool {
            applications?.contains(application) ?? true
        }

        /// The restriction in words, for a refusal's reason.
        public var applicationsText: String {
            applications.map { $0.sorted().joined(separator: ",") } ?? "*"
        }
    }

    public private(set) var entries: [Entry] = []
    private var byKey: [CurveRole: [String: Int]] = [:]
    private var byName: [CurveRole: [String: Int]] = [:]

    public init() {}

    public init(entries: [Entry]) throws {
        for entry in entries { try add(entry, line: nil) }
    }

    /// Parses the file's text; the error names the line and what is wrong with it.
    public init(text: String, source: String = "allow-list") throws {
        for (offset, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let lineNumber = offset + 1
            var fields = rawLine.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" }).map(String.init)
            // `#` is a Z85 character, so a comment is a line starting with it, or a word starting with it after the
            // name (application IDs do not start with #).
            guard let first = fields.first, !first.hasPrefix("#") else { continue }
            if let comment = fields.indices.first(where: { $0 >= 3 && fields[$0].hasPrefix("#") }) {
                fields.removeSubrange(comment...)
            }
            func fail(_ message: String) -> CurveKeyError { CurveKeyError("\(source) line \(lineNumber): \(message)") }
            guard fields.count == 3 || fields.count == 4 else {
                throw fail("expected ROLE PUBLIC-KEY NAME [APP,APP…], got \(fields.count) fields")
            }
            guard let role = CurveRole(rawValue: fields[0]) else {
                throw fail(
                    "unknown role \"\(fields[0])\"; one of \(CurveRole.allCases.map(\.rawValue).joined(separator: ", "))"
                )
            }
            guard ZMQCurve.isZ85Key(fields[1]) else {
                throw fail("\"\(fields[1].prefix(60))\" is not a 40-character Z85 public key")
            }
            var applications: Set<String>?
            if fields.count == 4, fields[3] != "*" {
                let list = fields[3].split(separator: ",").map(String.init).filter { !$0.isEmpty }
                guard !list.isEmpty else {
                    throw fail("empty application list (omit it, or write * for every application)")
                }
                applications = Set(list)
            }
            try add(
                Entry(role: role, publicKey: fields[1], name: fields[2], applications: applications),
                line: fail)
        }
    }

    /// Reads and parses the file at `path`.
    public static func read(_ path: String) throws -> CurveAllowList {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CurveKeyError("cannot read the allow-list \(path)")
        }
        return try CurveAllowList(text: String(decoding: data, as: UTF8.self), source: path)
    }

    public func entry(role: CurveRole, publicKey: String) -> Entry? {
        byKey[role]?[publicKey].map { entries[$0] }
    }

    public func entry(role: CurveRole, name: String) -> Entry? {
        byName[role]?[name].map { entries[$0] }
    }

    /// The entry that lets a message of a connection in now: the one of the connection's key for `role`, which must
    /// still carry the name the key was admitted under. A key removed, or replaced under its name by another key,
    /// or listed under another name since the handshake is refused: its connection stays open, but none of its
    /// messages is served, and a new handshake decides afresh. `peer` nil (a message without the ZAP handler's
    /// metadata) is refused too. Every socket that takes messages asks this, so they all refuse alike.
    public func entry(for peer: CurvePeer?, role: CurveRole) throws(CurveKeyRefusal) -> Entry {
        guard let peer else {
            throw CurveKeyRefusal(
                role: role, name: "?",
                message: "\(role.rawValue) key unknown: the message carries no key from the handshake")
        }
        guard let entry = entry(role: role, publicKey: peer.publicKey) else {
            throw CurveKeyRefusal(
                role: role, name: peer.name,
                message: "\(role.rawValue) key \"\(peer.name)\" is no longer in the allow-list (removed or "
                    + "replaced since this connection's handshake)")
        }
        guard entry.name == peer.name else {
            throw CurveKeyRefusal(
                role: role, name: peer.name,
                message: "\(role.rawValue) key \"\(peer.name)\" is listed under another name since this "
                    + "connection's handshake: connect again")
        }
        return entry
    }

    public func count(role: CurveRole) -> Int {
        byKey[role]?.count ?? 0
    }

    private mutating func add(_ entry: Entry, line fail: ((String) -> CurveKeyError)?) throws {
        let fail = fail ?? { CurveKeyError($0) }
        if byKey[entry.role]?[entry.publicKey] != nil {
            throw fail("key \(entry.publicKey) is listed twice as \(entry.role.rawValue)")
        }
        if byName[entry.role]?[entry.name] != nil {
            throw fail("name \"\(entry.name)\" is used twice for \(entry.role.rawValue) keys")
        }
        byKey[entry.role, default: [:]][entry.publicKey] = entries.count
        byName[entry.role, default: [:]][entry.name] = entries.count
        entries.append(entry)
    }
}
