import Flatland
import FlatlandAsyncHTTPClient
import FlatlandHTTP
import FlatlandJSON
import FlatlandServerTesting
import Foundation
import Testing

/// A receiver that stops at its first chunk until it is released (or twenty seconds pass).
private final class StalledReceiver: HTTPResponseReceiver, @unchecked Sendable {
    let release = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var chunks = 0
    private var releasedInTime: Bool?

    var chunkCount: Int { lock.withLock { chunks } }
    /// Whether the wait at the first chunk ended by ``release`` rather than by its timeout.
    var wasReleasedInTime: Bool? { lock.withLock { releasedInTime } }

    func receive(head: HTTPResponseHead) throws {}

    func receive(chunk: UnsafeRawBufferPointer) throws {
        let first = lock.withLock {
            chunks += 1
            return chunks == 1
        }
        guard first else { return }
        let released = release.wait(timeout: .now() + 20) == .success
        lock.withLock { releasedInTime = released }
    }
}

/// A receiver that keeps what arrives: the order of the calls, the chunks' sizes and the bytes.
private final class RecordingReceiver: HTTPResponseReceiver, @unchecked Sendable {
    private let lock = NSLock()
    private var events: [String] = []
    private var sizes: [Int] = []
    private var data: [UInt8] = []
    private var total = 0
    /// Whether the bytes are kept (a large body is only counted and checked).
    let keepsBytes: Bool
    /// Checks each byte at its offset in the body; a mismatch is recorded.
    let expectedByte: (@Sendable (Int) -> UInt8)?
    private var mismatch: Int?

    init(keepsBytes: Bool = true, expectedByte: (@Sendable (Int) -> UInt8)? = nil) {
        self.keepsBytes = keepsBytes
        self.expectedByte = expectedByte
    }

    var calls: [String] { lock.withLock { events } }
    var chunkSizes: [Int] { lock.withLock { sizes } }
    var bytes: [UInt8] { lock.withLock { data } }
    var count: Int { lock.withLock { total } }
    var firstMismatch: Int? { lock.withLock { mismatch } }

    func receive(head: HTTPResponseHead) throws { lock.withLock { events.append("head \(head.status)") } }

    func receive(chunk: UnsafeRawBufferPointer) throws {
        lock.withLock {
            if events.last != "chunk" { events.append("chunk") }
            sizes.append(chunk.count)
            if keepsBytes { data.append(contentsOf: chunk) }
            if let expectedByte, mismatch == nil {
                for (index, byte) in chunk.enumerated() where byte != expectedByte(total + index) {
                    mismatch = total + index
                    break
                }
            }
            total += chunk.count
        }
    }
}

/// A receiver that is slow (a pause per chunk) until it has taken `slowBytes`, then notes how
/// far the server had written and stops the request.
private final class SlowReceiver: HTTPResponseReceiver, @unchecked Sendable {
    struct Enough: Error {}
    let slowBytes: Int
    let pause: Duration
    let written: @Sendable () -> Int
    private let lock = NSLock()
    private var total = 0
    private var writtenAtEnd: Int?

    init(slowBytes: Int, pause: Duration, written: @escaping @Sendable () -> Int) {
        self.slowBytes = slowBytes
        self.pause = pause
        self.written = written
    }

    var consumed: Int { lock.withLock { total } }
    var serverWrittenAtEnd: Int? { lock.withLock { writtenAtEnd } }

    func receive(head: HTTPResponseHead) throws {}

    func receive(chunk: UnsafeRawBufferPointer) throws {
        let seen = lock.withLock {
            total += chunk.count
            return total
        }
        if seen >= slowBytes {
            let written = written()
            lock.withLock { writtenAtEnd = written }
            throw Enough()
        }
        Thread.sleep(forTimeInterval: Double(pause.components.attoseconds) / 1e18)
    }
}

/// A counter the raw server's writer and the test share.
private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func add(_ n: Int) { lock.withLock { value += n } }
    var current: Int { lock.withLock { value } }
}

/// A request for `path` on `baseURL`.
private func request(
    _ baseURL: URL, _ path: String, method: HTTPMethod = .get, body: [UInt8]? = nil, timeout: TimeInterval = 60
) -> HTTPRequest {
    HTTPRequest(
        method: method, url: URL(string: baseURL.absoluteString + path)!, endpoint: path, body: body, timeout: timeout)
}

