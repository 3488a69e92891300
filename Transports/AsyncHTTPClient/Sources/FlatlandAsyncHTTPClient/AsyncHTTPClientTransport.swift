import AsyncHTTPClient
import Dispatch
import FlatlandHTTP
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// FlatlandHTTP's `HTTPTransport` over AsyncHTTPClient (SwiftNIO), for Linux
/// servers and tools, where `URLSession` runs over libcurl.
///
/// ```swift
/// let session = Session(
///     user: "ada", environment: environment,
///     configuration: Backend.Configuration(makeTransport: { AsyncHTTPClientTransport() }))
/// ```
///
/// **Streaming and back-pressure.** The body reaches the receiver chunk by chunk as it arrives,
/// and is never collected whole. The receiver runs on a dispatch queue of the request's own,
/// never on an event loop or on Swift's cooperative thread pool, because it may wait
/// (`HTTPResponseReceiver/receive(chunk:)`). AsyncHTTPClient hands over the next
/// chunk only once the receiver has returned from the last one: while a receiver falls behind,
/// the connection stops reading its socket and TCP slows the sender.
///
/// **Cancellation.** Cancelling the task that awaits ``send(_:to:)`` cancels the request (its
/// connection is closed) and `send` throws `HTTPError` `cancelled`. A receiver
/// that throws stops the request the same way, and `send` throws the receiver's error.
///
/// **Timeouts and deadlines.** The request's own `HTTPRequest/timeout` bounds
/// the wait for the response's head (from the end of the request's body) and every silence of
/// the server after it: a body that stops for longer is cut. Time the receiver spends on a chunk
/// does not count. As with `URLSessionTransport`, a timeout is an `HTTPError` `transport` (its
/// message says which limit ran out). ``Configuration/connectTimeout`` bounds connecting, and
/// ``Configuration/requestTimeout``, if set, is a deadline for the whole exchange. The timers
/// run on the connection's event loop, so a busy cooperative pool never fires them early. A
/// connection that cannot be opened (a server that is down) fails the request at once, a
/// `transport` error, unless ``Configuration/retriesConnecting`` is set.
///
/// **Writes.** A request's body is sent from memory with its length, so every attempt, a write
/// sent again after a lost answer included, carries the whole body. A connection that closes
/// without an answer fails the request at once, as a `transport` error: whether to send a
/// write again is its caller's decision (a session's `RetryPolicy`).
///
/// **The client.** The transport either owns an `HTTPClient` (``init(configuration:)``), shut
/// down by ``shutdown()``, or uses one the app passes in (``init(client:configuration:)``),
/// which the app keeps and shuts down itself; a shared client shares its connection pool
/// between sessions. Either way the client runs on SwiftNIO's process-wide event loop group
/// unless the app's client says otherwise: a transport starts no threads of its own.
public final class AsyncHTTPClientTransport: HTTPTransport, Sendable {
    /// How a transport connects and how long it waits.
    public struct Configuration: Sendable {
        /// The longest wait to open a connection. Default 10 seconds.
        public var connectTimeout: Duration
        /// The longest whole exchange, from sending the request to the last byte of the
        /// response, or nil (the default) for none: a long download that keeps making progress
        /// runs as long as it needs, and the request's own timeout still cuts one that stalls.
        public var requestTimeout: Duration?
        /// Whether a connection that cannot be opened (refused, unreachable) is tried again, after
        /// growing pauses, until ``connectTimeout`` runs out: AsyncHTTPClient's
        /// `retryConnectionEstablishment`. Default false: the request fails as soon as its
        /// connection does, as with `URLSessionTransport`, and whether to try again is the
        /// session's `RetryPolicy`'s decision. With true, a server that is down costs every
        /// request the whole ``connectTimeout`` before it fails.
        public var retriesConnecting: Bool

        /// A configuration; every argument has a default.
        public init(
            connectTimeout: Duration = .seconds(10), requestTimeout: Duration? = nil, retriesConnecting: Bool = false
        ) {
            self.connectTimeout = connectTimeout
            self.requestTimeout = requestTimeout
            self.retriesConnecting = retriesConnecting
        }
    }

