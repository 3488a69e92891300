import Flatland
import Foundation

/// A response as the filters see it on the way back.
///
/// For a 2xx response the body has been streamed into an ingest that is applied to the store
/// only when the task completes, after every filter has returned; for any other status the
/// body is kept (at most 64 KiB) as the server's error body.
public struct HTTPResponse: Sendable {
    /// The status code.
    public var status: Int
    /// The header fields.
    public var headers: HTTPHeaders
    /// The error body of a response that is not 2xx.
    public var errorBody: [UInt8]
    /// Body bytes received.
    public var bytesReceived: Int
    /// The body of a 2xx response read whole, for a request that asked for it
    /// (``HTTPRequest/consumption``); nil when it was streamed into the store.
    public var body: [UInt8]?
    let pending: PendingIngest?

    init(head: HTTPResponseHead, receiver: IngestReceiver) {
        status = head.status
        headers = head.headers
        errorBody = receiver.errorBody
        bytesReceived = receiver.bytes
        body = receiver.body
        pending = receiver.pending
    }

    /// A response made by a filter without going to the network (a cache, a stub): it carries
    /// no ingest.
    public init(status: Int, headers: HTTPHeaders = [:], errorBody: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.errorBody = errorBody
        bytesReceived = 0
        body = nil
        pending = nil
    }

    /// Whether the status is 2xx.
    public var isSuccess: Bool { (200..<300).contains(status) }
}

/// An ingest that has read a whole body and waits to be applied.
final class PendingIngest: @unchecked Sendable {
    let ingestor: Ingestor
    init(_ ingestor: Ingestor) { self.ingestor = ingestor }
}

/// Streams a response: a 2xx body into an ingestor, chunk by chunk; any other body into the
/// error body.
///
/// The ingest runs on a thread of its own, overlapped with the download: the transport's thread
/// copies each chunk into a bounded ``ChunkPipe`` and goes back to the network, the consumer
/// feeds the chunks to the ingestor in order. When the ingest falls behind, the pipe fills and
/// the transport's thread waits (back-pressure), so at most the pipe's capacity of body bytes is
/// ever held. An ingest error stops the pipe: the next chunk the transport hands in throws it,
/// and the transport stops the request. Nothing is applied until the whole body has been read
/// (``bodyIngested()``) and the backend commits the batch.
///
/// A small body that arrives whole in its first chunk (its `Content-Length`, at most
/// ``inlineLimit`` bytes, and no `Content-Encoding`) is read on the transport's thread instead,
/// as it arrives: there is no
/// download left to overlap it with, and handing it to a thread of its own cost a page of a
/// pull more than reading it.
final class IngestReceiver: HTTPResponseReceiver, @unchecked Sendable {
    private struct State {
        var errorBody: [UInt8] = []
        /// A 2xx body read whole (``ResponseConsumption/bytes(limit:)``, ``ResponseConsumption/json(limit:)``).
        var body: [UInt8]?
        var bytes = 0
        var ingestor: Ingestor?
        var pipe: ChunkPipe?
        /// The body's length, when it is small enough to read on the transport's thread.
        var smallBody: Int?
        /// Whether the body has begun to be read (by the consumer, or on the transport's thread).
        var reading = false
        /// Whether it was read whole on the transport's thread.
        var readInline = false
        var consumerDone = false
        var consumerFailure: (any Error)?
        var waiter: CheckedContinuation<Void, any Error>?
        var cancelled = false
    }

    private let state = Locked(State())
    private let makeIngestor: () -> Ingestor
    private let progress: @Sendable (Int) -> Void
    private let bufferCapacity: Int
    /// The most bytes of a 2xx body read whole; nil: streamed into the ingest.
    private let bodyLimit: Int?
    static let maxErrorBody = 64 << 10
    /// The largest body read on the transport's thread (when it arrives whole in one chunk).
    static let inlineLimit = 64 << 10

