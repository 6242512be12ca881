import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The TCP ports something listens on, read from the kernel's socket tables (`/proc/net/tcp` and `/proc/net/tcp6`)
/// rather than by connecting: `up` waits for its services' public sockets this way, and a connection that opens and
/// closes without a ZMTP greeting would show in every service's log as a failed handshake (five warnings at each
/// start with `--keys`, which an operator would rightly take for an intruder).
enum ListeningPorts {
    /// The kernel's state number for a listening socket.
    static let listenState = "0A"

    /// The local ports of the listening sockets in one table's text (a header line, then a socket a line:
    /// `sl local_address rem_address st ...`, the address `HEX_IP:HEX_PORT`).
    static func parse(_ table: String) -> Set<Int> {
        var ports = Set<Int>()
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count > 3, fields[3] == listenState, let colon = fields[1].lastIndex(of: ":"),
                let port = Int(fields[1][fields[1].index(after: colon)...], radix: 16)
            else { continue }
            ports.insert(port)
        }
        return ports
    }

    /// The listening ports of this network namespace; nil where the tables cannot be read (not Linux, no /proc).
    static func current() -> Set<Int>? {
        let tables = ["/proc/net/tcp", "/proc/net/tcp6"].compactMap { try? String(contentsOfFile: $0, encoding: .utf8) }
        guard !tables.isEmpty else { return nil }
        return tables.reduce(into: Set<Int>()) { $0.formUnion(parse($1)) }
    }

    // Where the tables cannot be read, by connecting (each connection shows as a failed handshake in a log).

    /// The IPv4 address to probe for a bind host, nil when it cannot be probed (an interface name, IPv6).
    static func probeHost(_ bindHost: String) -> String? {
        if bindHost == "*" || bindHost == "0.0.0.0" { return "127.0.0.1" }
        var address = in_addr()
        return inet_pton(AF_INET, bindHost, &address) == 1 ? bindHost : nil
    }

    /// Whether something accepts TCP connections at host:port (connect, then close at once).
    static func accepts(host: String, port: Int) -> Bool {
        #if canImport(Glibc)
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { return false }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return result == 0
    }
}
