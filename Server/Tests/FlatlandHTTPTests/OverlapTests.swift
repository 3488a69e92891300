import Flatland
import FlatlandFixtures
import FlatlandServerTesting
import Foundation
import Testing

@testable import FlatlandHTTP

/// A transport that streams one 200 body in chunks of a given size, as fast as the receiver
/// takes them, and records how many chunks it handed in.
final class ChunkedTransport: HTTPTransport, @unchecked Sendable {
    let body: [UInt8]
    let chunkSize: Int
    /// Handed in before the transport waits for ``gate`` (nil: never waits).
    let pauseAfterChunks: Int?
    /// The `Content-Length` the head says (none when nil).
    let contentLength: Int?
    /// The `Content-Encoding` the head says (none when nil).
    let contentEncoding: String?
    /// The key of the thread dictionary entry that marks the thread handing in the head and
    /// the chunks.
    static let threadMark = "chunked-transport"

    /// Whether the current thread is one that hands in a response.
    static var onTransportThread: Bool { Thread.current.threadDictionary[threadMark] != nil }
    let gate = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var handed = 0
    private var paused = false

    init(
        body: [UInt8], chunkSize: Int, pauseAfterChunks: Int? = nil, contentLength: Int? = nil,
        contentEncoding: String? = nil
    ) {
        self.body = body
        self.chunkSize = chunkSize
        self.pauseAfterChunks = pauseAfterChunks
        self.contentLength = contentLength
        self.contentEncoding = contentEncoding
    }

    /// Chunks handed to the receiver so far.
    var chunksHanded: Int { lock.withLock { handed } }
    /// Whether the transport is waiting at its pause.
    var isPaused: Bool { lock.withLock { paused } }

    /// Streams on a thread of its own, as URLSession's delegate queue does: the loop blocks
    /// (back-pressure, the pause), and a blocked thread of the concurrency pool would stall
    /// every other test's server in the process.
    func send(_ request: HTTPRequest, to receiver: any HTTPResponseReceiver) async throws -> HTTPResponseHead {
        let cancelled = Cancelled()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                Thread {
                    Thread.current.threadDictionary[Self.threadMark] = true
                    continuation.resume(with: Result { try self.stream(to: receiver, cancelled) })
                }.start()
            }
        } onCancel: {
            cancelled.set()
        }
    }

    private func stream(to receiver: any HTTPResponseReceiver, _ cancelled: Cancelled) throws -> HTTPResponseHead {
        var headers: HTTPHeaders = ["Content-Type": "application/json"]
        if let contentLength { headers["content-length"] = "\(contentLength)" }
        if let contentEncoding { headers["Content-Encoding"] = contentEncoding }
        let head = HTTPResponseHead(status: 200, headers: headers)
        try receiver.receive(head: head)
        var offset = 0
        while offset < body.count {
            if let pauseAfterChunks, chunksHanded == pauseAfterChunks {
                lock.withLock { paused = true }
                while gate.wait(timeout: .now() + .milliseconds(5)) == .timedOut {
                    if cancelled.isSet { throw HTTPError(.cancelled, "cancelled while paused") }
                }
            }
            let end = min(body.count, offset + chunkSize)
            try body[offset..<end].withUnsafeBytes { try receiver.receive(chunk: $0) }
            lock.withLock { handed += 1 }
            offset = end
        }
        return head
    }

    /// Set by the task's cancellation handler, read by the streaming thread.
    private final class Cancelled: @unchecked Sendable {
        private let lock = NSLock()
        private var value = false
        func set() { lock.withLock { value = true } }
        var isSet: Bool { lock.withLock { value } }
    }

    func shutdown() {}
}

@Suite("Download and ingest overlap through a bounded buffer")
struct OverlapTests {
    private func session(
        _ transport: ChunkedTransport, capacity: Int, store: Store? = nil, hooks: StoreHooks = StoreHooks()
    ) throws -> Session {
        let environment = try Environment(name: "chunked", baseURL: URL(string: "http://127.0.0.1:1")!)
        return Session(
            user: "ada", environment: environment, registry: seedFixtureRegistry(), hooks: hooks,
            configuration: Backend.Configuration(makeTransport: { transport }, ingestBufferCapacity: capacity))
    }

    /// A session whose store records, for every entity read, whether the transport's own thread
    /// read it.
    private func recordingSession(_ transport: ChunkedTransport) throws -> (Session, LockedLines) {
        let threads = LockedLines()
        let hooks = StoreHooks(condition: { _ in
            threads.append(ChunkedTransport.onTransportThread ? "transport" : "consumer")
            return true
        })
        return (try session(transport, capacity: 64 << 10, hooks: hooks), threads)
    }

    /// A seed-shaped slice of `count` users, and what an in-memory ingest of it gives.
    private func slice(users count: Int) throws -> (body: [UInt8], items: [String], records: Int) {
        var generator = SeedGenerator(seed: 25)
        let body = generator.userSlice(count: count)
        let store = Store(registry: seedFixtureRegistry())
        let result = try store.ingest(body, endpoint: "/users")
        return (body, result.taskCollection.knownItems, store.count)
    }

