import Foundation
import Hummingbird
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
public final class SampleServer: Sendable {
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

        /// A configuration; every argument has a default.
        public init(
            host: String = "127.0.0.1", port: Int = 0, population: SampleState.Population = .init(),
            maxPageSize: Int = 100_000
        ) {
            self.host = host
            self.port = port
            self.population = population
            self.maxPageSize = maxPageSize
        }
    }

    /// Where and what it serves.
    public let configuration: Configuration
    /// Its data.
    public let state: SampleState
    /// Its test controls.
    public let knobs: ServerKnobs
    let api: SampleAPI
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
        knobs = ServerKnobs()
        api = SampleAPI(state: state, knobs: knobs, maxPageSize: configuration.maxPageSize)
    }

    /// The bound port, once started.
    public var port: Int? { running.withLockedValue { $0.port } }

    /// `http://host:port`, once started.
    public var baseURL: URL? { port.map { URL(string: "http://\(configuration.host):\($0)")! } }

    private func makeApplication(onStart: @escaping @Sendable (Int) -> Void) -> some ApplicationProtocol {
        let api = self.api
        return Application(
            responder: CallbackResponder<BasicRequestContext> { request, _ in await api.respond(to: request) },
            configuration: ApplicationConfiguration(
                address: .hostname(configuration.host, port: configuration.port), serverName: "flatland-sample"),
            onServerRunning: { channel in onStart(channel.localAddress?.port ?? 0) },
            logger: Self.logger)
    }

    private static var logger: Logger {
        var logger = Logger(label: "flatland.server")
        logger.logLevel = .critical
        return logger
    }

    /// Starts serving in the background and returns the bound port.
    public func start() async throws -> Int {
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
        knobs.releaseAll()
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
        let app = makeApplication { [running] port in
            running.withLockedValue { $0.port = port }
            onStart(port)
        }
        try await app.runService()
    }
}
