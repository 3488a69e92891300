import Flatland
import FlatlandJSON
import Foundation

/// What a successful task gives: the status, the headers and what the ingest did.
public struct HTTPResult: Sendable {
    /// The task's uuid.
    public let taskID: String
    /// The status code (2xx).
    public let status: Int
    /// The response's header fields.
    public let headers: HTTPHeaders
    /// What ingesting the body did; nil for a response without a body (204, HEAD), and for
    /// one whose commit plan handed the batch back.
    public let ingest: IngestResult?
    /// The body read to its end and not written, when the request's commit plan said so
    /// (``ResponseCommit/handsBack``): the caller commits it or drops it.
    public internal(set) var uncommitted: IngestBatch? = nil
    /// The body, read whole, for a request that asked for it as bytes or JSON
    /// (``HTTPRequest/consumption``); nil for one streamed into the store.
    public internal(set) var body: [UInt8]? = nil
    /// The body parsed, for a request that asked for it as JSON; nil otherwise, and for an
    /// empty body (a 204).
    public internal(set) var json: JSONValue? = nil

    /// The task's collection (display identifier: the task's uuid): the top-level entities of
    /// the response, in order.
    public var taskCollection: EntityCollection? { ingest?.taskCollection }
    /// The non-fielded endpoint's collection, after this response.
    public var endpointCollection: EntityCollection? { ingest?.endpointCollection }
    /// The ids of the response's top-level entities, in order.
    public var items: [String] { ingest?.taskCollection.knownItems ?? [] }
    /// The changes applied to the store.
    public var changes: ChangeSet { ingest?.changes ?? ChangeSet() }
    /// The next page's link: the body's (an envelope's `nextLink`) or else the `Link` header's
    /// `rel="next"` target, as sent (relative or absolute); nil when neither names one.
    public var nextLink: String? {
        (ingest?.page ?? uncommitted?.page)?.nextLink ?? PageHeaders.context(headers).nextLink
    }
}

/// One request, tracked: its own uuid, the request, a state, the status code, start and end
/// times, and ``cancel()``.
///
/// ```swift
/// let task = session.launch(.get, "/devices?offset=0&count=20")
/// let result = try await task.value          // or task.whenDone { result in … }
/// print(task.id, task.statusCode!, task.duration!)
/// ```
public final class HTTPTask: Sendable, Identifiable, CustomStringConvertible {
    /// Where a task is in its life.
    public enum State: String, Sendable {
        /// Launched, not yet sent.
        case pending
        /// Sent; the response is arriving (or a retry is waiting).
        case running
        /// Done, and its response applied to the store.
        case succeeded
        /// Done with an error; the store is as it was.
        case failed
        /// Cancelled; the store is as it was.
        case cancelled
    }

    /// The task's uuid: the display identifier of its collection.
    public let id: String
    /// The request as launched (before the filters).
    public let request: HTTPRequest

    struct Status {
        var state = State.pending
        var statusCode: Int?
        var startDate: Date?
        var endDate: Date?
        var started: ContinuousClock.Instant?
        var duration: Duration?
        var attempts = 0
        var bytesReceived = 0
        var chunksReceived = 0
        var largestChunk = 0
        var peakBuffered = 0
        var joined = 0
        var outcome: Result<HTTPResult, HTTPError>?
        var waiters: [CheckedContinuation<Result<HTTPResult, HTTPError>, Never>] = []
        var handlers: [@Sendable (Result<HTTPResult, HTTPError>) -> Void] = []
        var work: Task<Void, Never>?
        var cancelRequested = false
        var retryDelays: [Duration] = []
    }

    let status = Locked(Status())

    init(id: String, request: HTTPRequest) {
        self.id = id
        self.request = request
    }

