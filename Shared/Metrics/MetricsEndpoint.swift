#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Where a service serves /metrics, /healthz and /readyz: `HOST:PORT`, with HOST an IPv4 address, `[IPv6]`,
/// `localhost`, or `*` (every interface). Port 0 lets the system choose.
public struct MetricsEndpoint: Sendable, Equatable, CustomStringConvertible {
    public enum Family: Sendable { case ipv4, ipv6 }

    public let host: String
    public let port: UInt16
    public let family: Family

    public struct Invalid: Error, CustomStringConvertible {
        public let description: String
    }

    public init(parsing text: String) throws(Invalid) {
        let usage = "expected HOST:PORT (for example 127.0.0.1:9550, *:9550 or [::1]:9550), got \"\(text)\""
        guard let colon = text.lastIndex(of: ":") else { throw Invalid(description: usage) }
        var host = String(text[..<colon])
        guard let port = UInt16(text[text.index(after: colon)...]) else {
            throw Invalid(description: "the port must be a number from 0 to 65535: " + usage)
        }
        var family = Family.ipv4
        if host.hasPrefix("[") && host.hasSuffix("]") {
            host = String(host.dropFirst().dropLast())
            family = .ipv6
        }
        switch host {
        case "*", "": host = "0.0.0.0"
        case "localhost": host = "127.0.0.1"
        default: break
        }
        guard Self.parse(host, family) != nil else {
            throw Invalid(description: "\"\(host)\" is not an IP address: " + usage)
        }
        self.host = host
        self.port = port
        self.family = family
    }

    public var description: String { family == .ipv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Only this machine can connect.
    public var isLoopback: Bool { host.hasPrefix("127.") || host == "::1" }

    /// The socket address, for `body` to use while it is valid.
    func withSocketAddress<R>(_ body: (UnsafePointer<sockaddr>) -> R) -> R {
        switch Self.parse(host, family)! {
        case .ipv4(var address):
            address.sin_port = port.bigEndian
            return withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1, body) }
        case .ipv6(var address):
            address.sin6_port = port.bigEndian
            return withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1, body) }
        }
    }

    private enum Address {
        case ipv4(sockaddr_in)
        case ipv6(sockaddr_in6)
    }

    private static func parse(_ host: String, _ family: Family) -> Address? {
        switch family {
        case .ipv4:
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { return nil }
            return .ipv4(address)
        case .ipv6:
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else { return nil }
            return .ipv6(address)
        }
    }
}
