import AsyncHTTPClient
import Dispatch
import FlatlandHTTP
import Foundation
import NIOCore
import NIOHTTP1

/// The transport over AsyncHTTPClient (SwiftNIO): FlatlandHTTP's ``FlatlandHTTP/HTTPTransport``
/// for Linux servers and tools, where `URLSession` runs over libcurl.
///
/// ```swift
/// let session = Session(
///     user: "ada", environment: environment, registry: registry,
///     configuration: .init(makeTransport: { AsyncHTTPClientTransport() }))
/// ```
///
/// **Streaming and back-pressure.** The response body is consumed as AsyncHTTPClient's async
/// sequence, one chunk at a time: the next chunk is asked for only once the receiver has taken
/// the last one, so while a receiver falls behind, AsyncHTTPClient stops reading the socket and
/// TCP slows the sender. The body is never collected whole. The receiver is called on a
/// dispatch queue of the request's own, never on an event loop or the cooperative thread pool,
/// because it may wait (``FlatlandHTTP/HTTPResponseReceiver/receive(chunk:)``).
///
/// **Cancellation.** Cancelling the task that awaits ``send(_:to:)`` cancels the request: the
/// connection is closed and `send` throws ``FlatlandHTTP/HTTPError`` `cancelled`.
///
/// **Timeouts and deadlines.** ``Configuration/connectTimeout`` bounds connecting; the request's
/// own ``FlatlandHTTP/HTTPRequest/timeout`` bounds the wait between two bytes of the response
/// (or for its head); ``Configuration/requestTimeout``, if set, bounds the whole exchange. Each
/// ends the request with ``FlatlandHTTP/HTTPError`` `transport` naming which one ran out.
///
/// **Writes.** The body of a request is sent from memory with its length known, so every
/// attempt, a re-sent write after a lost answer included, carries the whole body.
///
/// **The client.** The transport either owns an `HTTPClient` (``init(configuration:)``), which
/// ``shutdown()`` shuts down, or uses one the app passes in (``init(client:configuration:)``),
/// which the app keeps and shuts down itself; a shared client shares its connection pool
/// between sessions.
public final class AsyncHTTPClientTransport: HTTPTransport, @unchecked Sendable {
    /// How a transport connects and how long it waits.
    public struct Configuration: Sendable {
        /// The longest wait to open a connection. Default 10 seconds.
        public var connectTimeout: Duration
        /// The longest whole exchange, from sending the request to the last byte of the
        /// response, or nil (the default) for none: a long download that keeps making progress
        /// runs as long as it needs, and the request's read timeout still ends one that stalls.
        public var requestTimeout: Duration?

        /// A configuration; every argument has a default.
        public init(connectTimeout: Duration = .seconds(10), requestTimeout: Duration? = nil) {
            self.connectTimeout = connectTimeout
            self.requestTimeout = requestTimeout
        }
    }

    /// The client requests go through.
    public let client: HTTPClient
    /// The transport's configuration.
    public let configuration: Configuration
    private let ownsClient: Bool
    private let state = LockedState()

