import CoreMetrics
import Flatland
import FlatlandJSON
import Foundation
import Logging

/// The requests of one `(user, environment)`: launches them as tracked tasks through the
/// filters and the transport, streams their bodies into the store, and keeps the set of tasks
/// in flight.
///
/// A backend belongs to one ``Session``; nothing in it is shared with another session.
public final class Backend: Sendable {
    /// How a backend sends its requests.
    public struct Configuration: Sendable {
        /// Makes the backend's own transport (each backend gets a new one).
        public var makeTransport: @Sendable () -> any HTTPTransport
        /// Filters around every request, outermost first; a ``Session`` puts its request-id
        /// and authentication filters before these.
        public var filters: [any HTTPFilter]
        /// Retries: none by default.
        public var retryPolicy: RetryPolicy
        /// How responses are ingested.
        public var ingestOptions: IngestOptions
        /// Headers that do not make two GETs different for de-duplication (lower case).
        public var headersIgnoredForDeduplication: Set<String>
        /// Whether an identical GET launched while one is in flight joins it.
        public var deduplicatesGETs: Bool
        /// The longest wait between two bytes of a response, in seconds.
        public var timeout: TimeInterval
        /// The most body bytes of one response that may wait for the ingest, which runs on a
        /// thread of its own, overlapped with the download. When the ingest falls behind and
        /// this many bytes wait, the transport stops reading until it catches up
        /// (back-pressure), so a response's buffered bytes never grow with its size. At least
        /// one chunk always fits. Default ``defaultIngestBufferCapacity``.
        public var ingestBufferCapacity: Int

        /// Where the backend logs its tasks: their start (`trace`), their end with status,
        /// bytes and duration (`debug`), and retries (`info`). A logger that drops everything by
        /// default; give one of the app's (with its handler and level) to see them.
        public var logger: Logger
        /// Where the backend's metrics go (requests, durations, bytes, retries,
        /// de-duplicated GETs; labels `flatland.http.…`): nil for the process's
        /// `MetricsSystem`, which measures nothing until the app bootstraps it.
        public var metricsFactory: (any MetricsFactory)?

        /// The default ``ingestBufferCapacity``: 2 MiB.
        public static let defaultIngestBufferCapacity = 2 << 20

        /// A logger that drops everything: the default ``logger``.
        public static var silentLogger: Logger {
            Logger(label: "flatland", factory: { _ in SwiftLogNoOpLogHandler() })
        }

        /// A configuration; every argument has a default.
        public init(
            makeTransport: @escaping @Sendable () -> any HTTPTransport = { URLSessionTransport() },
            filters: [any HTTPFilter] = [],
            retryPolicy: RetryPolicy = .none,
            ingestOptions: IngestOptions = IngestOptions(),
            headersIgnoredForDeduplication: Set<String> = ["x-request-id", "user-agent"],
            deduplicatesGETs: Bool = true,
            timeout: TimeInterval = 60,
            ingestBufferCapacity: Int = Configuration.defaultIngestBufferCapacity,
            logger: Logger = Configuration.silentLogger,
            metricsFactory: (any MetricsFactory)? = nil
        ) {
            self.makeTransport = makeTransport
            self.filters = filters
            self.retryPolicy = retryPolicy
            self.ingestOptions = ingestOptions
            self.headersIgnoredForDeduplication = headersIgnoredForDeduplication
            self.deduplicatesGETs = deduplicatesGETs
            self.timeout = timeout
            self.ingestBufferCapacity = max(1, ingestBufferCapacity)
            self.logger = logger
            self.metricsFactory = metricsFactory
        }
    }

    /// Where requests go.
    public let environment: Environment
    /// Where responses land.
    public let store: Store
    /// How requests are sent.
    public let configuration: Configuration
    let transport: any HTTPTransport
    let telemetry: BackendTelemetry

    private struct State {
        var inFlight: [String: HTTPTask] = [:]
        var order: [String] = []
        var byKey: [String: HTTPTask] = [:]
        var ended = false
    }

    private let state = Locked(State())

    /// A backend for `environment` writing into `store`.
    public init(environment: Environment, store: Store, configuration: Configuration = Configuration()) {
        self.environment = environment
        self.store = store
        self.configuration = configuration
        transport = configuration.makeTransport()
        telemetry = BackendTelemetry(configuration: configuration, environment: environment.name)
    }

