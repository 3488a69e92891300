import CoreMetrics
import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOConcurrencyHelpers
import NIOCore
import ServiceLifecycle

/// The sample backend of the seed's API, served by Hummingbird.
///
/// ```swift
/// let server = SampleServer()                 // 127.0.0.1, port 0: a free port
/// let port = try await server.start()
/// // … GET http://127.0.0.1:\(port)/devices?offset=0&count=2
/// await server.stop()
/// ```
///
/// Routes: `POST /session` (register), `PUT /session` (confirm), `GET|PATCH /user/me`,
/// `GET /user/me/devices`, `GET /devices`, `GET /users` (paginated slices
/// `{offset,count,total,data}` with `offset`/`count`), `GET|PATCH|DELETE /users/{id}` ("me"
/// resolves to the session's user), `GET /devices/{id}`. Entities carry prefixed ids and an
/// ETag; `?fields=a,b` returns only those fields (and `uuid`).
///
/// Who may read and write what is in <doc:Authorization>; the bounds that keep it alive under
/// hostile clients (timeouts, a connection cap, unconfirmed sessions) are ``Limits``.
public final class SampleServer: Sendable {
    /// The bounds of a server on an open port: timeouts, a connection cap, and how many
    /// unconfirmed registrations it keeps and for how long. Every value has a default fit for
    /// a real port; tests set small ones.
    public struct Limits: Sendable, Hashable {
        /// How long a request's head (request line and header fields) may take to arrive once
        /// its first byte has: a slower client is disconnected. Default 10 s.
        public var headerTimeout: Duration
        /// How long a connection may stay open with no request in progress, nothing left to
        /// write and nothing received (keep-alive, or a client that connects and says
        /// nothing). A response the client is still reading is never cut by it. Default 60 s.
        public var idleTimeout: Duration
        /// How long a request's body may take to arrive once its head has, however its bytes
        /// trickle in (independent of ``idleTimeout``): a slower client is disconnected.
        /// Default 30 s.
        public var bodyTimeout: Duration
        /// How long a response may wait for the client to take any of it: a client that stops
        /// reading is disconnected this long after its socket last took a write (a slow reader
        /// that keeps reading is not). Responses are written in pieces of at most
        /// ``SampleServer/responseChunkBytes`` as the client takes them (back-pressure).
        /// Default 30 s.
        public var writeTimeout: Duration
        /// The most connections open at once; past it a new connection is closed as soon as it
        /// is accepted, and the open ones are served as before. Default 512.
        public var maxConnections: Int
        /// The most registrations (`POST /session`) waiting for their `PUT /session`; past it,
        /// `POST /session` answers 503 with `Retry-After` until some are confirmed or expire.
        /// Default 1,000.
        public var maxPendingSessions: Int
        /// How long a registration may wait for its `PUT /session`: then its token stops
        /// working and its user, device and session are removed. Default 10 minutes.
        public var pendingSessionLifetime: Duration
        /// How many distinct paths the server (and its test controls) keep counts and last
        /// headers for; requests to further paths are counted only in the total. Default 256.
        public var trackedPaths: Int

        /// Limits; every argument has a default.
        public init(
            headerTimeout: Duration = .seconds(10), idleTimeout: Duration = .seconds(60), maxConnections: Int = 512,
            maxPendingSessions: Int = 1000, pendingSessionLifetime: Duration = .seconds(600), trackedPaths: Int = 256,
            bodyTimeout: Duration = .seconds(30), writeTimeout: Duration = .seconds(30)
        ) {
            self.headerTimeout = headerTimeout
            self.idleTimeout = idleTimeout
            self.bodyTimeout = bodyTimeout
            self.writeTimeout = writeTimeout
            self.maxConnections = maxConnections
            self.maxPendingSessions = maxPendingSessions
            self.pendingSessionLifetime = pendingSessionLifetime
            self.trackedPaths = trackedPaths
        }
    }

    /// Where and what to serve.
    public struct Configuration: Sendable {
        /// The address to bind: loopback by default.
        public var host: String
        /// The port; 0 picks a free one.
        public var port: Int
        /// The sample population it starts with.
        public var population: SampleState.Population
        /// The most items one page returns.
        public var maxPageSize: Int
        /// Timeouts, the connection cap and the bound on unconfirmed sessions.
        public var limits: Limits
        /// The tables served at `/tables/{name}` (a `todoitem` table, in memory, by default).
        public var tables: TableServing
        /// Where every answered request is logged (`debug`; a 5xx at `info`): method, path,
        /// status, duration. Silent by default.
        public var logger: Logger
        /// Where the server's metrics go (`flatland.server.requests`,
        /// `flatland.server.request.duration`); nil for the process's `MetricsSystem`.
        public var metricsFactory: (any MetricsFactory)?

        /// A configuration; every argument has a default.
        public init(
            host: String = "127.0.0.1", port: Int = 0, population: SampleState.Population = .init(),
            maxPageSize: Int = 100_000, limits: Limits = Limits(), tables: TableServing = TableServing(),
            logger: Logger = Logger(label: "flatland.server", factory: { _ in SwiftLogNoOpLogHandler() }),
            metricsFactory: (any MetricsFactory)? = nil
        ) {
            self.host = host
            self.port = port
            self.population = population
            self.maxPageSize = maxPageSize
            self.limits = limits
            self.tables = tables
            self.logger = logger
            self.metricsFactory = metricsFactory
        }
    }

    /// The largest piece a response body is written in: the next piece waits until the client
    /// has taken enough of the last ones (64 KiB).
    public static let responseChunkBytes = 64 << 10

