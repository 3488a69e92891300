import Flatland
import Foundation

/// One `(user, environment)` pair: its own store, its own backend, its own credentials.
///
/// Two sessions never share data: each has its own store, a new transport (its own
/// `URLSession`, cookies and connections) and its own token. Logging out ends the session and
/// wipes its store.
///
/// ```swift
/// let env = try Environment(name: "local", baseURL: URL(string: "http://127.0.0.1:8080")!)
/// let session = Session(user: "ada", environment: env, registry: try EntityRegistry([User.self]))
/// let me = try await session.launch(.get, "/user/me").value
/// await session.logout()
/// ```
///
/// A session on disk keeps its store in a persistence the app's ``SessionStorage`` makes, one
/// per user and environment name; a new session of the same pair (after a restart) sees what
/// was stored:
///
/// ```swift
/// let storage = SQLitePersistence.sessionStorage(in: supportDirectory)  // FlatlandSQLite
/// let session = try Session(user: "u-42", environment: env, registry: registry, storage: .persistent(storage))
/// ```
///
/// A persistent session commits each response off Swift's cooperative thread pool (on a
/// dispatch queue), and its logout wipes the store in one transaction, then closes and removes
/// the persistence, also off the pool.
public final class Session: Sendable {
    /// Who this session is for (a name, an email: the app's choice).
    public let user: String
    /// Where it talks to.
    public let environment: Environment
    /// Its store.
    public let store: Store
    /// Its backend.
    public let backend: Backend
    /// Its token, read by its ``AuthenticationFilter``.
    public let credentials: Credentials
    private let ended = Locked(false)
    /// What made the store's persistence, for a persistent session.
    private let factory: (any StorePersistenceFactory)?
    private let failure = Locked<(any Error)?>(nil)

    /// A session with an in-memory store. Its filters are a ``RequestIDFilter``, an
    /// ``AuthenticationFilter`` on its ``credentials``, then `configuration.filters`.
    public convenience init(
        user: String, environment: Environment, registry: EntityRegistry = EntityRegistry(),
        hooks: StoreHooks = StoreHooks(), configuration: Backend.Configuration = Backend.Configuration()
    ) {
        self.init(
            user: user, environment: environment, store: Store(registry: registry, hooks: hooks), factory: nil,
            configuration: configuration)
    }

    /// A session whose store is kept as `storage` says: in memory, or on the persistence a
    /// factory makes for `user` and `environment.name`. Its filters are a ``RequestIDFilter``,
    /// an ``AuthenticationFilter`` on its ``credentials``, then `configuration.filters`.
    ///
    /// Opening a persistent store is blocking I/O: call this off Swift's cooperative pool (or
    /// accept a short block).
    ///
    /// - Throws: the factory's error when the persistence cannot be opened (FlatlandSQLite's
    ///   `SQLiteStoreError`: a damaged file, a file this process has open already…).
    public convenience init(
        user: String, environment: Environment, registry: EntityRegistry = EntityRegistry(),
        hooks: StoreHooks = StoreHooks(), storage: SessionStorage,
        configuration: Backend.Configuration = Backend.Configuration()
    ) throws {
        switch storage {
        case .memory:
            self.init(
                user: user, environment: environment, registry: registry, hooks: hooks, configuration: configuration)
        case .persistent(let factory):
            let persistence = try factory.makePersistence(user: user, environment: environment.name)
            self.init(
                user: user, environment: environment,
                store: Store(registry: registry, hooks: hooks, persistence: persistence), factory: factory,
                configuration: configuration)
        }
    }

    /// Makes a session as ``init(user:environment:registry:hooks:storage:configuration:)``
    /// does, opening its store (blocking file I/O for a persistent one) on a dispatch queue rather
    /// than on Swift's cooperative pool.
    public static func open(
        user: String, environment: Environment, registry: EntityRegistry = EntityRegistry(),
        hooks: StoreHooks = StoreHooks(), storage: SessionStorage,
        configuration: Backend.Configuration = Backend.Configuration()
    ) async throws -> Session {
        try await runBlocking {
            Result {
                try Session(
                    user: user, environment: environment, registry: registry, hooks: hooks, storage: storage,
                    configuration: configuration)
            }
        }.get()
    }

