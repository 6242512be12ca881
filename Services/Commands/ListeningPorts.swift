import Foundation

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
}
