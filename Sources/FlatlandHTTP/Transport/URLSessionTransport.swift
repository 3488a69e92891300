import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The transport over `URLSession`, on Linux (FoundationNetworking) and Apple platforms.
///
/// It uses a data task with a delegate, so the body reaches the receiver chunk by chunk as it
/// arrives and is never held whole. Each transport owns its own `URLSession` (an ephemeral
/// configuration by default) with no cookie, credential or URL cache storage: two sessions of
/// the app never share cookies, caches or connections (tokens travel in filters instead).
///
/// Back-pressure: a receiver may block in ``HTTPResponseReceiver/receive(chunk:)`` while it
/// falls behind. The transport's delegate queue then lets only a few chunks wait behind it; when
/// more arrive, URLSession's own thread waits too and stops reading the socket, so TCP slows the
/// sender. (`URLSessionTask.suspend()` is no way to do this on Linux: swift-corelibs-foundation
/// suspends by removing the transfer from libcurl, and resuming starts the request over.)
/// URLSession's thread is shared by every session of the process, so it waits only while the
/// receiver makes progress; a receiver that stops for more than a tenth of a second holds back
/// nobody, and its chunks wait in memory until it runs again.
public final class URLSessionTransport: HTTPTransport, Sendable {
    private let delegate: Delegate
    private let session: URLSession

    /// A transport with its own `URLSession`.
    public init(configuration: URLSessionConfiguration = .ephemeral) {
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        // Without these, swift-corelibs-foundation still parses every header line of every
        // response for cookies, to store them nowhere (about 2% of a pull's CPU).
        configuration.httpCookieAcceptPolicy = .never
        configuration.httpShouldSetCookies = false
        configuration.urlCredentialStorage = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        delegate = Delegate()
        let queue = BoundedOperationQueue(limit: Self.waitingChunks)
        queue.maxConcurrentOperationCount = 1
        session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: queue)
    }

    /// How many delegate calls (body chunks, mostly) may wait behind a receiver that is busy.
    static let waitingChunks = 8

    deinit { session.invalidateAndCancel() }

    public func shutdown() { session.invalidateAndCancel() }

    public func send(_ request: HTTPRequest, to receiver: any HTTPResponseReceiver) async throws -> HTTPResponseHead {
        if Task.isCancelled { throw HTTPError(.cancelled, "the request was cancelled") }
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method.rawValue
        urlRequest.timeoutInterval = request.timeout
        for field in request.headers { urlRequest.addValue(field.value, forHTTPHeaderField: field.name) }
        if let body = request.body { urlRequest.httpBody = Data(body) }
        let task = session.dataTask(with: urlRequest)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation {
                (continuation: CheckedContinuation<HTTPResponseHead, any Error>) in
                delegate.register(task, Exchange(receiver: receiver, continuation: continuation))
                // A cancel that came before the exchange was registered cancelled the task, and
                // its completion may have found nothing to resume: the exchange ends here then.
                // Whichever of the two takes the exchange resumes it, once.
                if Task.isCancelled {
                    task.cancel()
                    delegate.take(task)?.continuation.resume(
                        throwing: HTTPError(.cancelled, "the request was cancelled"))
                    return
                }
                task.resume()
            }
        } onCancel: {
            task.cancel()
        }
    }

    /// One request's state on the delegate queue.
    final class Exchange: @unchecked Sendable {
        let receiver: any HTTPResponseReceiver
        let continuation: CheckedContinuation<HTTPResponseHead, any Error>
        var head: HTTPResponseHead?
        var failure: (any Error)?

        init(receiver: any HTTPResponseReceiver, continuation: CheckedContinuation<HTTPResponseHead, any Error>) {
            self.receiver = receiver
            self.continuation = continuation
        }
    }

    final class Delegate: NSObject, URLSessionDataDelegate, Sendable {
        private let exchanges = Locked([Int: Exchange]())
        /// The tasks libcurl wanted to send again by itself: failed as lost answers.
        private let resent = Locked(Set<Int>())

        /// libcurl sends a request again by itself when the connection it reused closes without
        /// an answer (a stale connection and a lost answer look the same to it), and asks for the
        /// body anew. swift-corelibs-foundation cannot give a data body a second time: the
        /// request would go out with its `Content-Length` and no body, and wait for its timeout
        /// (60 s by default). Nor is it the transport's to send again a write the server may
        /// have applied: the request fails at once, as a lost answer (a transport error), and
        /// its caller decides (a push checks the server's row, or holds the operation).
        func urlSession(
            _ session: URLSession, task: URLSessionTask,
            needNewBodyStream completionHandler: @escaping @Sendable (InputStream?) -> Void
        ) {
            resent.withLock { _ = $0.insert(task.taskIdentifier) }
            completionHandler(nil)
            // Not here: cancel waits for the queue this runs on.
            DispatchQueue.global().async { task.cancel() }
        }

        func register(_ task: URLSessionTask, _ exchange: Exchange) {
            exchanges.withLock { $0[task.taskIdentifier] = exchange }
        }

        /// Removes the task's exchange: whoever takes it resumes its continuation.
        func take(_ task: URLSessionTask) -> Exchange? {
            exchanges.withLock { $0.removeValue(forKey: task.taskIdentifier) }
        }

        private func exchange(_ task: URLSessionTask) -> Exchange? {
            exchanges.withLock { $0[task.taskIdentifier] }
        }

        func urlSession(
            _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
            completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
        ) {
            guard let exchange = exchange(dataTask) else { return completionHandler(.cancel) }
            let http = response as? HTTPURLResponse
            var headers = HTTPHeaders()
            for (name, value) in http?.allHeaderFields ?? [:] {
                headers.add(String(describing: name), String(describing: value))
            }
            let head = HTTPResponseHead(status: http?.statusCode ?? 0, headers: headers)
            exchange.head = head
            do {
                try exchange.receiver.receive(head: head)
                completionHandler(.allow)
            } catch {
                exchange.failure = error
                completionHandler(.cancel)
            }
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            guard let exchange = exchange(dataTask), exchange.failure == nil else { return }
            do {
                try data.withUnsafeBytes { try exchange.receiver.receive(chunk: $0) }
            } catch {
                exchange.failure = error
                // Not here: cancel waits for URLSession's thread, which may be waiting for this
                // queue (see BoundedOperationQueue).
                DispatchQueue.global().async { dataTask.cancel() }
            }
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            guard let exchange = take(task) else { return }
            if resent.withLock({ $0.remove(task.taskIdentifier) }) != nil {
                exchange.continuation.resume(
                    throwing: HTTPError(
                        .transport,
                        "the connection closed with no answer after the request was sent (the server may have applied it); the transport does not send it again",
                        status: exchange.head?.status, underlying: "resend refused"))
            } else if let failure = exchange.failure {
                exchange.continuation.resume(throwing: failure)
            } else if let error {
                let nsError = error as NSError
                if nsError.domain == NSURLErrorDomain && nsError.code == NSURLErrorCancelled {
                    exchange.continuation.resume(throwing: HTTPError(.cancelled, "the request was cancelled"))
                } else {
                    exchange.continuation.resume(
                        throwing: HTTPError(
                            .transport, "the request failed: \(nsError.localizedDescription)",
                            status: exchange.head?.status, underlying: "\(nsError.domain) \(nsError.code)"))
                }
            } else if let head = exchange.head {
                exchange.continuation.resume(returning: head)
            } else {
                exchange.continuation.resume(throwing: HTTPError(.transport, "the response had no status line"))
            }
        }
    }
}

