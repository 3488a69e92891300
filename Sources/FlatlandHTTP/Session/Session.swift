import Flatland
import Foundation

/// One `(user, environment)` pair: its own store, its own backend, its own credentials.
///
/// Two sessions never share data: each has a new store, a new transport (its own
/// `URLSession`, cookies and connections) and its own token. Logging out ends the session and
/// wipes its store.
///
/// ```swift
/// let env = try Environment(name: "local", baseURL: URL(string: "http://127.0.0.1:8080")!)
/// let session = Session(user: "ada", environment: env, registry: try EntityRegistry([User.self]))
/// let me = try await session.launch(.get, "/user/me").value
/// await session.logout()
/// ```
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

    /// A session. Its filters are a ``RequestIDFilter``, an ``AuthenticationFilter`` on its
    /// ``credentials``, then `configuration.filters`.
    public init(
        user: String, environment: Environment, registry: EntityRegistry = EntityRegistry(),
        hooks: StoreHooks = StoreHooks(), configuration: Backend.Configuration = Backend.Configuration()
    ) {
        self.user = user
        self.environment = environment
        let credentials = Credentials()
        self.credentials = credentials
        store = Store(registry: registry, hooks: hooks)
        var configuration = configuration
        configuration.filters =
            [RequestIDFilter(), AuthenticationFilter(credentials: credentials)] + configuration.filters
        backend = Backend(environment: environment, store: store, configuration: configuration)
    }

    /// Whether the session is still active (not logged out).
    public var isActive: Bool { !ended.current }

    /// Launches a request in this session: see ``Backend/launch(_:_:body:headers:)``.
    @discardableResult
    public func launch(_ method: HTTPMethod, _ path: String, body: [UInt8]? = nil, headers: HTTPHeaders = [:])
        -> HTTPTask
    {
        backend.launch(method, path, body: body, headers: headers)
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
    public func send(_ method: HTTPMethod, _ path: String, body: [UInt8]? = nil, headers: HTTPHeaders = [:])
        async throws(HTTPError) -> HTTPResult
    {
        try await backend.send(method, path, body: body, headers: headers)
    }

    /// Ends the session: cancels what is in flight, forgets the token, wipes the store. Later
    /// launches fail with ``HTTPError/Code-swift.struct/sessionEnded``.
    public func logout() async {
        let first = ended.withLock { e -> Bool in
            defer { e = true }
            return !e
        }
        guard first else { return }
        await backend.end()
        credentials.set(nil)
        try? store.removeAll()
    }
}