    /// The state now.
    public var state: State { status.withLock { $0.state } }
    /// The status code of the last response, once one arrived.
    public var statusCode: Int? { status.withLock { $0.statusCode } }
    /// When the task was sent.
    public var startDate: Date? { status.withLock { $0.startDate } }
    /// When it ended.
    public var endDate: Date? { status.withLock { $0.endDate } }
    /// How long it took, on a monotonic clock, once it ended.
    public var duration: Duration? { status.withLock { $0.duration } }
    /// Attempts made so far (retries count).
    public var attempts: Int { status.withLock { $0.attempts } }
    /// The waits before each retry.
    public var retryDelays: [Duration] { status.withLock { $0.retryDelays } }
    /// Body bytes received so far (all attempts).
    public var bytesReceived: Int { status.withLock { $0.bytesReceived } }
    /// Body chunks received so far: the body was read as it arrived, in this many pieces.
    public var chunksReceived: Int { status.withLock { $0.chunksReceived } }
    /// The largest chunk received.
    public var largestChunk: Int { status.withLock { $0.largestChunk } }
    /// The most body bytes that waited at once for the ingest (which runs beside the download),
    /// over all attempts: never more than the backend's
    /// ``Backend/Configuration/ingestBufferCapacity`` (or one chunk, when a chunk is larger).
    public var peakBytesBuffered: Int { status.withLock { $0.peakBuffered } }
    /// How many identical launches joined this task instead of going to the network.
    public var joinCount: Int { status.withLock { $0.joined } }
    /// Whether the task has ended.
    public var isFinished: Bool { status.withLock { $0.outcome != nil } }

    /// The result, once the task ends.
    /// - Throws: ``HTTPError``; a failed or cancelled task leaves the store exactly as it was.
    public var value: HTTPResult {
        get async throws(HTTPError) {
            let outcome = await withCheckedContinuation { continuation in
                let done = status.withLock { s -> Result<HTTPResult, HTTPError>? in
                    if let outcome = s.outcome { return outcome }
                    s.waiters.append(continuation)
                    return nil
                }
                if let done { continuation.resume(returning: done) }
            }
            return try outcome.get()
        }
    }

    /// Calls `handler` once with the result (at once if the task has already ended), for SDKs
    /// that prefer completion handlers.
    public func whenDone(_ handler: @escaping @Sendable (Result<HTTPResult, HTTPError>) -> Void) {
        let done = status.withLock { s -> Result<HTTPResult, HTTPError>? in
            if let outcome = s.outcome { return outcome }
            s.handlers.append(handler)
            return nil
        }
        if let done { handler(done) }
    }

    /// Cancels the task: the request is stopped, nothing of its response is applied, and the
    /// result is ``HTTPError/Code-swift.struct/cancelled``.
    public func cancel() {
        let work = status.withLock { s -> Task<Void, Never>? in
            s.cancelRequested = true
            return s.work
        }
        work?.cancel()
    }

    public var description: String {
        let s = status.current
        var text = "\(id) \(request.method) \(request.endpoint) \(s.state)"
        if let code = s.statusCode { text += " \(code)" }
        if let duration = s.duration { text += " \(duration)" }
        return text
    }

    // MARK: Driven by the backend

    func attach(_ work: Task<Void, Never>) {
        let cancel = status.withLock { s -> Bool in
            s.work = work
            return s.cancelRequested
        }
        if cancel { work.cancel() }
    }

    func markStarted() {
        status.withLock { s in
            s.state = .running
            s.startDate = Date()
            s.started = .now
        }
    }

    func received(_ count: Int) {
        status.withLock { s in
            s.bytesReceived += count
            s.chunksReceived += 1
            s.largestChunk = max(s.largestChunk, count)
        }
    }

    func buffered(_ peak: Int) {
        status.withLock { s in s.peakBuffered = max(s.peakBuffered, peak) }
    }

    func complete(_ outcome: Result<HTTPResult, HTTPError>) {
        let (waiters, handlers) = status.withLock { s in
            s.endDate = Date()
            if let started = s.started { s.duration = .now - started }
            switch outcome {
            case .success(let result):
                s.state = .succeeded
                s.statusCode = result.status
            case .failure(let error):
                s.state = error.code == .cancelled ? .cancelled : .failed
                if let code = error.status { s.statusCode = code }
            }
            s.outcome = outcome
            defer {
                s.waiters = []
                s.handlers = []
                s.work = nil
            }
            return (s.waiters, s.handlers)
        }
        for waiter in waiters { waiter.resume(returning: outcome) }
        for handler in handlers { handler(outcome) }
    }
}