    /// The client requests go through.
    public let client: HTTPClient
    /// The transport's configuration.
    public let configuration: Configuration
    private let ownsClient: Bool
    private let state = NIOLockedValueBox(State())

    private struct State {
        var inFlight: [ObjectIdentifier: Exchange] = [:]
        var isShutDown = false
        var clientShutDown = false
    }

    /// A transport with an `HTTPClient` of its own, on SwiftNIO's process-wide event loop
    /// group; ``shutdown()`` (or the transport's release) shuts the client down.
    public init(configuration: Configuration = Configuration()) {
        // Redirects are the app's business (its filters see every response), and bodies
        // arrive as the server sent them. The read timeout is the request's own, kept here.
        var clientConfiguration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: Self.timeAmount(configuration.connectTimeout)),
            decompression: .disabled)
        clientConfiguration.connectionPool.retryConnectionEstablishment = configuration.retriesConnecting
        client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: clientConfiguration)
        self.configuration = configuration
        ownsClient = true
    }

    /// A transport over `client`, which the app owns: ``shutdown()`` cancels this transport's
    /// requests and leaves the client running. The client's own configuration (redirects, TLS,
    /// proxy, its connect timeout, whether it retries connecting) applies; the transport adds the
    /// request's timeout and ``Configuration/requestTimeout`` (``Configuration/connectTimeout``
    /// and ``Configuration/retriesConnecting`` are the client's).
    public init(client: HTTPClient, configuration: Configuration = Configuration()) {
        self.client = client
        self.configuration = configuration
        ownsClient = false
    }

    deinit {
        if ownsClient && markClientShutDown() {
            // An HTTPClient must be shut down before its release; this never blocks.
            client.shutdown { _ in }
        }
    }

    /// Cancels every request in flight (each fails with `HTTPError`
    /// `cancelled`); later sends fail with `sessionEnded`. A client the transport owns is shut
    /// down, without blocking; one passed in is left to its owner.
    public func shutdown() {
        let inFlight = state.withLockedValue { state in
            state.isShutDown = true
            defer { state.inFlight = [:] }
            return Array(state.inFlight.values)
        }
        for exchange in inFlight { exchange.cancel(byCaller: false) }
        if ownsClient && markClientShutDown() { client.shutdown { _ in } }
    }

    public func send(_ request: HTTPRequest, to receiver: any HTTPResponseReceiver) async throws
        -> FlatlandHTTP.HTTPResponseHead
    {
        if Task.isCancelled { throw HTTPError(.cancelled, "the request was cancelled") }
        let clientRequest = try Self.clientRequest(request)
        let exchange = Exchange(receiver: receiver, timeout: request.timeout)
        let registered = state.withLockedValue { state in
            guard !state.isShutDown else { return false }
            state.inFlight[ObjectIdentifier(exchange)] = exchange
            return true
        }
        guard registered else { throw HTTPError(.sessionEnded, "the transport was shut down") }
        defer { _ = state.withLockedValue { $0.inFlight.removeValue(forKey: ObjectIdentifier(exchange)) } }
        let deadline = configuration.requestTimeout.map { NIODeadline.now() + Self.timeAmount($0) }
        let task = client.execute(request: clientRequest, delegate: exchange, deadline: deadline)
        exchange.start(task)
        return try await withTaskCancellationHandler {
            do {
                return try await task.futureResult.get()
            } catch {
                throw exchange.httpError(for: error, requestTimeout: configuration.requestTimeout)
            }
        } onCancel: {
            exchange.cancel(byCaller: true)
        }
    }

    private func markClientShutDown() -> Bool {
        state.withLockedValue { state in
            defer { state.clientShutDown = true }
            return !state.clientShutDown
        }
    }

    /// AsyncHTTPClient's request for `request`: its body from memory, with its length.
    static func clientRequest(_ request: HTTPRequest) throws -> HTTPClient.Request {
        guard let scheme = request.url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw HTTPError(.invalidRequest, "the URL \(request.url.absoluteString) is not http or https")
        }
        var headers = NIOHTTP1.HTTPHeaders()
        for field in request.headers { headers.add(name: field.name, value: field.value) }
        do {
            return try HTTPClient.Request(
                url: request.url, method: NIOHTTP1.HTTPMethod(rawValue: request.method.rawValue), headers: headers,
                body: request.body.map { .bytes($0) })
        } catch {
            throw HTTPError(
                .invalidRequest, "the URL \(request.url.absoluteString) cannot be requested", underlying: "\(error)")
        }
    }

    static func timeAmount(_ duration: Duration) -> TimeAmount {
        let (seconds, attoseconds) = duration.components
        return .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}

