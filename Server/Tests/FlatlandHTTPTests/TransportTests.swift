import FlatlandHTTP
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

/// A receiver that counts the body's bytes.
private final class CountingReceiver: HTTPResponseReceiver, @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var bytes: Int { lock.withLock { count } }
    func receive(head: HTTPResponseHead) throws {}
    func receive(chunk: UnsafeRawBufferPointer) throws { lock.withLock { count += chunk.count } }
}

@Suite("The URLSession transport")
struct TransportTests {
    /// On Linux every URLSession of the process shares one work queue; the back-pressure that
    /// holds it while a receiver falls behind must not hold it while a receiver is stopped, or
    /// every other session (another user, another environment) stops with it.
    @Test func aStalledReceiverHoldsBackNoOtherSession() async throws {
        try await withServer(population: .init(users: 2000)) { _, environment in
            let stalledTransport = URLSessionTransport()
            let otherTransport = URLSessionTransport()
            defer {
                stalledTransport.shutdown()
                otherTransport.shutdown()
            }
            func request(_ path: String) -> HTTPRequest {
                HTTPRequest(
                    method: .get, url: URL(string: environment.baseURL.absoluteString + path)!, endpoint: path,
                    timeout: 60)
            }
            let stalled = StalledReceiver()
            let big = Task { try await stalledTransport.send(request("/users?offset=0&count=2000"), to: stalled) }
            try await waitUntil("the stalled receiver has its first chunk") { stalled.chunkCount == 1 }
            // Time for URLSession to read far more chunks than its delegate queue lets wait.
            try await Task.sleep(for: .milliseconds(300))
            let counting = CountingReceiver()
            let head = try await otherTransport.send(request("/users?offset=0&count=5"), to: counting)
            stalled.release.signal()
            #expect(head.status == 200 && counting.bytes > 0)
            let bigHead = try await big.value
            // The other request finished while the receiver was still stopped.
            #expect(stalled.wasReleasedInTime == true)
            #expect(bigHead.status == 200 && stalled.chunkCount > 8)
        }
    }
}