    /// A transport with an `HTTPClient` of its own, on the process's shared event loop group;
    /// ``shutdown()`` (or the transport's release) shuts it down.
    public init(configuration: Configuration = Configuration()) {
        // Redirects are the app's business (a filter sees every response); bodies arrive as sent.
        // The read timeout is the request's own (``HTTPRequest/timeout``), kept by the transport.
        let clientConfiguration = HTTPClient.Configuration(
            redirectConfiguration: .disallow, timeout: .init(connect: Self.timeAmount(configuration.connectTimeout)),
            decompression: .disabled, tracing: .init())
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: clientConfiguration)
        self.configuration = configuration
        ownsClient = true
    }

    /// A transport over `client`, which the app owns: ``shutdown()`` cancels this transport's
    /// requests and leaves the client running; the app shuts it down when it no longer needs it.
    /// The client's own configuration (its timeouts, redirects, TLS, proxy) applies; the
    /// transport adds the request's read timeout and ``Configuration/requestTimeout``.
    public init(client: HTTPClient, configuration: Configuration = Configuration()) {
        self.client = client
        self.configuration = configuration
        ownsClient = false
    }

    deinit {
        if ownsClient && state.markClientShutDown() {
            // HTTPClient must be shut down before its release; this never blocks.
            client.shutdown { _ in }
        }
    }

    /// Cancels every request in flight; later sends fail with ``FlatlandHTTP/HTTPError``
    /// `sessionEnded`. A client the transport owns is shut down (without blocking); one passed
    /// in is left to its owner.
    public func shutdown() {
        let inFlight = state.shutDown()
        for task in inFlight { task.cancel() }
        if ownsClient && state.markClientShutDown() { client.shutdown { _ in } }
    }

    public func send(_ request: HTTPRequest, to receiver: any HTTPResponseReceiver) async throws
        -> FlatlandHTTP.HTTPResponseHead
    {
        if Task.isCancelled { throw HTTPError(.cancelled, "the request was cancelled") }
        let clientRequest = try Self.clientRequest(request)
        let exchange = Exchange(receiver: receiver)
        // The request runs in a task of its own so that a timeout can cancel it and say why.
        let work = Task { try await run(clientRequest, request: request, exchange: exchange) }
        guard state.register(exchange.id, work) else {
            work.cancel()
            throw HTTPError(.sessionEnded, "the transport was shut down")
        }
        defer { state.unregister(exchange.id) }
        let watchdog = Task {
            await Self.watch(exchange, readTimeout: request.timeout, requestTimeout: configuration.requestTimeout) {
                work.cancel()
            }
        }
        defer { watchdog.cancel() }
        return try await withTaskCancellationHandler {
            do {
                return try await work.value
            } catch {
                throw Self.httpError(error, exchange: exchange, shutDown: state.isShutDown)
            }
        } onCancel: {
            exchange.cancelledByCaller()
            work.cancel()
        }
    }

    /// Sends the request, and hands the head and every chunk to the receiver in order.
    private func run(_ clientRequest: HTTPClientRequest, request: HTTPRequest, exchange: Exchange) async throws
        -> FlatlandHTTP.HTTPResponseHead
    {
        // The deadline of the whole exchange is the transport's; AsyncHTTPClient needs one.
        let deadline: NIODeadline =
            configuration.requestTimeout.map { .now() + Self.timeAmount($0) } ?? .distantFuture
        let response = try await client.execute(clientRequest, deadline: deadline)
        exchange.progressed()
        var headers = FlatlandHTTP.HTTPHeaders()
        for field in response.headers { headers.add(field.name, field.value) }
        let head = FlatlandHTTP.HTTPResponseHead(status: Int(response.status.code), headers: headers)
        exchange.head = head
        try await exchange.deliver { try $0.receive(head: head) }
        for try await buffer in response.body {
            exchange.progressed()
            guard buffer.readableBytes > 0 else { continue }
            try await exchange.deliver { receiver in
                try buffer.withUnsafeReadableBytes { try receiver.receive(chunk: $0) }
            }
        }
        return head
    }

    /// Ends the exchange when no byte has arrived for `readTimeout` seconds, or when the whole
    /// exchange has taken `requestTimeout`.
    private static func watch(
        _ exchange: Exchange, readTimeout: TimeInterval, requestTimeout: Duration?, cancel: @Sendable () -> Void
    ) async {
        let read = Duration.milliseconds(Int64((max(0, readTimeout) * 1000).rounded(.up)))
        let start = ContinuousClock.now
        while !Task.isCancelled {
            let now = ContinuousClock.now
            // A receiver that is busy with a chunk is no silence of the server's.
            let readDue = exchange.isDelivering ? now + read : exchange.lastProgress + read
            var due = readDue
            if let requestTimeout { due = min(due, start + requestTimeout) }
            if now >= due {
                if let requestTimeout, now >= start + requestTimeout {
                    exchange.timedOut(.request(requestTimeout))
                } else {
                    exchange.timedOut(.read(readTimeout))
                }
                cancel()
                return
            }
            do { try await Task.sleep(until: due, clock: .continuous) } catch { return }
        }
    }

    /// AsyncHTTPClient's request for `request`: the body from memory, with its length.
    static func clientRequest(_ request: HTTPRequest) throws -> HTTPClientRequest {
        guard let scheme = request.url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw HTTPError(.invalidRequest, "the URL \(request.url.absoluteString) is not http or https")
        }
        var clientRequest = HTTPClientRequest(url: request.url.absoluteString)
        clientRequest.method = NIOHTTP1.HTTPMethod(rawValue: request.method.rawValue)
        for field in request.headers { clientRequest.headers.add(name: field.name, value: field.value) }
        if let body = request.body {
            // Bytes in memory, not a stream: AsyncHTTPClient can send them again whole.
            clientRequest.body = .bytes(ByteBuffer(bytes: body))
        }
        return clientRequest
    }

    /// The ``FlatlandHTTP/HTTPError`` for what ended an exchange.
    static func httpError(_ error: any Error, exchange: Exchange, shutDown: Bool) -> any Error {
        if let timeout = exchange.timeout {
            return HTTPError(
                .transport, "the request timed out: \(timeout)", status: exchange.head?.status,
                underlying: "\(error)")
        }
        if exchange.receiverFailure { return error }
        if error is HTTPError { return error }
        if exchange.isCancelledByCaller {
            return HTTPError(.cancelled, "the request was cancelled")
        }
        if shutDown { return HTTPError(.sessionEnded, "the transport was shut down") }
        if let clientError = error as? HTTPClientError {
            switch clientError {
            case .cancelled:
                return HTTPError(.cancelled, "the request was cancelled")
            case .connectTimeout:
                return HTTPError(.transport, "the request timed out: connecting", underlying: "\(clientError)")
            case .deadlineExceeded, .readTimeout:
                return HTTPError(
                    .transport, "the request timed out", status: exchange.head?.status, underlying: "\(clientError)")
            default: break
            }
        }
        if error is CancellationError { return HTTPError(.cancelled, "the request was cancelled") }
        return HTTPError(
            .transport, "the request failed: \(error)", status: exchange.head?.status, underlying: "\(error)")
    }

    static func timeAmount(_ duration: Duration) -> TimeAmount {
        let (seconds, attoseconds) = duration.components
        return .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}

