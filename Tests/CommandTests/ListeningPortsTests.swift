import Glibc
import Testing

@testable import ServiceCommands

/// `up`'s wait for its services' sockets reads the kernel's socket tables instead of connecting.
@Suite struct ListeningPortsTests {
    /// Two lines of a real `/proc/net/tcp`: a listener on 127.0.0.1:47104 and a connection from port 47104.
    static let table = """
          sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
           0: 0100007F:B800 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 3133696 1 0
           1: 0100007F:B801 0100007F:A4F2 01 00000000:00000000 00:00000000 00000000     0        0 3133698 1 0
        """

    @Test func onlyListeningSocketsCountByTheirLocalPort() {
        #expect(ListeningPorts.parse(Self.table) == [0xB800])
        #expect(ListeningPorts.parse("").isEmpty)
        #expect(ListeningPorts.parse("header\n garbage line\n 0: nothing").isEmpty)
    }

    /// A socket this test listens on is in the tables (the tables are Linux's; the services run on nothing else).
    @Test func aSocketListeningHereIsSeen() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && listen(descriptor, 1) == 0
                    && getsockname(descriptor, $0, &length) == 0
            }
        }
        try #require(bound)
        let port = Int(UInt16(bigEndian: address.sin_port))
        let ports = try #require(ListeningPorts.current())
        #expect(ports.contains(port), "port \(port)")
    }
}