    private init(
        user: String, environment: Environment, store: Store, factory: (any StorePersistenceFactory)?,
        configuration: Backend.Configuration
    ) {
        self.user = user
        self.environment = environment
        self.factory = factory
        let credentials = Credentials()
        self.credentials = credentials
        self.store = store
        var configuration = configuration
        configuration.filters =
            [RequestIDFilter(), AuthenticationFilter(credentials: credentials)] + configuration.filters
        backend = Backend(environment: environment, store: store, configuration: configuration)
    }

    /// Whether the session keeps its store on disk (a ``SessionStorage/persistent(_:)`` session).
    public var isPersistent: Bool { factory != nil }

    /// Whether the session is still active (not logged out).
    public var isActive: Bool { !ended.current }

    /// Launches a request in this session: see ``Backend/launch(_:_:body:headers:ingestOptions:commitPlan:)``.
    @discardableResult
    public func launch(
        _ method: HTTPMethod, _ path: String, body: [UInt8]? = nil, headers: HTTPHeaders = [:],
        ingestOptions: IngestOptions? = nil, commitPlan: (@Sendable (IngestBatch) throws -> ResponseCommit)? = nil
    ) -> HTTPTask {
        backend.launch(
            method, path, body: body, headers: headers, ingestOptions: ingestOptions, commitPlan: commitPlan)
    }

    /// Launches a request to an absolute URL of this session's environment: a next link
    /// (`Link`, `@odata.nextLink`, `nextLink`) or a `Location` its server sent, followed by hand.
    /// The URL must be on the environment's origin and under its base path
    /// (``Environment/pathAndQuery(ofAbsolute:)``); the request is then launched exactly as
    /// ``launch(_:_:body:headers:ingestOptions:commitPlan:)`` launches its path, through the
    /// session's filters (its token included).
    ///
    /// A URL anywhere else is refused: the task fails at once with
    /// ``HTTPError/Code-swift.struct/outsideEnvironment`` and nothing is sent, so a link from a
    /// response never carries the session's credentials to another server.
    @discardableResult
    public func launch(
        _ method: HTTPMethod, url: URL, body: [UInt8]? = nil, headers: HTTPHeaders = [:],
        ingestOptions: IngestOptions? = nil, commitPlan: (@Sendable (IngestBatch) throws -> ResponseCommit)? = nil
    ) -> HTTPTask {
        let path: String
        do {
            path = try environment.pathAndQuery(ofAbsolute: url)
        } catch {
            return HTTPTask.failed(method: method, url: url, environment: environment, error)
        }
        return backend.launch(
            method, path, body: body, headers: headers, ingestOptions: ingestOptions, commitPlan: commitPlan)
    }

    /// Launches a request to an absolute URL of this session's environment and waits for its
    /// result: see ``launch(_:url:body:headers:ingestOptions:commitPlan:)``.
    ///
    /// - Throws: ``HTTPError``; ``HTTPError/Code-swift.struct/outsideEnvironment`` (nothing
    ///   sent) for a URL outside the environment.
    @discardableResult
    public func send(
        _ method: HTTPMethod, url: URL, body: [UInt8]? = nil, headers: HTTPHeaders = [:],
        ingestOptions: IngestOptions? = nil, commitPlan: (@Sendable (IngestBatch) throws -> ResponseCommit)? = nil
    ) async throws(HTTPError) -> HTTPResult {
        let path = try environment.pathAndQuery(ofAbsolute: url)
        return try await backend.send(
            method, path, body: body, headers: headers, ingestOptions: ingestOptions, commitPlan: commitPlan)
    }