extension AsyncHTTPClientTransport {
    /// Which limit ended an exchange.
    enum Timeout: CustomStringConvertible {
        case read(TimeInterval)
        case request(Duration)

        var description: String {
            switch self {
            case .read(let seconds): "no byte for \(seconds) s"
            case .request(let duration): "the whole request took more than \(duration)"
            }
        }
    }

    /// One request's state, shared by the task that runs it, its watchdog and its caller.
    final class Exchange: @unchecked Sendable {
        let id = UUID()
        let receiver: any HTTPResponseReceiver
        /// The receiver runs here: it may block, which neither an event loop nor the
        /// cooperative pool may.
        private let queue = DispatchQueue(label: "FlatlandAsyncHTTPClient.receiver")
        private let lock = NSLock()
        private var _head: FlatlandHTTP.HTTPResponseHead?
        private var _lastProgress = ContinuousClock.now
        private var _delivering = false
        private var _timeout: Timeout?
        private var _cancelledByCaller = false
        private var _receiverFailure = false

        init(receiver: any HTTPResponseReceiver) { self.receiver = receiver }

        var head: FlatlandHTTP.HTTPResponseHead? {
            get { lock.withLock { _head } }
            set { lock.withLock { _head = newValue } }
        }
        var lastProgress: ContinuousClock.Instant { lock.withLock { _lastProgress } }
        var isDelivering: Bool { lock.withLock { _delivering } }
        var timeout: Timeout? { lock.withLock { _timeout } }
        var isCancelledByCaller: Bool { lock.withLock { _cancelledByCaller } }
        var receiverFailure: Bool { lock.withLock { _receiverFailure } }

        func progressed() { lock.withLock { _lastProgress = .now } }
        func timedOut(_ timeout: Timeout) { lock.withLock { if _timeout == nil { _timeout = timeout } } }
        func cancelledByCaller() { lock.withLock { _cancelledByCaller = true } }

        /// Runs `body` with the receiver on the exchange's queue and waits for it; the next
        /// chunk is not asked for before it returns (back-pressure).
        func deliver(_ body: @escaping @Sendable (any HTTPResponseReceiver) throws -> Void) async throws {
            lock.withLock { _delivering = true }
            defer {
                lock.withLock {
                    _delivering = false
                    _lastProgress = .now
                }
            }
            let receiver = self.receiver
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                queue.async { [self] in
                    do {
                        try body(receiver)
                        continuation.resume()
                    } catch {
                        lock.withLock { _receiverFailure = true }
                        continuation.resume(throwing: error)
                    }
                }
            }
        }
    }

    /// The requests in flight, and whether the transport was shut down.
    final class LockedState: @unchecked Sendable {
        private let lock = NSLock()
        private var tasks: [UUID: Task<FlatlandHTTP.HTTPResponseHead, any Error>] = [:]
        private var shut = false
        private var clientShut = false

        var isShutDown: Bool { lock.withLock { shut } }

        func register(_ id: UUID, _ task: Task<FlatlandHTTP.HTTPResponseHead, any Error>) -> Bool {
            lock.withLock {
                guard !shut else { return false }
                tasks[id] = task
                return true
            }
        }

        func unregister(_ id: UUID) { lock.withLock { _ = tasks.removeValue(forKey: id) } }

        /// Marks the transport shut down; returns what was in flight.
        func shutDown() -> [Task<FlatlandHTTP.HTTPResponseHead, any Error>] {
            lock.withLock {
                shut = true
                defer { tasks = [:] }
                return Array(tasks.values)
            }
        }

        /// Whether this call is the one that shuts the client down.
        func markClientShutDown() -> Bool {
            lock.withLock {
                defer { clientShut = true }
                return !clientShut
            }
        }
    }
}