extension AsyncHTTPClientTransport {
    /// One request: AsyncHTTPClient's delegate for it, the receiver's queue and its read timer.
    ///
    /// AsyncHTTPClient calls the delegate on the connection's event loop; each call hands its
    /// part to the receiver on ``queue`` and returns a future that completes when the receiver
    /// has taken it, which is what holds back the next chunk.
    final class Exchange: HTTPClientResponseDelegate, Sendable {
        typealias Response = FlatlandHTTP.HTTPResponseHead

        let receiver: any HTTPResponseReceiver
        /// The longest silence of the server, or nil for no limit.
        let readTimeout: TimeAmount?
        let timeoutSeconds: TimeInterval
        /// Where the receiver runs: it may block, which neither an event loop nor the
        /// cooperative pool may.
        private let queue = DispatchQueue(label: "FlatlandAsyncHTTPClient.receiver")
        private let state = NIOLockedValueBox(State())

        struct State {
            var task: HTTPClient.Task<FlatlandHTTP.HTTPResponseHead>?
            var head: FlatlandHTTP.HTTPResponseHead?
            /// When the server last sent something, or the receiver last returned.
            var lastProgress = NIODeadline.now()
            var delivering = false
            var finished = false
            var timer: Scheduled<Void>?
            var timedOut = false
            var cancelled: Bool?  // true: by the caller, false: by shutdown
            var receiverFailed = false
        }

        init(receiver: any HTTPResponseReceiver, timeout: TimeInterval) {
            self.receiver = receiver
            timeoutSeconds = timeout
            readTimeout = timeout > 0 ? .nanoseconds(Int64((timeout * 1e9).rounded(.up))) : nil
        }

        /// Keeps the task, and starts the read timer on its event loop.
        func start(_ task: HTTPClient.Task<FlatlandHTTP.HTTPResponseHead>) {
            let cancelledEarly = state.withLockedValue { state in
                state.task = task
                state.lastProgress = .now()
                return state.cancelled != nil
            }
            if cancelledEarly { task.cancel() }
            if let readTimeout { arm(task.eventLoop, at: .now() + readTimeout) }
        }

        private func arm(_ eventLoop: any EventLoop, at deadline: NIODeadline) {
            let scheduled = eventLoop.scheduleTask(deadline: deadline) { [self] in check(eventLoop) }
            let keep = state.withLockedValue { state in
                guard !state.finished else { return false }
                state.timer = scheduled
                return true
            }
            if !keep { scheduled.cancel() }
        }

        /// The read timer: cuts the request once the server has been silent for the timeout,
        /// not counting the time the receiver spends on a part.
        private func check(_ eventLoop: any EventLoop) {
            guard let readTimeout else { return }
            enum Next {
                case stop
                case again(NIODeadline)
                case cut(HTTPClient.Task<FlatlandHTTP.HTTPResponseHead>?)
            }
            let now = NIODeadline.now()
            let next: Next = state.withLockedValue { state in
                if state.finished { return .stop }
                if state.delivering { return .again(now + readTimeout) }
                let due = state.lastProgress + readTimeout
                if now < due { return .again(due) }
                state.timedOut = true
                return .cut(state.task)
            }
            switch next {
            case .stop: break
            case .again(let deadline): arm(eventLoop, at: deadline)
            case .cut(let task): task?.cancel()
            }
        }

        /// Cancels the request: by the awaiting task (`byCaller`) or by the transport's shutdown.
        func cancel(byCaller: Bool) {
            let task = state.withLockedValue { state in
                if state.cancelled == nil { state.cancelled = byCaller }
                return state.task
            }
            task?.cancel()
        }