    init(
        makeIngestor: @escaping () -> Ingestor, bufferCapacity: Int = Backend.Configuration.defaultIngestBufferCapacity,
        consumption: ResponseConsumption = .ingest, progress: @escaping @Sendable (Int) -> Void
    ) {
        self.makeIngestor = makeIngestor
        self.bufferCapacity = bufferCapacity
        bodyLimit = consumption.limit
        self.progress = progress
    }

    var errorBody: [UInt8] { state.withLock { $0.errorBody } }
    var body: [UInt8]? { state.withLock { $0.body } }
    var bytes: Int { state.withLock { $0.bytes } }

    /// The most body bytes that waited for the ingest at once.
    var peakBuffered: Int { state.withLock { $0.pipe }?.peakBuffered ?? 0 }

    /// The ingest, when the body was a 2xx body with content.
    var pending: PendingIngest? {
        state.withLock { s in s.bytes > 0 ? s.ingestor.map(PendingIngest.init) : nil }
    }

    func receive(head: HTTPResponseHead) throws {
        let started = state.withLock { s -> (ingestor: Ingestor, pipe: ChunkPipe, consumer: Bool)? in
            guard head.isSuccess && head.status != 204 else { return nil }
            // Read whole, not streamed into the store.
            if bodyLimit != nil {
                s.body = []
                return nil
            }
            // The length of the body as it arrives: not when it was encoded (gzip), where the
            // length is the encoded one and the chunks are decoded.
            let length = head.headers["Content-Length"].flatMap { Int($0) }
            let encoding = head.headers["Content-Encoding"]?.lowercased() ?? "identity"
            if let length, length > 0, length <= Self.inlineLimit, encoding == "identity" { s.smallBody = length }
            let made = makeIngestor()
            // A page's place from its headers (a bare array with a Link header), where the caller
            // has not said it in the request's IngestOptions.page.
            let fromHeaders = PageHeaders.context(head.headers)
            var context = made.pageContext
            if context.nextLink == nil { context.nextLink = fromHeaders.nextLink }
            if context.total == nil { context.total = fromHeaders.total }
            if context != made.pageContext { made.pageContext = context }
            let pipe = ChunkPipe(capacity: bufferCapacity)
            s.ingestor = made
            s.pipe = pipe
            if s.cancelled { pipe.cancel() }
            // A small body waits for its first chunk: it may arrive whole.
            s.reading = s.smallBody == nil
            return (made, pipe, s.reading)
        }
        if let started, started.consumer { startConsumer(started.ingestor, started.pipe) }
    }

    /// Starts the consumer, on a thread of its own: not on Swift's cooperative pool, since it
    /// blocks while it waits for chunks. The caller has set `reading` (under the lock), so that
    /// only one consumer ever starts.
    private func startConsumer(_ ingestor: Ingestor, _ pipe: ChunkPipe) {
        let box = UncheckedBox((self, ingestor, pipe))
        DispatchQueue.global(qos: .userInitiated).async {
            let (receiver, ingestor, pipe) = box.value
            receiver.consume(ingestor, pipe)
        }
    }

    /// Where a chunk goes.
    private enum Route {
        /// Into the error body (or nowhere): not a body the ingest reads.
        case none
        /// Into the pipe, for the consumer.
        case pipe(ChunkPipe, startConsumer: Ingestor?)
        /// Read here and now: the whole of a small body.
        case inline(Ingestor)
        /// A chunk after a body read whole: more than its `Content-Length`.
        case pastTheEnd
        /// A body read whole that grew past its limit.
        case tooLong(Int)
    }

