import CZeroMQ

/// One ZAP decision, for the service's log.
public struct ZAPDecision: Sendable, Equatable {
    public var accepted: Bool
    public var role: String
    public var address: String
    public var mechanism: String
    /// The key's name when listed; the client's Z85 public key otherwise (a public key is no secret).
    public var who: String
    public var reason: String
}

/// libzmq's authentication handler (ZAP, RFC 27) for CurveZMQ server sockets: a REP socket bound at
/// `inproc://zeromq.zap.01` in the service's context, on the reactor that owns it. libzmq asks it about every new
/// connection to a socket with `ZMQ_CURVE_SERVER`; the socket's ZAP domain is the role it serves (`secure(_:role:…)`).
/// A client whose key is listed for that role is accepted (200) and its messages carry the entry's name as User-Id and
/// the key itself as `publicKeyProperty`; any other is refused (400) at the handshake, before a message of it is read.
/// libzmq asks only at the handshake: each socket checks every message's key against the list in force
/// (`CurveAllowList.entry(for:role:)`), so a key removed or replaced by a reload is refused from its next message.
///
/// Bind it before the sockets it guards: a CURVE socket with no ZAP handler accepts every client.
/// Not thread-safe: it lives on its reactor's thread, like the sockets. `reload()` re-reads the allow-list (SIGHUP);
/// a file that cannot be read or parsed leaves the current list in force.
public final class ZAPHandler {
    public static let endpoint = "inproc://zeromq.zap.01"

    public let allowListPath: String
    public private(set) var allowList: CurveAllowList
    private let socket: ZMQSocket
    private let report: (ZAPDecision) -> Void

    /// Reads the allow-list (throws if it cannot) and binds the handler on `loop`'s thread.
    public init(loop: ReactorLoop, allowListPath: String, report: @escaping (ZAPDecision) -> Void) throws {
        self.allowListPath = allowListPath
        self.allowList = try CurveAllowList.read(allowListPath)
        self.report = report
        socket = try loop.socket(.rep)
        try socket.bind(Self.endpoint)
        loop.onReadable(socket) { [self] socket in
            socket.drain(limit: 100, failed: { _ in }) { request in
                answer(request)
                return true
            }
        }
    }

    /// Re-reads the allow-list file. On an error the list in force stays.
    @discardableResult
    public func reload() throws -> CurveAllowList {
        allowList = try CurveAllowList.read(allowListPath)
        return allowList
    }

    /// The allow-list entry in force now for a message of `peer` (`ZMQSocket.lastPeer`) on a socket this handler
    /// secured for `role`, or why the message is refused: see `CurveAllowList.entry(for:role:)`.
    public func entry(for peer: CurvePeer?, role: CurveRole) -> Result<CurveAllowList.Entry, CurveKeyRefusal> {
        Result { () throws(CurveKeyRefusal) in try allowList.entry(for: peer, role: role) }
    }

    /// Why keys limited to applications are refused on sockets secured with `unlimitedKeysOnly` (one text for the
    /// handler: one such socket per service).
    public private(set) var limitedKeyRefusal = ZAPHandler.defaultLimitedKeyRefusal
    public static let defaultLimitedKeyRefusal = "this socket cannot keep a key to its applications"

    /// Makes `socket` a CurveZMQ server for `role`, answered by this handler. Call before `bind`.
    /// `unlimitedKeysOnly`: a socket that cannot keep a key to its applications (a PUB where libzmq applies the
    /// subscriptions) admits only keys listed for every application; the text says why the others are refused.
    public func secure(_ socket: ZMQSocket, role: CurveRole, secretKey: String, unlimitedKeysOnly: String? = nil) throws
    {
        if let unlimitedKeysOnly { limitedKeyRefusal = unlimitedKeysOnly }
        let domain = Self.domain(role, unlimitedKeysOnly: unlimitedKeysOnly != nil)
        try socket.setOption(ZMQ_ZAP_DOMAIN, bytes: Array(domain.utf8), name: "ZMQ_ZAP_DOMAIN")
        try socket.setCurveServer(secretKey: Array(secretKey.utf8))
    }

    /// The ZAP domain of a socket for `role`: the role's name, with `:unlimited` when keys limited to applications
    /// are refused there.
    public static func domain(_ role: CurveRole, unlimitedKeysOnly: Bool = false) -> String {
        unlimitedKeysOnly ? role.rawValue + unlimitedSuffix : role.rawValue
    }

