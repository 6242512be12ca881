/// What is wrong with a ZeroMQ endpoint given as text, said before any socket sees it, so that a typo is reported
/// where it was made (an option, a library's configuration), not as a bind or connect error later. One check for the
/// services' settings (`Endpoint.validate` in ServiceKit) and the client library.
public enum ZMQEndpoint {
    /// The problem with `endpoint` in words that quote it (nil when there is none). `connecting`: the endpoint is one
    /// to connect to, so `*` is no host or port.
    public static func problem(_ endpoint: String, connecting: Bool) -> String? {
        let schemes = ["tcp://", "ipc://", "inproc://"]
        guard let scheme = schemes.first(where: { endpoint.hasPrefix($0) }) else {
            return "\"\(endpoint)\" is not a ZeroMQ endpoint (tcp://HOST:PORT, ipc://PATH or inproc://NAME)"
        }
        let rest = endpoint.dropFirst(scheme.count)
        guard !rest.isEmpty else { return "\"\(endpoint)\" has no address" }
        if scheme == "tcp://" {
            guard let colon = rest.lastIndex(of: ":"), !rest[..<colon].isEmpty else {
                return "\"\(endpoint)\" needs HOST:PORT"
            }
            if connecting, rest[..<colon] == "*" {
                return "\"\(endpoint)\": a client needs a host to connect to, not *"
            }
            let port = rest[rest.index(after: colon)...]
            guard (port == "*" && !connecting) || (Int(port).map { (1...65535).contains($0) } ?? false) else {
                return "\"\(endpoint)\" has no valid port"
            }
        }
        return nil
    }
}