/// The error `operation` throws, as an ``HTTPError`` (nil when it does not throw one).
private func httpError(_ operation: () async throws -> HTTPResponseHead) async -> HTTPError? {
    do {
        _ = try await operation()
        return nil
    } catch let error as HTTPError {
        return error
    } catch {
        Issue.record("not an HTTPError: \(error)")
        return nil
    }
}

/// One suite for every transport: each case runs on ``TransportKind/allCases``.
@Suite("The transports")
struct TransportTests {
    @Test("a chunked body arrives in chunks, after the head, whole", arguments: TransportKind.allCases)
    func chunkedStreaming(_ kind: TransportKind) async throws {
        try await withServer(population: .init(users: 400)) { server, environment in
            server.knobs.chunkBodies(size: 512)
            let transport = kind.make()
            defer { transport.shutdown() }
            let receiver = RecordingReceiver()
            let head = try await transport.send(request(environment.baseURL, "/users?offset=0&count=400"), to: receiver)
            #expect(head.status == 200)
            #expect(receiver.calls == ["head 200", "chunk"])
            #expect(receiver.chunkSizes.count > 1)
            #expect(receiver.chunkSizes.allSatisfy { $0 > 0 })
            #expect(receiver.count > 100_000)
            let body = try JSONValue(parsing: receiver.bytes)
            guard case .object(let object) = body, case .array(let items)? = object["data"] else {
                Issue.record("not a page: \(String(decoding: receiver.bytes.prefix(200), as: UTF8.self))")
                return
            }
            #expect(items.count == 400)
        }
    }

    @Test("the status and the headers come through; header names in any case", arguments: TransportKind.allCases)
    func statusAndHeaders(_ kind: TransportKind) async throws {
        let server = try RawHTTPServer { request, connection in
            let body = #"{"error":"\#(request.method) \#(request.path)"}"#
            connection.write(
                "HTTP/1.1 418 I'm a teapot\r\nContent-Type: application/json\r\nx-MiXeD-CaSe: one\r\n"
                    + "Retry-After: 7\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            return true
        }
        defer { server.stop() }
        let transport = kind.make()
        defer { transport.shutdown() }
        let receiver = RecordingReceiver()
        let head = try await transport.send(
            request(server.url, "/tables/todo/1?x=1", method: .delete), to: receiver)
        #expect(head.status == 418)
        #expect(head.headers["x-mixed-case"] == "one")
        #expect(head.headers["X-MIXED-CASE"] == "one")
        #expect(head.headers["retry-after"] == "7")
        #expect(head.headers["content-type"] == "application/json")
        #expect(String(decoding: receiver.bytes, as: UTF8.self) == #"{"error":"DELETE /tables/todo/1?x=1"}"#)
        // The request's own headers reach the server.
        var withHeaders = request(server.url, "/h")
        withHeaders.headers["X-Request-ID"] = "r-1"
        withHeaders.headers["ZUMO-API-VERSION"] = "3.0.0"
        _ = try await transport.send(withHeaders, to: RecordingReceiver())
        let last = try #require(server.received.last)
        #expect(last.headers["x-request-id"] == "r-1")
        #expect(last.headers["zumo-api-version"] == "3.0.0")
    }

    /// While the receiver is slow, the transport stops reading, so the server cannot write far
    /// ahead of it: what is in flight is bounded by the sockets' buffers, not by the body's
    /// size (64 MiB here, of which the receiver takes 4).
    @Test("back-pressure: a slow receiver holds back the sender", arguments: TransportKind.allCases)
    func backPressure(_ kind: TransportKind) async throws {
        let size = 64 << 20
        let written = Counter()
        let server = try RawHTTPServer { _, connection in
            guard connection.write("HTTP/1.1 200 OK\r\nContent-Length: \(size)\r\n\r\n") else { return false }
            let block = [UInt8](repeating: 0x61, count: 64 << 10)
            var sent = 0
            while sent < size, connection.write(block) {
                sent += block.count
                written.add(block.count)
            }
            return false
        }
        defer { server.stop() }
        let transport = kind.make()
        defer { transport.shutdown() }
        let receiver = SlowReceiver(slowBytes: 4 << 20, pause: .milliseconds(2), written: { written.current })
        await #expect(throws: SlowReceiver.Enough.self) {
            _ = try await transport.send(request(server.url, "/big"), to: receiver)
        }
        let ahead = try #require(receiver.serverWrittenAtEnd) - receiver.consumed
        // Loopback socket buffers hold a few MiB each way; without back-pressure the server would
        // have written the whole 64 MiB long before.
        // URLSession's delegate queue holds libcurl back only while the receiver makes progress
        // (``URLSessionTransport``: a tenth of a second without any counts as a stopped
        // receiver, so that one session never holds back every other): on a loaded machine a
        // slow receiver can look stopped, and the body then piles up in memory. AsyncHTTPClient
        // holds back the connection whatever the receiver's pace.
        withKnownIssue("URLSession stops holding back a receiver that looks stopped", isIntermittent: true) {
            #expect(ahead < 24 << 20, "the server wrote \(ahead) bytes ahead of the receiver")
        } when: {
            kind == .urlSession
        }
    }