    static let unlimitedSuffix = ":unlimited"

    /// The decision for one request, as a value (the tests call it without sockets). On a domain `ROLE:unlimited`, a
    /// key listed for ROLE but limited to applications is refused with `limitedKeyRefusal` as the reason.
    public static func decide(
        _ request: [[UInt8]], allowList: CurveAllowList,
        limitedKeyRefusal: String = ZAPHandler.defaultLimitedKeyRefusal
    )
        -> (reply: [[UInt8]], decision: ZAPDecision)
    {
        func text(_ index: Int) -> String {
            index < request.count ? String(decoding: request[index], as: UTF8.self) : ""
        }
        let requestID = request.count > 1 ? request[1] : []
        var decision = ZAPDecision(
            accepted: false, role: text(2), address: text(3), mechanism: text(5), who: "?",
            reason: "")
        func reply(_ code: String, _ status: String, user: String = "", metadata: [UInt8] = []) -> [[UInt8]] {
            [Array("1.0".utf8), requestID, Array(code.utf8), Array(status.utf8), Array(user.utf8), metadata]
        }
        guard request.count >= 6, text(0) == "1.0" else {
            decision.reason = "malformed ZAP request"
            return (reply("500", decision.reason), decision)
        }
        guard decision.mechanism == "CURVE", request.count == 7, let key = ZMQCurve.z85(request[6]) else {
            decision.reason = "mechanism \(decision.mechanism) is not allowed; use CURVE"
            return (reply("400", decision.reason), decision)
        }
        decision.who = key
        let unlimitedOnly = decision.role.hasSuffix(unlimitedSuffix)
        let roleName = unlimitedOnly ? String(decision.role.dropLast(unlimitedSuffix.count)) : decision.role
        guard let role = CurveRole(rawValue: roleName) else {
            decision.reason = "socket has no known role (ZAP domain \"\(decision.role)\")"
            return (reply("400", decision.reason), decision)
        }
        guard let entry = allowList.entry(role: role, publicKey: key) else {
            decision.reason = "key not in the allow-list as \(role.rawValue)"
            return (reply("400", decision.reason), decision)
        }
        decision.who = entry.name
        if unlimitedOnly, entry.applications != nil {
            decision.reason = "key limited to applications: \(limitedKeyRefusal)"
            return (reply("400", decision.reason), decision)
        }
        decision.accepted = true
        decision.reason = "listed"
        return (reply("200", "OK", user: entry.name, metadata: metadata([(publicKeyProperty, key)])), decision)
    }

    /// The metadata property an accepted connection's messages carry besides `User-Id`: a number unique to the
    /// connection within this process (libzmq asks the handler once per handshake), so a socket can tell two
    /// connections of the same key apart (`zmq_msg_gets(msg, "Connection")`).
    public static let connectionProperty = "Connection"
    /// The metadata property with the accepted client's public key (Z85), which the sockets look up in the allow-list
    /// in force for each message (`ZMQSocket.lastPeer`). Set on every accepted connection: libzmq lets the handler's
    /// properties win over those the client sends in its own handshake metadata, but fills a name the handler leaves
    /// out from the client's.
    public static let publicKeyProperty = "Public-Key"
    private var connections: UInt64 = 0

    /// A ZAP reply's metadata frame: ZMTP properties (name length: 1 byte, name, value length: 4 bytes big-endian, value).
    public static func metadata(_ properties: [(name: String, value: String)]) -> [UInt8] {
        var bytes: [UInt8] = []
        for (name, value) in properties {
            let name = Array(name.utf8)
            let value = Array(value.utf8)
            bytes.append(UInt8(name.count))
            bytes += name
            bytes += withUnsafeBytes(of: UInt32(value.count).bigEndian, Array.init)
            bytes += value
        }
        return bytes
    }

    private func answer(_ request: [[UInt8]]) {
        var (reply, decision) = Self.decide(request, allowList: allowList, limitedKeyRefusal: limitedKeyRefusal)
        if decision.accepted {
            connections += 1
            reply[reply.count - 1] += Self.metadata([(Self.connectionProperty, String(connections))])
        }
        _ = try? socket.send(reply, dontWait: true)
        report(decision)
    }
}