    @Test("a consumer slower than the producer keeps the buffered bytes under the bound")
    func pipeBackPressure() throws {
        let pipe = ChunkPipe(capacity: 64 << 10)
        let chunks = (0..<200).map { index in [UInt8](repeating: UInt8(index % 251), count: 16 << 10) }
        let received = LockedLines()
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            while let chunk = pipe.pop() {
                Thread.sleep(forTimeInterval: 0.0002)
                received.append("\(chunk.count) \(chunk[0])")
            }
            done.signal()
        }
        for chunk in chunks {
            try chunk.withUnsafeBytes { try pipe.push($0) { CancellationError() } }
        }
        pipe.close()
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(pipe.peakBuffered <= 64 << 10)
        #expect(pipe.peakBuffered >= 16 << 10)
        // Every chunk, in order.
        #expect(received.all == chunks.map { "\($0.count) \($0[0])" })
    }

    @Test("a cancelled pipe wakes a producer waiting on a full buffer and throws")
    func pipeCancelWakesProducer() async throws {
        let pipe = ChunkPipe(capacity: 4)
        try [UInt8](repeating: 1, count: 4).withUnsafeBytes { try pipe.push($0) { CancellationError() } }
        let outcome = LockedLines()
        let finished = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            do {
                try [UInt8](repeating: 2, count: 4).withUnsafeBytes { try pipe.push($0) { CancellationError() } }
                outcome.append("pushed")
            } catch {
                outcome.append("threw \(type(of: error))")
            }
            finished.signal()
        }
        try await Task.sleep(for: .milliseconds(20))
        #expect(outcome.all.isEmpty)
        pipe.cancel()
        #expect(finished.wait(timeout: .now() + 10) == .success)
        #expect(outcome.all == ["threw CancellationError"])
        #expect(pipe.pop() == nil)
    }

    @Test("a large body through a small buffer: bytes buffered stay bounded, the result is the in-memory ingest's")
    func boundedAndInOrder() async throws {
        let expected = try slice(users: 1000)
        #expect(expected.body.count > 400_000)
        // Tiny odd-sized chunks: any reordering or loss would break the JSON or the items.
        for chunkSize in [7, 4096] {
            let transport = ChunkedTransport(body: expected.body, chunkSize: chunkSize)
            let session = try session(transport, capacity: 32 << 10)
            let task = session.launch(.get, "/users")
            let result = try await task.value
            #expect(result.items == expected.items)
            #expect(session.store.count == expected.records)
            #expect(task.bytesReceived == expected.body.count)
            #expect(task.peakBytesBuffered > 0)
            #expect(task.peakBytesBuffered <= 32 << 10)
            #expect(task.state == .succeeded)
            await session.logout()
        }
    }

    @Test("cancelled mid-body: nothing is applied, and the store keeps what it had")
    func cancelMidBody() async throws {
        let expected = try slice(users: 400)
        let transport = ChunkedTransport(body: expected.body, chunkSize: 1024, pauseAfterChunks: 60)
        let session = try session(transport, capacity: 8 << 10)
        var other = SeedGenerator(seed: 7)
        try session.store.ingest(other.userSlice(count: 3), endpoint: "/earlier")
        let count = session.store.count
        let collections = session.store.collections.count
        #expect(count > 0)
        let task = session.launch(.get, "/users")
        try await waitUntil("the transport pauses mid-body") { transport.isPaused }
        // The ingest has read what came so far (entities included), but none of it is applied.
        task.cancel()
        let error = try #require(await failure(of: task))
        #expect(error.code == .cancelled)
        #expect(task.state == .cancelled)
        #expect(task.bytesReceived == 60 * 1024)
        #expect(session.store.count == count)
        #expect(session.store.collections.count == collections)
        await session.logout()
    }

    @Test("an ingest error mid-body fails the task, stops the download early, and applies nothing")
    func ingestErrorMidBody() async throws {
        var expected = try slice(users: 2000).body
        // A wrong type at about a tenth of the body: the ingest fails there.
        let cut = expected.count / 10
        let at = try #require(expected[cut...].firstIndex(of: UInt8(ascii: "{")))
        expected.replaceSubrange(at..<(at + 1), with: Array(#"{"uuid":"u-bad","age":"old"},{"#.utf8))
        let transport = ChunkedTransport(body: expected, chunkSize: 512)
        let session = try session(transport, capacity: 16 << 10)
        let task = session.launch(.get, "/users")
        let error = try #require(await failure(of: task))
        #expect(error.code == .decoding)
        #expect(task.state == .failed)
        #expect(session.store.count == 0)
        #expect(session.store.collections.isEmpty)
        // The transport was stopped soon after the error, not at the end of the body.
        let total = (expected.count + 511) / 512
        #expect(transport.chunksHanded < total / 2)
        await session.logout()
    }

    @Test("a dropped connection mid-body over loopback applies nothing")
    func droppedConnectionMidBody() async throws {
        try await withServer(population: .init(users: 400)) { server, environment in
            let session = makeSession(environment)
            _ = try await session.send(.get, "/users?offset=0&count=10")
            let count = session.store.count
            server.knobs.chunkBodies(size: 4096)
            server.knobs.dropConnection("/users", afterBytes: 100_000)
            let error = try #require(await failure(of: session.launch(.get, "/users?offset=0&count=400")))
            #expect(error.code == .transport)
            #expect(session.store.count == count)
            #expect(session.store.collections(kind: .task).count == 1)
        }
    }

    @Test("over loopback, a slow ingest holds back the download: the buffered bytes stay bounded")
    func loopbackBackPressure() async throws {
        try await withServer(population: .init(users: 2000)) { server, environment in
            // A store hook that makes the ingest slow: every entity takes a little time.
            let slow = StoreHooks(condition: { _ in
                Thread.sleep(forTimeInterval: 0.00005)
                return true
            })
            let session = Session(
                user: "ada", environment: environment, registry: seedFixtureRegistry(), hooks: slow,
                configuration: Backend.Configuration(ingestBufferCapacity: 64 << 10))
            let task = session.launch(.get, "/users?offset=0&count=2000")
            let result = try await task.value
            #expect(result.items.count == 2000)
            #expect(task.bytesReceived > 500_000)
            #expect(task.peakBytesBuffered > 0)
            #expect(task.peakBytesBuffered <= 64 << 10)
            await session.logout()
        }
    }

    @Test("a small body that comes whole is read on the transport's thread, with the same result")
    func smallBodyReadInline() async throws {
        let expected = try slice(users: 20)
        #expect(expected.body.count < IngestReceiver.inlineLimit)
        let cases: [(chunkSize: Int, contentLength: Int?, reader: String)] = [
            (expected.body.count, expected.body.count, "transport"),
            // Not whole in its first chunk, or no length: the consumer reads it.
            (expected.body.count / 3, expected.body.count, "consumer"),
            (expected.body.count, nil, "consumer"),
        ]
        for (chunkSize, contentLength, reader) in cases {
            let transport = ChunkedTransport(body: expected.body, chunkSize: chunkSize, contentLength: contentLength)
            let (session, threads) = try recordingSession(transport)
            let task = session.launch(.get, "/users")
            let result = try await task.value
            #expect(result.items == expected.items)
            #expect(session.store.count == expected.records)
            let length = contentLength.map(String.init) ?? "none"
            #expect(Set(threads.all) == [reader], "chunks of \(chunkSize), length \(length)")
            await session.logout()
        }
    }

    @Test("a small body read on the transport's thread: an ingest error fails the task and applies nothing")
    func smallBodyInlineError() async throws {
        var body = try slice(users: 20).body
        let at = try #require(body.lastIndex(of: UInt8(ascii: "{")))
        body.replaceSubrange(at..<(at + 1), with: Array(#"{"uuid":"u-bad","age":"old"},{"#.utf8))
        let transport = ChunkedTransport(body: body, chunkSize: body.count, contentLength: body.count)
        let (session, threads) = try recordingSession(transport)
        let error = try #require(await failure(of: session.launch(.get, "/users")))
        #expect(error.code == .decoding)
        #expect(threads.all.contains("transport"))
        #expect(session.store.count == 0)
        #expect(session.store.collections.isEmpty)
        await session.logout()
    }

    @Test("an encoded body whose first decoded chunk has the encoded length is read by the consumer, whole")
    func encodedBodyIsNotReadInline() async throws {
        let expected = try slice(users: 20)
        // URLSession hands in decoded chunks of a gzip body whose Content-Length is the encoded
        // size: a first chunk of exactly that size says nothing about the end of the body.
        let first = expected.body.count / 2
        let transport = ChunkedTransport(
            body: expected.body, chunkSize: first, contentLength: first, contentEncoding: "gzip")
        let (session, threads) = try recordingSession(transport)
        let result = try await session.launch(.get, "/users").value
        #expect(result.items == expected.items)
        #expect(Set(threads.all) == ["consumer"])
        await session.logout()
    }

    @Test("a body longer than its Content-Length, read whole at first: the task fails, nothing applied")
    func bodyPastItsLength() async throws {
        let body = try slice(users: 20).body
        let extra = body + Array("   ".utf8)
        // The first chunk is the whole declared body; the next one is past it.
        let transport = ChunkedTransport(body: extra, chunkSize: body.count, contentLength: body.count)
        let (session, _) = try recordingSession(transport)
        let error = try #require(await failure(of: session.launch(.get, "/users")))
        #expect(error.code == .transport)
        #expect(session.store.count == 0)
        await session.logout()
    }
}