    @Test("a large body arrives whole and in order", arguments: TransportKind.allCases)
    func largeBody(_ kind: TransportKind) async throws {
        let size = 24 << 20
        let pattern: @Sendable (Int) -> UInt8 = { UInt8(truncatingIfNeeded: $0 % 251) }
        let server = try RawHTTPServer { _, connection in
            guard connection.write("HTTP/1.1 200 OK\r\nContent-Length: \(size)\r\n\r\n") else { return false }
            var offset = 0
            while offset < size {
                let block = (offset..<min(size, offset + (256 << 10))).map(pattern)
                guard connection.write(block) else { return false }
                offset += block.count
            }
            return true
        }
        defer { server.stop() }
        let transport = kind.make()
        defer { transport.shutdown() }
        let receiver = RecordingReceiver(keepsBytes: false, expectedByte: pattern)
        let head = try await transport.send(request(server.url, "/large"), to: receiver)
        #expect(head.status == 200)
        #expect(receiver.count == size)
        #expect(receiver.firstMismatch == nil)
        // Chunk by chunk, never the body whole.
        #expect(receiver.chunkSizes.count > 1)
        #expect((receiver.chunkSizes.max() ?? 0) < size / 4)
    }

    @Test("an empty body: the head, no chunk", arguments: TransportKind.allCases)
    func emptyBody(_ kind: TransportKind) async throws {
        let server = try RawHTTPServer { request, connection in
            if request.path == "/204" {
                connection.write("HTTP/1.1 204 No Content\r\n\r\n")
            } else {
                connection.write("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
            }
            return true
        }
        defer { server.stop() }
        let transport = kind.make()
        defer { transport.shutdown() }
        for path in ["/204", "/empty"] {
            let receiver = RecordingReceiver()
            let head = try await transport.send(request(server.url, path), to: receiver)
            #expect(head.status == (path == "/204" ? 204 : 200))
            #expect(receiver.calls == ["head \(head.status)"])
            #expect(receiver.count == 0)
        }
    }

    @Test("a small body arrives whole, after the head", arguments: TransportKind.allCases)
    func smallBody(_ kind: TransportKind) async throws {
        let body = #"{"data":[{"uuid":"u-1"}],"total":1}"#
        let server = try RawHTTPServer { _, connection in
            connection.write("HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            return true
        }
        defer { server.stop() }
        let transport = kind.make()
        defer { transport.shutdown() }
        let receiver = RecordingReceiver()
        let head = try await transport.send(request(server.url, "/one"), to: receiver)
        #expect(head.status == 200)
        #expect(receiver.calls == ["head 200", "chunk"])
        #expect(String(decoding: receiver.bytes, as: UTF8.self) == body)
    }

    @Test(
        "a receiver that throws stops the request, and its error is the one thrown", arguments: TransportKind.allCases)
    func receiverThrows(_ kind: TransportKind) async throws {
        let size = 8 << 20
        let written = Counter()
        let server = try RawHTTPServer { _, connection in
            guard connection.write("HTTP/1.1 200 OK\r\nContent-Length: \(size)\r\n\r\n") else { return false }
            let block = [UInt8](repeating: 0x62, count: 64 << 10)
            var sent = 0
            while sent < size, connection.write(block) {
                sent += block.count
                written.add(block.count)
            }
            return sent == size
        }
        defer { server.stop() }
        let transport = kind.make()
        defer { transport.shutdown() }
        await #expect(throws: ThrowingReceiver.Stop.self) {
            _ = try await transport.send(request(server.url, "/at-head"), to: ThrowingReceiver(atHead: true))
        }
        let receiver = ThrowingReceiver(atHead: false)
        await #expect(throws: ThrowingReceiver.Stop.self) {
            _ = try await transport.send(request(server.url, "/at-chunk"), to: receiver)
        }
        #expect(receiver.chunks == 1)
        // The transport still works after a receiver's failure.
        let counting = RecordingReceiver(keepsBytes: false)
        let head = try await transport.send(request(server.url, "/whole"), to: counting)
        #expect(head.status == 200 && counting.count == size)
    }