/// The transport's delegate queue: at most `limit` operations wait to run at once. URLSession
/// adds one per body chunk it reads; when `limit` wait, the thread adding the next (URLSession's
/// own, reading the socket) waits until one has run, so a receiver that falls behind holds back
/// the network instead of letting chunks pile up in memory.
///
/// That thread is not this session's alone: in swift-corelibs-foundation every `URLSession` of
/// the process runs its work on one shared serial queue, so while it waits here no other session
/// (another user's backend, another environment) reads a byte or fires a timeout. It therefore
/// waits only while the receiver makes progress: once no operation has finished for
/// ``stallLimit``, the receiver counts as stalled (a store held by a long transaction, a hook
/// that blocks) and chunks are queued without waiting until it runs again. Back-pressure holds
/// for a receiver that is slow; one that is stopped costs memory instead of every session's
/// network.
final class BoundedOperationQueue: OperationQueue, @unchecked Sendable {
    private let condition = NSCondition()
    private var waiting = 0
    /// When an operation last finished, or the queue last went from idle to busy.
    private var lastProgress = Date()
    let limit: Int
    let stallLimit: TimeInterval

    init(limit: Int, stallLimit: TimeInterval = 0.1) {
        self.limit = max(1, limit)
        self.stallLimit = stallLimit
        super.init()
    }

    override func addOperation(_ block: @escaping @Sendable () -> Void) {
        condition.lock()
        if waiting == 0 { lastProgress = Date() }
        // Never from one of this queue's own operations: it would wait for itself.
        if OperationQueue.current !== self {
            while waiting >= limit {
                let deadline = lastProgress.addingTimeInterval(stallLimit)
                if Date() >= deadline { break }
                _ = condition.wait(until: deadline)
            }
        }
        waiting += 1
        condition.unlock()
        super.addOperation { [self] in
            block()
            condition.lock()
            waiting -= 1
            lastProgress = Date()
            condition.broadcast()
            condition.unlock()
        }
    }
}