    /// Launches a request and calls `completion` with its result.
    @discardableResult
    public func launch(
        _ method: HTTPMethod, _ path: String, body: [UInt8]? = nil, headers: HTTPHeaders = [:],
        completion: @escaping @Sendable (Result<HTTPResult, HTTPError>) -> Void
    ) -> HTTPTask {
        backend.launch(method, path, body: body, headers: headers, completion: completion)
    }

    /// Launches a request and waits for its result.
    @discardableResult
    public func send(
        _ method: HTTPMethod, _ path: String, body: [UInt8]? = nil, headers: HTTPHeaders = [:],
        ingestOptions: IngestOptions? = nil, commitPlan: (@Sendable (IngestBatch) throws -> ResponseCommit)? = nil
    ) async throws(HTTPError) -> HTTPResult {
        try await backend.send(
            method, path, body: body, headers: headers, ingestOptions: ingestOptions, commitPlan: commitPlan)
    }

    /// Launches a request whose successful body is read whole as bytes or JSON, without touching
    /// the store, and returns its task at once (``send(_:_:body:headers:consuming:)`` waits for
    /// it): for a caller that waits with a deadline of its own.
    package func launch(
        _ method: HTTPMethod, _ path: String, body: [UInt8]? = nil, headers: HTTPHeaders = [:],
        consuming consumption: ResponseConsumption
    ) -> HTTPTask {
        backend.launch(
            method, path, body: body, headers: headers, ingestOptions: nil, commitPlan: nil, consumption: consumption)
    }

    /// Sends a request whose successful body is read whole as bytes or JSON, without touching
    /// the store: see ``Backend/send(_:_:body:headers:consuming:)``.
    @discardableResult
    public func send(
        _ method: HTTPMethod, _ path: String, body: [UInt8]? = nil, headers: HTTPHeaders = [:],
        consuming consumption: ResponseConsumption
    ) async throws(HTTPError) -> HTTPResult {
        try await backend.send(method, path, body: body, headers: headers, consuming: consumption)
    }

    /// Ends the session: cancels what is in flight and waits for it, forgets the token, wipes
    /// the store (one transaction) and, for a persistent session, closes its persistence and has
    /// the factory remove it (the file and its companions). Later launches fail with
    /// ``HTTPError/Code-swift.struct/sessionEnded``. The store and file work runs on a dispatch
    /// queue, not on Swift's cooperative pool.
    ///
    /// A wipe that fails (a file that cannot be removed) leaves the session ended;
    /// ``logoutError`` says why.
    public func logout() async {
        guard markEnded() else { return }
        await backend.end()
        credentials.set(nil)
        let store = store
        let factory = factory
        let user = user
        let environment = environment.name
        let error: (any Error)? = await runBlocking {
            var failure: (any Error)?
            do { try store.removeAll() } catch { failure = error }
            // The file goes even when the wipe failed (a damaged file): that is the wipe too.
            if let factory, let persistence = store.persistence {
                do { try factory.destroyPersistence(persistence, user: user, environment: environment) } catch {
                    failure = failure ?? error
                }
            }
            return failure
        }
        failure.withLock { $0 = error }
    }

    /// Ends the session without wiping it: cancels what is in flight and waits for it, then, for
    /// a persistent session, has the factory close the persistence, which keeps what was stored
    /// for the next session of this user and environment (an app going away, a test of a
    /// restart). Later launches fail with ``HTTPError/Code-swift.struct/sessionEnded``; the
    /// closing runs on a dispatch queue, not on Swift's cooperative pool.
    public func close() async {
        guard markEnded() else { return }
        await backend.end()
        guard let factory, let persistence = store.persistence else { return }
        await runBlocking { factory.closePersistence(persistence) }
    }

    /// Marks the session ended; true for the first call only.
    private func markEnded() -> Bool {
        ended.withLock { e -> Bool in
            defer { e = true }
            return !e
        }
    }

    /// Why the last ``logout()`` could not wipe the store or remove its persistence; nil when it
    /// did (or has not run).
    public var logoutError: (any Error)? { failure.current }
}