    @Test("cancelling the caller in the middle of a body cancels the request", arguments: TransportKind.allCases)
    func cancellationMidBody(_ kind: TransportKind) async throws {
        let closed = PeerClose()
        let server = try RawHTTPServer(handle: Self.stopsAfter(20_000, of: 1 << 20, closed: closed))
        defer { server.stop() }
        let transport = kind.make()
        defer { transport.shutdown() }
        let receiver = RecordingReceiver()
        let sending = Task { try await transport.send(request(server.url, "/users"), to: receiver) }
        try await waitUntil("part of the body arrived") { receiver.count > 0 }
        sending.cancel()
        let error = await httpError { try await sending.value }
        #expect(error?.code == .cancelled)
        #expect(receiver.count <= 20_000)
        // The connection is closed: the server sees it go.
        try await waitUntil("the server saw the connection close") { closed.seconds != nil }
    }

    /// A cancel can land at any moment of a send: before the request is handed to the
    /// transport's client, while it connects, while it waits for an answer that never comes.
    /// Whenever it lands, the send ends with `.cancelled` at once; it never waits for an answer
    /// (the server here never sends one, and holds each connection until the client closes it).
    @Test(
        "a send cancelled at any moment ends, cancelled, without waiting for an answer",
        arguments: TransportKind.allCases)
    func cancellationAtAnyMoment(_ kind: TransportKind) async throws {
        let server = try RawHTTPServer { _, connection in
            _ = connection.secondsUntilClosed(limit: 120)
            return false
        }
        defer { server.stop() }
        let transport = kind.make()
        defer { transport.shutdown() }
        var random = SystemRandomNumberGenerator()
        for attempt in 0..<150 {
            let sending = Task {
                try await transport.send(
                    request(server.url, "/never/\(attempt)", timeout: 100), to: RecordingReceiver())
            }
            // From no wait at all (a cancel before the send starts) to a few milliseconds.
            let pause = attempt % 3 == 0 ? 0 : Int.random(in: 0...3_000, using: &random)
            if pause > 0 { try await Task.sleep(for: .microseconds(pause)) }
            sending.cancel()
            // Bounded by a clock of its own: a send that waits for its answer fails here.
            let ended = try await boundedWait(seconds: 20) { await httpError { try await sending.value } }
            guard let error = ended else {
                Issue.record("attempt \(attempt) (cancelled after \(pause) µs) did not end within 20 s")
                return
            }
            #expect(error?.code == .cancelled, "attempt \(attempt): \(String(describing: error))")
        }
    }