    func receive(chunk: UnsafeRawBufferPointer) throws {
        let route = state.withLock { s -> Route in
            let first = s.bytes == 0
            s.bytes += chunk.count
            if s.body != nil, let limit = bodyLimit {
                guard s.body!.count + chunk.count <= limit else { return .tooLong(limit) }
                s.body!.append(contentsOf: chunk)
                return .none
            }
            guard let pipe = s.pipe, let ingestor = s.ingestor else {
                if s.errorBody.count < Self.maxErrorBody {
                    s.errorBody.append(contentsOf: chunk.prefix(Self.maxErrorBody - s.errorBody.count))
                }
                return .none
            }
            if s.readInline { return .pastTheEnd }
            if s.reading { return .pipe(pipe, startConsumer: nil) }
            s.reading = true
            if first, chunk.count == s.smallBody, !s.cancelled {
                s.readInline = true
                return .inline(ingestor)
            }
            return .pipe(pipe, startConsumer: ingestor)
        }
        switch route {
        case .none:
            break
        case .pipe(let pipe, let starting):
            if let starting { startConsumer(starting, pipe) }
            try pipe.push(chunk) { HTTPError(.cancelled, "the request was cancelled") }
        case .inline(let ingestor):
            var failure: (any Error)?
            do { try ingestor.feed(chunk) } catch { failure = error }
            if failure == nil, state.withLock({ $0.cancelled }) {
                ingestor.cancel()
                failure = HTTPError(.cancelled, "the request was cancelled")
            }
            consumerFinished(failure)
            if let failure { throw failure }
        case .pastTheEnd:
            let error = HTTPError(.transport, "the body is longer than its Content-Length")
            consumerFinished(error)
            throw error
        case .tooLong(let limit):
            throw HTTPError(.decoding, "the body is longer than the \(limit) bytes the request reads")
        }
        progress(chunk.count)
    }

    /// The consumer: feeds the chunks to the ingestor in arrival order until the pipe is closed
    /// and empty, or stopped.
    private func consume(_ ingestor: Ingestor, _ pipe: ChunkPipe) {
        var failure: (any Error)?
        while let chunk = pipe.pop() {
            do {
                try chunk.withUnsafeBytes { try ingestor.feed($0) }
            } catch {
                failure = error
                pipe.fail(error)
                break
            }
        }
        if failure == nil && pipe.isStopped {
            ingestor.cancel()
            failure = HTTPError(.cancelled, "the request was cancelled")
        }
        consumerFinished(failure)
    }

    /// The body has been read (or its reading failed): wakes ``bodyIngested()``. The first
    /// failure stays.
    private func consumerFinished(_ failure: (any Error)?) {
        let (waiter, outcome) = state.withLock { s -> (CheckedContinuation<Void, any Error>?, (any Error)?) in
            s.consumerDone = true
            s.consumerFailure = s.consumerFailure ?? failure
            defer { s.waiter = nil }
            return (s.waiter, s.consumerFailure)
        }
        if let waiter { resume(waiter, outcome) }
    }

    /// Waits until the ingest has read every chunk of a body the transport has finished.
    /// - Throws: the ingest's error (nothing is applied), or ``HTTPError`` `cancelled`.
    func bodyIngested() async throws {
        let body = state.withLock { s -> (pipe: ChunkPipe, ingestor: Ingestor, consumer: Bool)? in
            guard let pipe = s.pipe, let ingestor = s.ingestor else { return nil }
            defer { s.reading = true }
            return (pipe, ingestor, !s.reading)
        }
        guard let body else { return }
        body.pipe.close()
        // A small body that never came whole (or never came): the consumer reads what there is.
        if body.consumer { startConsumer(body.ingestor, body.pipe) }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let done = state.withLock { s -> (any Error)?? in
                if s.consumerDone { return .some(s.consumerFailure) }
                s.waiter = continuation
                return nil
            }
            if let done { resume(continuation, done) }
        }
    }

    private func resume(_ continuation: CheckedContinuation<Void, any Error>, _ failure: (any Error)?) {
        if let failure { continuation.resume(throwing: failure) } else { continuation.resume() }
    }

    /// Drops the ingest: nothing of it is ever applied.
    func cancel() {
        state.withLock { s -> ChunkPipe? in
            s.cancelled = true
            return s.pipe
        }?.cancel()
    }
}

/// Carries a value the compiler cannot prove sendable to the one thread that uses it next.
struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
