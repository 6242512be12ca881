import Foundation

/// What a service needs to make its outside-facing sockets CurveZMQ servers: its secret key and its allow-list file.
/// `load` also enforces "secure by default": binding a non-loopback address without keys needs `--insecure`.
public struct CurveServerKeys: Sendable, Equatable {
    public var secretKey: String
    public var publicKey: String
    public var allowListPath: String

    /// - Parameters:
    ///   - secretKeyPath: `--curve-secret-key` (the server's `NAME.key`), nil when not given.
    ///   - allowListPath: `--allow`, nil when not given.
    ///   - endpoints: the `(flag, endpoint)` pairs the service binds, for the loopback check.
    ///   - insecure: `--insecure`: plaintext on a non-loopback address is what the operator wants.
    /// - Returns: nil when the service runs without keys (loopback, or `--insecure`).
    public static func load(
        secretKeyPath: String?, allowListPath: String?, insecure: Bool,
        endpoints: [(flag: String, endpoint: String)]
    ) throws(CurveKeyError) -> CurveServerKeys? {
        switch (secretKeyPath, allowListPath) {
        case (nil, nil):
            if !insecure, let exposed = endpoints.first(where: { !isLoopback($0.endpoint) }) {
                throw CurveKeyError(
                    "\(exposed.flag) \(exposed.endpoint) is reachable from other machines, but no "
                        + "CurveZMQ keys are given: pass --curve-secret-key FILE and --allow FILE (roadsave keygen makes keys), "
                        + "bind 127.0.0.1, or pass --insecure to accept plaintext, unauthenticated connections")
            }
            return nil
        case (.some, nil):
            throw CurveKeyError("--curve-secret-key needs --allow FILE (the allow-list of client keys)")
        case (nil, .some):
            throw CurveKeyError("--allow needs --curve-secret-key FILE (this service's secret key)")
        case (let secretKeyPath?, let allowListPath?):
            let pair: CurveKeyPair
            let list: CurveAllowList
            do {
                pair = try CurveKeyPair.readSecret(secretKeyPath)
                list = try CurveAllowList.read(allowListPath)
            } catch let error as CurveKeyError {
                throw error
            } catch {
                throw CurveKeyError("\(error)")
            }
            _ = list
            return CurveServerKeys(secretKey: pair.secretKey!, publicKey: pair.publicKey, allowListPath: allowListPath)
        }
    }

    /// True for endpoints only this machine can reach: ipc, inproc, and tcp on 127.x.x.x, localhost or ::1.
    public static func isLoopback(_ endpoint: String) -> Bool {
        if endpoint.hasPrefix("ipc://") || endpoint.hasPrefix("inproc://") { return true }
        guard endpoint.hasPrefix("tcp://") else { return false }
        var host = String(endpoint.dropFirst("tcp://".count))
        if let colon = host.lastIndex(of: ":") { host = String(host[..<colon]) }
        // A bind may name an interface before the address (`tcp://eth0:5550`): anything not clearly loopback is not.
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return host.hasPrefix("127.") || host == "localhost" || host == "::1"
    }
}