    // MARK: Launching

    /// Launches a request: `method`, a path and query relative to the environment's base URL,
    /// an optional body. The task starts at once; await ``HTTPTask/value`` for its result.
    ///
    /// An identical GET (same URL and headers that matter) launched while one is in flight
    /// returns that task instead of going to the network again. A request launched with its own
    /// `ingestOptions` or `commitPlan` is never joined (two of them cannot be compared).
    ///
    /// A `304 Not Modified` answer to a request that carries `If-None-Match` is a success: the
    /// task's result has status 304 and no ingest, and the store keeps what it has.
    @discardableResult
    public func launch(
        _ method: HTTPMethod, _ path: String, body: [UInt8]? = nil, headers: HTTPHeaders = [:],
        ingestOptions: IngestOptions? = nil, commitPlan: (@Sendable (IngestBatch) throws -> ResponseCommit)? = nil
    )
        -> HTTPTask
    {
        launch(
            method, path, body: body, headers: headers, ingestOptions: ingestOptions, commitPlan: commitPlan,
            consumption: .ingest)
    }

    /// Launches a request whose successful body is consumed as `consumption` says.
    func launch(
        _ method: HTTPMethod, _ path: String, body: [UInt8]?, headers: HTTPHeaders, ingestOptions: IngestOptions?,
        commitPlan: (@Sendable (IngestBatch) throws -> ResponseCommit)?, consumption: ResponseConsumption
    ) -> HTTPTask {
        var rng = SecureRandom()
        let id = EntityIDFormat.generate(prefix: "t", using: &rng)
        var allHeaders = environment.headers.merging(headers)
        if body != nil && allHeaders["Content-Type"] == nil { allHeaders["Content-Type"] = "application/json" }
        if allHeaders["Accept"] == nil { allHeaders["Accept"] = "application/json" }
        guard let url = environment.url(for: path) else {
            let placeholder = environment.baseURL
            let task = HTTPTask(
                id: id,
                request: HTTPRequest(method: method, url: placeholder, endpoint: path, headers: allHeaders, taskID: id))
            task.complete(.failure(HTTPError(.invalidRequest, "\(path) does not form a URL").stamped(task.request)))
            return task
        }
        var request = HTTPRequest(
            method: method, url: url, endpoint: path, headers: allHeaders, body: body, taskID: id,
            timeout: configuration.timeout, ingestOptions: ingestOptions)
        request.commitPlan = commitPlan
        request.consumption = consumption
        let key =
            configuration.deduplicatesGETs && (method == .get || method == .head) && body == nil
                && ingestOptions == nil && commitPlan == nil && consumption == .ingest
            ? "\(method) \(url.absoluteString)\n\(allHeaders.canonical(ignoring: configuration.headersIgnoredForDeduplication))"
            : nil
        let task = HTTPTask(id: id, request: request)
        let launched = state.withLock { s -> HTTPTask? in
            if s.ended { return nil }
            if let key, let existing = s.byKey[key] {
                existing.status.withLock { $0.joined += 1 }
                return existing
            }
            s.inFlight[id] = task
            s.order.append(id)
            if let key { s.byKey[key] = task }
            return task
        }
        guard let launched else {
            task.complete(.failure(HTTPError(.sessionEnded, "the session has ended").stamped(request)))
            return task
        }
        if launched !== task {
            telemetry.joined(launched)
            return launched
        }
        let work = Task { [self] in
            telemetry.started(task)
            let outcome = await run(task)
            state.withLock { s in
                s.inFlight[id] = nil
                s.order.removeAll { $0 == id }
                if let key, s.byKey[key] === task { s.byKey[key] = nil }
            }
            task.complete(outcome)
            telemetry.ended(task, outcome)
        }
        task.attach(work)
        return task
    }

    /// Launches a request and calls `completion` with its result: the completion-handler form.
    @discardableResult
    public func launch(
        _ method: HTTPMethod, _ path: String, body: [UInt8]? = nil, headers: HTTPHeaders = [:],
        completion: @escaping @Sendable (Result<HTTPResult, HTTPError>) -> Void
    ) -> HTTPTask {
        let task = launch(method, path, body: body, headers: headers)
        task.whenDone(completion)
        return task
    }