    /// Where and what it serves.
    public let configuration: Configuration
    /// Its data.
    public let state: SampleState
    /// Requests counted per path (bounded by ``Limits/trackedPaths``).
    package let requestLog: RequestLog
    /// Where tests install their controls (FlatlandServerTesting); empty otherwise.
    package let hooks: ServerHooks
    let api: SampleAPI
    private let connections: ConnectionCounter
    private let running = NIOLockedValueBox<Running>(Running())

    private struct Running {
        var task: Task<Void, any Error>?
        var group: ServiceGroup?
        var port: Int?
    }

    /// A server; nothing is bound until ``start()`` or ``run(onStart:)``.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        state = SampleState(population: configuration.population)
        requestLog = RequestLog(trackedPaths: configuration.limits.trackedPaths)
        hooks = ServerHooks()
        api = SampleAPI(
            state: state, requestLog: requestLog, hooks: hooks, maxPageSize: configuration.maxPageSize,
            limits: configuration.limits, tables: TableHost(hooks: hooks))
        connections = ConnectionCounter(limit: configuration.limits.maxConnections)
    }

    /// Connections open now: accepted, within ``Limits/maxConnections``, and not yet closed
    /// (by the client, or by the server after a timeout).
    public var openConnections: Int { connections.count }

    /// The bound port, once started.
    public var port: Int? { running.withLockedValue { $0.port } }

    /// `http://host:port`, once started.
    public var baseURL: URL? { port.map { URL(string: "http://\(configuration.host):\($0)")! } }

    private func makeApplication(onStart: @escaping @Sendable (Int) -> Void) -> some ApplicationProtocol {
        let api = self.api
        let limits = configuration.limits
        let connections = self.connections
        let telemetry = ServerTelemetry(logger: configuration.logger, factory: configuration.metricsFactory)
        let server = HTTPServerBuilder { responder in
            GuardedHTTP1Channel(
                http1: HTTP1Channel(responder: responder, configuration: .init(idleTimeout: nil)),
                deadlines: ConnectionClock.Deadlines(
                    header: TimeAmount(limits.headerTimeout), body: TimeAmount(limits.bodyTimeout),
                    write: TimeAmount(limits.writeTimeout), idle: TimeAmount(limits.idleTimeout)),
                connections: connections)
        }
        return Application(
            responder: CallbackResponder<ChannelRequestContext> { request, context in
                let start = ContinuousClock.now
                var response = await api.respond(to: request, channel: context.channel)
                // A request that closes its connection (`Connection: close`) gets an answer that
                // says so (RFC 9112 §9.6), and the connection closes after it: a client that
                // pools connections then never sends its next request on this one.
                if Self.closesConnection(request.headers) { response.headers[.connection] = "close" }
                telemetry.served(
                    method: request.method.rawValue, path: request.uri.path, status: response.status.code, since: start)
                return response
            },
            server: server,
            configuration: ApplicationConfiguration(
                address: .hostname(configuration.host, port: configuration.port), serverName: "flatland-sample"),
            onServerRunning: { [tables = api.tables, host = configuration.host] channel in
                let port = channel.localAddress?.port ?? 0
                tables.listening(host: host, port: port)
                onStart(port)
            },
            logger: Self.logger)
    }

    /// Whether a request closes its connection after its answer: its `Connection` field is
    /// `close`, as Hummingbird reads it (the only form it closes the connection for).
    static func closesConnection(_ headers: HTTPFields) -> Bool {
        headers[.connection] == "close"
    }

    private static var logger: Logger {
        var logger = Logger(label: "flatland.server")
        logger.logLevel = .critical
        return logger
    }

    /// Starts serving in the background and returns the bound port.
    ///
    /// - Throws: when the tables' database cannot be opened, or the port cannot be bound.
    public func start() async throws -> Int {
        try await api.tables.open(configuration.tables)
        let started = NIOLockedValueBox<CheckedContinuation<Int, any Error>?>(nil)
        return try await withCheckedThrowingContinuation { continuation in
            started.withLockedValue { $0 = continuation }
            let app = makeApplication { [running] port in
                running.withLockedValue { $0.port = port }
                started.withLockedValue { c in
                    c?.resume(returning: port)
                    c = nil
                }
            }
            // Run in a service group so that `stop()` can shut it down gracefully: cancelling the
            // serving task instead drops connections accepted but not yet served, and NIO traps on
            // their unfinished writers (swift-nio issue 3481).
            let group = ServiceGroup(
                configuration: .init(services: [app], gracefulShutdownSignals: [], logger: Self.logger))
            let task = Task {
                do {
                    try await group.run()
                } catch {
                    started.withLockedValue { c in
                        c?.resume(throwing: error)
                        c = nil
                    }
                    throw error
                }
            }
            running.withLockedValue {
                $0.task = task
                $0.group = group
            }
        }
    }

    /// Stops serving: held responses are released, connections closed.
    public func stop() async {
        hooks.request?.releaseAll()
        let stopping = running.withLockedValue { r -> Running in
            defer { r = Running() }
            return r
        }
        // Stops accepting, lets the requests in flight finish, then closes every connection.
        await stopping.group?.triggerGracefulShutdown()
        _ = await stopping.task?.result
    }

    /// Serves in the foreground until SIGINT or SIGTERM; `onStart` gets the bound port.
    public func run(onStart: @escaping @Sendable (Int) -> Void) async throws {
        try await api.tables.open(configuration.tables)
        let app = makeApplication { [running] port in
            running.withLockedValue { $0.port = port }
            onStart(port)
        }
        try await app.runService()
    }
}