    @Test("a connection dropped in the middle of a body is a transport error", arguments: TransportKind.allCases)
    func droppedConnection(_ kind: TransportKind) async throws {
        let server = try RawHTTPServer { _, connection in
            connection.write("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
            connection.write([UInt8](repeating: 0x63, count: 10_000))
            return false
        }
        defer { server.stop() }
        let transport = kind.make()
        defer { transport.shutdown() }
        let receiver = RecordingReceiver()
        let error = await httpError { try await transport.send(request(server.url, "/drop"), to: receiver) }
        #expect(error?.code == .transport)
        #expect(receiver.count <= 10_000)
    }

    /// The server reads the write, then the connection drops before the answer: the retry
    /// sends the write again, with its whole body, and gets the answer.
    @Test("a write re-sent after a lost answer carries its body", arguments: TransportKind.allCases)
    func resentWriteCarriesItsBody(_ kind: TransportKind) async throws {
        let answered = Counter()
        let server = try RawHTTPServer { request, connection in
            if request.method == "GET" {
                // A keep-alive answer: the client may send the write on this connection next.
                connection.write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n[]")
                return true
            }
            // The first write is read whole, then its answer is lost.
            if answered.current == 0 {
                answered.add(1)
                return false
            }
            let body = #"{"uuid":"d-1","name":"renamed"}"#
            connection.write(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
            )
            return true
        }
        defer { server.stop() }
        let environment = try Environment(name: "raw", baseURL: server.url, allowInsecureHTTP: true)
        let policy = RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(1), maxDelay: .milliseconds(10))
        let session = makeSession(environment, configuration: .init(retryPolicy: policy, timeout: 10), transport: kind)
        _ = try await session.send(.get, "/devices")
        let body = Array(#"{"uuid":"d-1","name":"renamed","padding":"\#(String(repeating: "x", count: 4000))"}"#.utf8)
        let result = try await session.send(.put, "/devices/d-1", body: body)
        #expect(result.status == 200)
        let writes = server.received.filter { $0.method == "PUT" }
        #expect(writes.count >= 2)
        for write in writes {
            #expect(write.body == body)
            #expect(write.headers["content-length"] == "\(body.count)")
        }
    }

    @Test("no answer within the request's timeout is a transport error", arguments: TransportKind.allCases)
    func noAnswerTimesOut(_ kind: TransportKind) async throws {
        let closed = PeerClose()
        let server = try RawHTTPServer { _, connection in
            closed.record(connection.secondsUntilClosed())
            return false
        }
        defer { server.stop() }
        let transport = kind.make()
        defer { transport.shutdown() }
        let error = await httpError {
            try await transport.send(request(server.url, "/silent", timeout: 1), to: RecordingReceiver())
        }
        #expect(error?.code == .transport)
        // Timed by the server's own thread (from the request read to the client's close), so
        // that a busy cooperative pool in the test process cannot stretch it.
        try await waitUntil("the server saw the connection close") { closed.seconds != nil }
        #expect(try #require(closed.seconds) < 20)
    }

    /// A port nothing listens on refuses the connection: the send fails at once. AsyncHTTPClient
    /// on its own tries connecting again until its connect timeout (an hour here) runs out; the
    /// case gives up on it after a minute.
    @Test("a server that is down fails the request at once, a transport error", arguments: TransportKind.allCases)
    func refusedConnectionFailsAtOnce(_ kind: TransportKind) async throws {
        let transport: any HTTPTransport =
            switch kind {
            case .urlSession: URLSessionTransport()
            case .asyncHTTPClient: AsyncHTTPClientTransport(configuration: .init(connectTimeout: .seconds(3600)))
            }
        defer { transport.shutdown() }
        let down = URL(string: "http://127.0.0.1:1")!
        let ended = try await boundedWait(seconds: 60) {
            await httpError {
                try await transport.send(request(down, "/tables/todoitem", timeout: 3600), to: RecordingReceiver())
            }
        }
        guard let error = ended else {
            Issue.record("the send to a refused port had not failed after 60 s")
            return
        }
        #expect(error?.code == .transport, "\(String(describing: error))")
    }

    /// The server sends the head and the first 20 000 bytes at once, from its own thread, then
    /// nothing: the transport cuts the body once the timeout has passed with no byte.
    @Test("a body that stops for longer than the timeout is cut, a transport error", arguments: TransportKind.allCases)
    func stalledBodyIsCut(_ kind: TransportKind) async throws {
        let closed = PeerClose()
        let server = try RawHTTPServer(handle: Self.stopsAfter(20_000, of: 1 << 20, closed: closed))
        defer { server.stop() }
        let transport = kind.make()
        defer { transport.shutdown() }
        let receiver = RecordingReceiver()
        let error = await httpError {
            try await transport.send(request(server.url, "/stops", timeout: 2), to: receiver)
        }
        #expect(error?.code == .transport)
        #expect(error?.status == 200)
        #expect(receiver.count > 0 && receiver.count <= 20_000)
        // Timed by the server's own thread, from the last byte it wrote to the client's close.
        try await waitUntil("the server saw the connection close") { closed.seconds != nil }
        #expect(try #require(closed.seconds) < 30)
    }

    /// Six parts half a second apart take longer than the timeout, but no silence does: the
    /// timeout bounds the silences, not the whole body.
    @Test("a body that keeps arriving is not cut by the timeout", arguments: TransportKind.allCases)
    func slowSteadyBodyIsNotCut(_ kind: TransportKind) async throws {
        let part = [UInt8](repeating: 0x64, count: 1000)
        let server = try RawHTTPServer { _, connection in
            guard connection.write("HTTP/1.1 200 OK\r\nContent-Length: \(6 * part.count)\r\n\r\n") else { return false }
            for _ in 0..<6 {
                Thread.sleep(forTimeInterval: 0.5)
                guard connection.write(part) else { return false }
            }
            return true
        }
        defer { server.stop() }
        let transport = kind.make()
        defer { transport.shutdown() }
        let receiver = RecordingReceiver()
        let head = try await transport.send(request(server.url, "/slow", timeout: 2.5), to: receiver)
        #expect(head.status == 200)
        #expect(receiver.count == 6 * part.count)
    }

    @Test("shutdown cancels what is in flight; a send after it fails", arguments: TransportKind.allCases)
    func shutdownCancelsInFlight(_ kind: TransportKind) async throws {
        let server = try RawHTTPServer(handle: Self.stopsAfter(5_000, of: 1 << 20, closed: PeerClose()))
        defer { server.stop() }
        let transport = kind.make()
        let receiver = RecordingReceiver()
        let sending = Task { try await transport.send(request(server.url, "/long"), to: receiver) }
        try await waitUntil("part of the body arrived") { receiver.count > 0 }
        transport.shutdown()
        let error = await httpError { try await sending.value }
        #expect(error?.code == .cancelled)
        // URLSession's own behaviour after invalidation is corelibs' (a new task on an
        // invalidated session is a programming error there): checked on AsyncHTTPClient only.
        if kind == .asyncHTTPClient {
            let later = await httpError {
                try await transport.send(request(server.url, "/later"), to: RecordingReceiver())
            }
            #expect(later?.code == .sessionEnded)
        }
    }

    /// On Linux every URLSession of the process shares one work queue; the back-pressure that
    /// holds it while a receiver falls behind must not hold it while a receiver is stopped, or
    /// every other session (another user, another environment) stops with it.
    @Test(arguments: TransportKind.allCases)
    func aStalledReceiverHoldsBackNoOtherSession(_ kind: TransportKind) async throws {
        try await withServer(population: .init(users: 2000)) { _, environment in
            let stalledTransport = kind.make()
            let otherTransport = kind.make()
            defer {
                stalledTransport.shutdown()
                otherTransport.shutdown()
            }
            let stalled = StalledReceiver()
            let big = Task {
                try await stalledTransport.send(request(environment.baseURL, "/users?offset=0&count=2000"), to: stalled)
            }
            try await waitUntil("the stalled receiver has its first chunk") { stalled.chunkCount == 1 }
            // Time for the transport to read far more chunks than it lets wait.
            try await Task.sleep(for: .milliseconds(300))
            let counting = RecordingReceiver()
            let head = try await otherTransport.send(
                request(environment.baseURL, "/users?offset=0&count=5"), to: counting)
            stalled.release.signal()
            #expect(head.status == 200 && counting.count > 0)
            let bigHead = try await big.value
            // The other request finished while the receiver was still stopped.
            #expect(stalled.wasReleasedInTime == true)
            #expect(bigHead.status == 200 && stalled.chunkCount > 8)
        }
    }

    /// A raw server's handler: the head of a `total`-byte body and its first `bytes`, then
    /// nothing; `closed` gets the seconds until the client closed the connection.
    private static func stopsAfter(_ bytes: Int, of total: Int, closed: PeerClose)
        -> @Sendable (RawHTTPServer.Request, RawHTTPServer.Connection) -> Bool
    {
        { _, connection in
            connection.write("HTTP/1.1 200 OK\r\nContent-Length: \(total)\r\n\r\n")
            connection.write([UInt8](repeating: 0x65, count: bytes))
            closed.record(connection.secondsUntilClosed())
            return false
        }
    }
}

/// The seconds a raw server's handler waited until its client closed the connection.
private final class PeerClose: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Double?
    var seconds: Double? { lock.withLock { value } }
    func record(_ seconds: Double?) {
        lock.withLock { value = seconds ?? .infinity }
    }
}

/// A receiver that throws at the head or at its first chunk.
private final class ThrowingReceiver: HTTPResponseReceiver, @unchecked Sendable {
    struct Stop: Error {}
    let atHead: Bool
    private let lock = NSLock()
    private var count = 0
    init(atHead: Bool) { self.atHead = atHead }
    var chunks: Int { lock.withLock { count } }
    func receive(head: HTTPResponseHead) throws { if atHead { throw Stop() } }
    func receive(chunk: UnsafeRawBufferPointer) throws {
        lock.withLock { count += 1 }
        throw Stop()
    }
}