    /// Launches a request and waits for its result.
    ///
    /// Cancelling the calling task cancels the request (it then fails with
    /// ``HTTPError/Code-swift.struct/cancelled`` and applies nothing), unless another launch
    /// joined it: a GET shared with other callers goes on for them, and this caller waits for it.
    @discardableResult
    public func send(
        _ method: HTTPMethod, _ path: String, body: [UInt8]? = nil, headers: HTTPHeaders = [:],
        ingestOptions: IngestOptions? = nil, commitPlan: (@Sendable (IngestBatch) throws -> ResponseCommit)? = nil
    ) async throws(HTTPError) -> HTTPResult {
        try await wait(
            for: launch(
                method, path, body: body, headers: headers, ingestOptions: ingestOptions, commitPlan: commitPlan))
    }

    /// Sends a request whose successful body is read whole, as bytes or JSON, into the result
    /// (``HTTPResult/body``, ``HTTPResult/json``), without touching the store: an answer that is
    /// not entities. `consumption` ``ResponseConsumption/ingest`` is ``send(_:_:body:headers:ingestOptions:commitPlan:)``.
    ///
    /// - Throws: as ``send(_:_:body:headers:ingestOptions:commitPlan:)``; a body past the limit,
    ///   or one that is not JSON for ``ResponseConsumption/json(limit:)``, is
    ///   ``HTTPError/Code-swift.struct/decoding``.
    public func send(
        _ method: HTTPMethod, _ path: String, body: [UInt8]? = nil, headers: HTTPHeaders = [:],
        consuming consumption: ResponseConsumption
    ) async throws(HTTPError) -> HTTPResult {
        try await wait(
            for: launch(
                method, path, body: body, headers: headers, ingestOptions: nil, commitPlan: nil,
                consumption: consumption))
    }

    /// Waits for a task launched by this caller; cancelling the caller cancels it unless another
    /// launch joined it.
    private func wait(for task: HTTPTask) async throws(HTTPError) -> HTTPResult {
        let outcome = await withTaskCancellationHandler {
            () async -> Result<HTTPResult, HTTPError> in
            do throws(HTTPError) {
                return .success(try await task.value)
            } catch {
                return .failure(error)
            }
        } onCancel: {
            if task.joinCount == 0 { task.cancel() }
        }
        return try outcome.get()
    }

    // MARK: Tasks in flight

    /// The tasks in flight, in launch order.
    public var tasksInFlight: [HTTPTask] {
        state.withLock { s in s.order.compactMap { s.inFlight[$0] } }
    }

    /// The task in flight with this uuid.
    public func task(id: String) -> HTTPTask? { state.withLock { $0.inFlight[id] } }

    /// Cancels the task in flight with this uuid; false when there is none.
    @discardableResult
    public func cancel(taskID: String) -> Bool {
        guard let task = task(id: taskID) else { return false }
        task.cancel()
        return true
    }

    /// Cancels every task in flight.
    public func cancelAll() {
        for task in tasksInFlight { task.cancel() }
    }

    /// Ends the backend: no more launches, everything in flight cancelled and awaited, the
    /// transport released.
    func end() async {
        let tasks = state.withLock { s -> [HTTPTask] in
            s.ended = true
            return s.order.compactMap { s.inFlight[$0] }
        }
        for task in tasks { task.cancel() }
        for task in tasks { _ = try? await task.value }
        transport.shutdown()
    }

    // MARK: Running a task

