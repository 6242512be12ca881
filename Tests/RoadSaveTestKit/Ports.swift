import Foundation

#if canImport(Glibc)
    import Glibc
    import SystemKit
#endif

/// Free TCP ports on loopback, random in 20000…32000, below the kernel's ephemeral range (32768 and up) where
/// outgoing connections take their ports; never handed out twice in one test run, so tests running at once each have
/// their own services.
public enum Ports {
    private static let handedOut = Locked(Set<Int>())

    /// `count` free ports.
    public static func reserve(_ count: Int) -> [Int] {
        var ports: [Int] = []
        while ports.count < count {
            let port = Int.random(in: 20000...32000)
            let fresh = handedOut.withLock { $0.insert(port).inserted }
            if fresh, isFree(port) { ports.append(port) }
        }
        return ports
    }

    /// `count` consecutive free ports (for `roadsave up --base-port P`, which takes P…P+count-1); the first returned.
    public static func reserveRange(_ count: Int) -> Int {
        while true {
            let first = Int.random(in: 20000...(32000 - count))
            let range = first..<(first + count)
            let fresh = handedOut.withLock { used in
                guard range.allSatisfy({ !used.contains($0) }) else { return false }
                used.formUnion(range)
                return true
            }
            if fresh, range.allSatisfy(isFree) { return first }
        }
    }

    /// The ZeroMQ endpoint of a loopback port.
    public static func tcp(_ port: Int) -> String { "tcp://127.0.0.1:\(port)" }

    /// Whether a listening socket could be bound to 127.0.0.1:port now.
    public static func isFree(_ port: Int) -> Bool {
        withLoopbackSocket(port) { fd, address, length in bind(fd, address, length) == 0 }
    }

    /// Whether something accepts TCP connections on 127.0.0.1:port.
    public static func isListening(_ port: Int) -> Bool {
        withLoopbackSocket(port) { fd, address, length in connect(fd, address, length) == 0 }
    }

    /// A fresh TCP socket and the address 127.0.0.1:port, closed after `body`.
    private static func withLoopbackSocket(
        _ port: Int,
        _ body: (Int32, UnsafePointer<sockaddr>, socklen_t) -> Bool
    ) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                body(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
    }
}