        /// The error `send` throws for `error`, which ended the request.
        func httpError(for error: any Error, requestTimeout: Duration?) -> any Error {
            let state = state.withLockedValue { $0 }
            let status = state.head?.status
            if state.timedOut {
                return HTTPError(
                    .transport, "the request timed out: no byte from the server for \(timeoutSeconds) s",
                    status: status, underlying: "\(error)")
            }
            if state.receiverFailed { return error }
            if error is HTTPError { return error }
            if state.cancelled != nil { return HTTPError(.cancelled, "the request was cancelled") }
            if let clientError = error as? HTTPClientError {
                switch clientError {
                case .cancelled:
                    return HTTPError(.cancelled, "the request was cancelled")
                case .connectTimeout:
                    return HTTPError(.transport, "the request timed out: connecting", underlying: "\(clientError)")
                case .deadlineExceeded:
                    let limit = requestTimeout.map { " (\($0))" } ?? ""
                    return HTTPError(
                        .transport, "the request timed out: the whole exchange took longer than allowed\(limit)",
                        status: status, underlying: "\(clientError)")
                case .readTimeout:
                    return HTTPError(
                        .transport, "the request timed out", status: status, underlying: "\(clientError)")
                case .remoteConnectionClosed:
                    return HTTPError(
                        .transport,
                        state.head == nil
                            ? "the connection closed with no answer after the request was sent (the server may have applied it)"
                            : "the connection closed before the body was complete",
                        status: status, underlying: "\(clientError)")
                default: break
                }
            }
            if error is CancellationError { return HTTPError(.cancelled, "the request was cancelled") }
            return HTTPError(.transport, "the request failed: \(error)", status: status, underlying: "\(error)")
        }

        /// Runs `body` with the receiver on ``queue``; the future completes when it returns.
        private func deliver(
            on eventLoop: any EventLoop, _ body: @escaping @Sendable (any HTTPResponseReceiver) throws -> Void
        ) -> EventLoopFuture<Void> {
            let promise = eventLoop.makePromise(of: Void.self)
            state.withLockedValue { state in
                state.delivering = true
                state.lastProgress = .now()
            }
            let receiver = self.receiver
            queue.async { [self] in
                do {
                    try body(receiver)
                    state.withLockedValue { state in
                        state.delivering = false
                        state.lastProgress = .now()
                    }
                    promise.succeed(())
                } catch {
                    state.withLockedValue { state in
                        state.delivering = false
                        state.receiverFailed = true
                    }
                    promise.fail(error)
                }
            }
            return promise.futureResult
        }

        /// A body that is still being sent is no silence of the server's.
        func didSendRequestPart(task: HTTPClient.Task<Response>, _ part: IOData) {
            state.withLockedValue { $0.lastProgress = .now() }
        }

        func didSendRequest(task: HTTPClient.Task<Response>) {
            state.withLockedValue { $0.lastProgress = .now() }
        }

        func didReceiveHead(task: HTTPClient.Task<Response>, _ head: NIOHTTP1.HTTPResponseHead) -> EventLoopFuture<Void>
        {
            var headers = FlatlandHTTP.HTTPHeaders()
            for field in head.headers { headers.add(field.name, field.value) }
            let received = FlatlandHTTP.HTTPResponseHead(status: Int(head.status.code), headers: headers)
            state.withLockedValue { $0.head = received }
            return deliver(on: task.eventLoop) { try $0.receive(head: received) }
        }

        func didReceiveBodyPart(task: HTTPClient.Task<Response>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
            guard buffer.readableBytes > 0 else { return task.eventLoop.makeSucceededVoidFuture() }
            return deliver(on: task.eventLoop) { receiver in
                try buffer.withUnsafeReadableBytes { try receiver.receive(chunk: $0) }
            }
        }

        func didReceiveError(task: HTTPClient.Task<Response>, _ error: any Error) { finish() }

        func didFinishRequest(task: HTTPClient.Task<Response>) throws -> Response {
            finish()
            guard let head = state.withLockedValue({ $0.head }) else {
                throw HTTPError(.transport, "the response had no status line")
            }
            return head
        }

        private func finish() {
            let timer = state.withLockedValue { state in
                state.finished = true
                defer { state.timer = nil }
                return state.timer
            }
            timer?.cancel()
        }
    }
}