    private func run(_ task: HTTPTask) async -> Result<HTTPResult, HTTPError> {
        task.markStarted()
        let policy = configuration.retryPolicy
        var attempt = 0
        while true {
            attempt += 1
            var request = task.request
            request.attempt = attempt
            task.status.withLock { $0.attempts = attempt }
            var retryAfter: String?
            var failure: HTTPError
            do {
                let response = try await chain(request, task: task)
                if Task.isCancelled { throw HTTPError(.cancelled, "the task was cancelled") }
                task.status.withLock { $0.statusCode = response.status }
                if response.isSuccess || (response.status == 304 && request.headers["If-None-Match"] != nil) {
                    // A store on disk commits with blocking SQLite work: not on the cooperative pool.
                    // A body read whole (no ingest) touches no store: finished here, without the
                    // trip (two thread wake-ups a request).
                    guard store.persistence != nil, response.pending != nil else { return finish(response, task: task) }
                    return await runBlocking { [self] in finish(response, task: task) }
                }
                retryAfter = response.headers["Retry-After"]
                failure = HTTPError(
                    .status, "the server answered \(response.status)", status: response.status,
                    body: response.errorBody)
            } catch let error as HTTPError {
                failure = error
            } catch let error as IngestError {
                failure = HTTPError(ingest: error)
            } catch is CancellationError {
                failure = HTTPError(.cancelled, "the task was cancelled")
            } catch {
                failure = HTTPError(.transport, "the request failed: \(error)", underlying: "\(error)")
            }
            if Task.isCancelled { failure = HTTPError(.cancelled, "the task was cancelled", status: failure.status) }
            let retryable = failure.code == .transport || failure.code == .status
            guard retryable,
                policy.shouldRetry(
                    method: request.method, attempt: attempt, status: failure.code == .status ? failure.status : nil)
            else {
                return .failure(failure.stamped(request))
            }
            let delay = policy.delay(afterAttempt: attempt, retryAfter: retryAfter)
            telemetry.retrying(task, attempt: attempt, after: failure, delay: delay)
            task.status.withLock { $0.retryDelays.append(delay) }
            do {
                try await Task.sleep(for: delay)
            } catch {
                return .failure(HTTPError(.cancelled, "the task was cancelled").stamped(request))
            }
        }
    }

    /// Applies a successful response's ingest: the only place a task writes to the store.
    private func finish(_ response: HTTPResponse, task: HTTPTask) -> Result<HTTPResult, HTTPError> {
        guard let pending = response.pending else {
            var result = HTTPResult(taskID: task.id, status: response.status, headers: response.headers, ingest: nil)
            if task.request.consumption != .ingest {
                let body = response.body ?? []
                result.body = body
                if case .json = task.request.consumption, !body.isEmpty {
                    do {
                        result.json = try JSONValue(parsing: body)
                    } catch {
                        return .failure(
                            HTTPError(
                                .decoding, "the response is not JSON: \(error)", status: response.status,
                                underlying: "\(error)"
                            ).stamped(task.request))
                    }
                }
            }
            return .success(result)
        }
        do throws(IngestError) {
            let batch = try pending.ingestor.finish()
            var plan = ResponseCommit()
            if let commitPlan = task.request.commitPlan {
                do {
                    plan = try commitPlan(batch)
                } catch {
                    return .failure(
                        HTTPError(
                            .persistence, "the response's commit plan failed: \(error)", status: response.status,
                            underlying: "\(error)"
                        ).stamped(task.request))
                }
            }
            if plan.handsBack {
                var result = HTTPResult(
                    taskID: task.id, status: response.status, headers: response.headers, ingest: nil)
                result.uncommitted = batch
                return .success(result)
            }
            let ingest = try store.commit(batch, removing: plan.removing, alongside: plan.alongside)
            return .success(
                HTTPResult(taskID: task.id, status: response.status, headers: response.headers, ingest: ingest))
        } catch {
            return .failure(HTTPError(ingest: error, status: response.status).stamped(task.request))
        }
    }

    /// The filters around the transport, for one attempt.
    private func chain(_ request: HTTPRequest, task: HTTPTask) async throws -> HTTPResponse {
        let transport = self.transport
        let store = self.store
        let options = task.request.ingestOptions ?? configuration.ingestOptions
        let taskID = task.id
        let capacity = configuration.ingestBufferCapacity
        var next: HTTPFilterNext = { [weak task] request in
            let receiver = IngestReceiver(
                makeIngestor: {
                    store.makeIngestor(endpoint: request.endpoint, taskID: taskID, options: options)
                },
                bufferCapacity: capacity, consumption: request.consumption,
                progress: { [weak task] count in task?.received(count) })
            defer { task?.buffered(receiver.peakBuffered) }
            do {
                let head = try await withTaskCancellationHandler {
                    let head = try await transport.send(request, to: receiver)
                    // The transport has handed in the last chunk; the ingest may still be reading.
                    try await receiver.bodyIngested()
                    return head
                } onCancel: {
                    receiver.cancel()
                }
                return HTTPResponse(head: head, receiver: receiver)
            } catch {
                receiver.cancel()
                throw error
            }
        }
        for filter in configuration.filters.reversed() {
            let inner = next
            next = { request in try await filter.handle(request, next: inner) }
        }
        return try await next(request)
    }
}
