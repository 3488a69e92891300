import AsyncHTTPClient
import FlatlandAsyncHTTPClient
import FlatlandHTTP
import FlatlandServerTesting
import Foundation
import Testing

/// What only the AsyncHTTPClient transport has: a deadline for the whole exchange, and a client
/// the app passes in and keeps.
@Suite("The AsyncHTTPClient transport")
struct AsyncHTTPClientTransportTests {
    private final class Discarding: HTTPResponseReceiver, @unchecked Sendable {
        private let lock = NSLock()
        private var total = 0
        var count: Int { lock.withLock { total } }
        func receive(head: HTTPResponseHead) throws {}
        func receive(chunk: UnsafeRawBufferPointer) throws { lock.withLock { total += chunk.count } }
    }

    private func request(_ environment: FlatlandHTTP.Environment, _ path: String, timeout: TimeInterval = 60)
        -> HTTPRequest
    {
        HTTPRequest(
            method: .get, url: URL(string: environment.baseURL.absoluteString + path)!, endpoint: path,
            timeout: timeout)
    }

    @Test("a body that keeps arriving but takes longer than the request timeout is cut")
    func requestTimeoutBoundsTheWholeExchange() async throws {
        try await withServer(population: .init(users: 400)) { server, environment in
            // A chunk every 40 ms: never silent for long, but more than eight seconds in all.
            server.knobs.chunkBodies(size: 512, pause: .milliseconds(40))
            let transport = AsyncHTTPClientTransport(configuration: .init(requestTimeout: .seconds(3)))
            defer { transport.shutdown() }
            let receiver = Discarding()
            let start = ContinuousClock.now
            do {
                _ = try await transport.send(request(environment, "/users?offset=0&count=400"), to: receiver)
                Issue.record("the request finished in \(ContinuousClock.now - start)")
            } catch let error as HTTPError {
                #expect(error.code == .transport)
                #expect(error.message.contains("the whole request"))
                #expect(receiver.count > 0)
                #expect(ContinuousClock.now - start < .seconds(8))
            }
        }
    }

    @Test("a client passed in stays the app's: shutting the transport down leaves it running")
    func passedInClientIsLeftRunning() async throws {
        try await withServer { _, environment in
            let client = HTTPClient(eventLoopGroupProvider: .singleton)
            let first = AsyncHTTPClientTransport(client: client)
            #expect(try await first.send(request(environment, "/devices"), to: Discarding()).status == 200)
            first.shutdown()
            do {
                _ = try await first.send(request(environment, "/devices"), to: Discarding())
                Issue.record("a transport that was shut down sent a request")
            } catch let error as HTTPError {
                #expect(error.code == .sessionEnded)
            }
            let second = AsyncHTTPClientTransport(client: client)
            #expect(try await second.send(request(environment, "/devices"), to: Discarding()).status == 200)
            second.shutdown()
            try await client.shutdown()
        }
    }

    @Test("a transport that owns its client refuses to send once shut down")
    func ownedClientShutDown() async throws {
        try await withServer { server, environment in
            let transport = AsyncHTTPClientTransport()
            #expect(try await transport.send(request(environment, "/devices"), to: Discarding()).status == 200)
            transport.shutdown()
            transport.shutdown()
            do {
                _ = try await transport.send(request(environment, "/devices"), to: Discarding())
                Issue.record("a transport that was shut down sent a request")
            } catch let error as HTTPError {
                #expect(error.code == .sessionEnded)
            }
            #expect(server.knobs.requestCount("GET", "/devices") == 1)
        }
    }

    @Test("a URL that is not http or https is an invalid request, sent nowhere")
    func notHTTP() async throws {
        let transport = AsyncHTTPClientTransport()
        defer { transport.shutdown() }
        let request = HTTPRequest(method: .get, url: URL(string: "ftp://127.0.0.1/x")!, endpoint: "/x")
        do {
            _ = try await transport.send(request, to: Discarding())
            Issue.record("an ftp URL was sent")
        } catch let error as HTTPError {
            #expect(error.code == .invalidRequest)
        }
    }
}
