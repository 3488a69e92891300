import Flatland
import FlatlandHTTP
import FlatlandJSON
import Foundation

/// The SDK's entry point: typed calls over Flatland's raw requests, one client per
/// `(user, environment)`.
///
/// ```swift
/// let client = SeedClient(environment: try Environment(name: "local", baseURL: url), user: "ada")
/// try await client.register(email: "ada@example.com", firstname: "Ada")
/// try await client.confirm()
/// let me = try await client.me()
/// let page = try await client.devices(offset: 0, count: 20)
/// ```
public final class SeedClient: Sendable {
    /// The Flatland session underneath: its store, backend and tasks are all there.
    public let session: FlatlandHTTP.Session

    /// The SDK's entity types.
    public static func registry() -> EntityRegistry {
        // Three distinct prefixes: registration cannot fail.
        try! EntityRegistry([User.self, Device.self, Session.self])
    }

    /// A client for `user` on `environment`.
    public init(
        environment: FlatlandHTTP.Environment, user: String,
        configuration: Backend.Configuration = Backend.Configuration()
    ) {
        session = FlatlandHTTP.Session(
            user: user, environment: environment, registry: Self.registry(), configuration: configuration)
    }

    /// The store of this client's session.
    public var store: Store { session.store }

    /// A slice of a paginated listing.
    public struct Page<Item: Entity>: Sendable {
        /// The items of this page, in order.
        public var items: [Item]
        /// Where the page starts.
        public var offset: Int
        /// How many items the listing has.
        public var total: Int
        /// The task that fetched it.
        public var task: HTTPTask
    }

    /// Registers a new user and device (`POST /session`) and keeps the session's token.
    @discardableResult
    public func register(
        email: String, firstname: String, lastname: String = "", deviceName: String = "phone",
        model: String = "", os: String = ""
    ) async throws -> Session {
        var w = JSONWriter()
        w.beginObject()
        for (key, value) in [("email", email), ("firstname", firstname), ("lastname", lastname)] {
            w.key(key)
            w.string(value)
        }
        w.key("device")
        w.beginObject()
        for (key, value) in [("name", deviceName), ("model", model), ("os", os)] {
            w.key(key)
            w.string(value)
        }
        w.endObject()
        w.endObject()
        let result = try await session.send(.post, "/session", body: w.bytes)
        let login = try first(Session.self, of: result)
        session.credentials.token = login.token
        return login
    }

    /// Confirms the registration (`PUT /session`).
    @discardableResult
    public func confirm() async throws -> Session {
        try first(Session.self, of: try await session.send(.put, "/session"))
    }

    /// The session's user (`GET /user/me`), optionally only some fields.
    public func me(fields: [String]? = nil) async throws -> User {
        try first(User.self, of: try await session.send(.get, "/user/me" + Self.query(fields: fields)))
    }

    /// A page of the session user's devices.
    public func myDevices(offset: Int = 0, count: Int = 20) async throws -> Page<Device> {
        try await page("/user/me/devices?offset=\(offset)&count=\(count)")
    }

    /// A page of all devices, optionally only some fields; pages may be fetched in any order.
    public func devices(offset: Int = 0, count: Int = 20, fields: [String]? = nil) async throws -> Page<Device> {
        let extra = fields.map { "&fields=" + $0.joined(separator: ",") } ?? ""
        return try await page("/devices?offset=\(offset)&count=\(count)" + extra)
    }

    /// A user by id, optionally only some fields.
    public func user(_ id: EntityID<User>, fields: [String]? = nil) async throws -> User {
        try first(User.self, of: try await session.send(.get, "/users/\(id)" + Self.query(fields: fields)))
    }

    /// A user with at least `fields`: asks the server for exactly what the store lacks, or
    /// nothing when the store has it all.
    public func user(_ id: EntityID<User>, completing fields: [String]) async throws -> User {
        if let record = store.record(id), record.missingFields(for: fields).isEmpty, let user = store.entity(id) {
            return user
        }
        let missing = store.record(id)?.missingFields(for: fields) ?? fields
        return try await user(id, fields: missing)
    }

    /// Devices of the whole listing known so far, by position (nil where no page was fetched).
    public var knownDevices: [Device?] {
        let items = store.collection(displayIdentifier: "/devices")?.items ?? []
        return items.map { $0.flatMap { store.entity(EntityID<Device>($0)) } }
    }

    /// Ends the session and wipes its store.
    public func logout() async { await session.logout() }

    // MARK: Helpers

    private func page<Item: Entity>(_ path: String) async throws -> Page<Item> {
        let task = session.launch(.get, path)
        let result = try await task.value
        let items = result.items.compactMap { store.entity(EntityID<Item>($0)) }
        let offset = Int(path.components(separatedBy: "offset=").last?.prefix { $0.isNumber } ?? "") ?? 0
        return Page(items: items, offset: offset, total: result.endpointCollection?.total ?? items.count, task: task)
    }

    private func first<E: Entity>(_ type: E.Type, of result: HTTPResult) throws -> E {
        guard let id = result.items.first, let entity = store.entity(EntityID<E>(id)) else {
            throw HTTPError(.decoding, "the response holds no \(E.self)", taskID: result.taskID, status: result.status)
        }
        return entity
    }

    private static func query(fields: [String]?) -> String {
        fields.map { "?fields=" + $0.joined(separator: ",") } ?? ""
    }
}
