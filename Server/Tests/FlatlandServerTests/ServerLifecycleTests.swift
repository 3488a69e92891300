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
            let early = (0..<4).map { _ in Loopback.connect(port: port) }
            #expect(early.allSatisfy { $0 >= 0 })
            let late = Task.detached { (0..<32).map { _ in Loopback.connect(port: port) } }
            await server.stop()
            #expect(server.port == nil)
            // Every connection it had is closed: a read ends (end of file or a reset), it does not wait.
            for socket in early where socket >= 0 { #expect(Loopback.isClosed(socket, within: 5)) }
            for socket in early + (await late.value) where socket >= 0 { close(socket) }
        }
    }

    @Test func aStoppedServerRefusesConnections() async throws {
        let server = SampleServer()
        let port = try await server.start()
        let before = Loopback.connect(port: port)
        #expect(before >= 0)
        await server.stop()
        if before >= 0 { close(before) }
        let after = Loopback.connect(port: port)
        #expect(after < 0)
        if after >= 0 { close(after) }
    }
}
