import FlatlandServer
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The sample server stops cleanly while clients are still connecting: connections it has
/// accepted but not yet served are closed, not dropped (dropping one traps in NIO).
@Suite("Sample server lifecycle")
struct ServerLifecycleTests {
    @Test func stoppingWhileConnectionsArriveClosesThemAll() async throws {
        for _ in 0..<25 {
            let server = SampleServer()
            let port = try await server.start()
            // Some clients are connected (and say nothing) before the stop, more connect during it.
            let early = (0..<4).map { _ in openConnection(port: port) }
            #expect(early.allSatisfy { $0 >= 0 })
            let late = Task.detached { (0..<32).map { _ in openConnection(port: port) } }
            await server.stop()
            #expect(server.port == nil)
            // Every connection it had is closed: a read ends (end of file or a reset), it does not wait.
            for socket in early where socket >= 0 { #expect(readEnds(socket)) }
            for socket in early + (await late.value) where socket >= 0 { close(socket) }
        }
    }

    @Test func aStoppedServerRefusesConnections() async throws {
        let server = SampleServer()
        let port = try await server.start()
        let before = openConnection(port: port)
        #expect(before >= 0)
        await server.stop()
        if before >= 0 { close(before) }
        let after = openConnection(port: port)
        #expect(after < 0)
        if after >= 0 { close(after) }
    }
}

/// Whether a read from `socket` ends (end of file, or an error such as a reset) within five
/// seconds instead of waiting for data.
private func readEnds(_ socket: Int32) -> Bool {
    var timeout = timeval(tv_sec: 5, tv_usec: 0)
    setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var byte: UInt8 = 0
    let count = recv(socket, &byte, 1, 0)
    return count == 0 || (count < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
}

/// A TCP connection to 127.0.0.1:`port`: the socket, or -1.
private func openConnection(port: Int) -> Int32 {
    #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
    #endif
    guard fd >= 0 else { return -1 }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let status = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard status == 0 else {
        close(fd)
        return -1
    }
    return fd
}
