import Flatland
import FlatlandHTTP
import FlatlandJSON

/// The answer to a single-row operation: the row, as the store now holds it.
public struct TableResponse<Item: Sendable>: Sendable {
    /// The row.
    public var item: Item
    /// The HTTP status: 200, 201, or 304 when a lookup found the stored row current.
    public var status: Int
    /// The uuid of the operation's HTTP task.
    public var taskID: String

    /// Whether the server answered `304 Not Modified` (the stored row was current).
    public var notModified: Bool { status == 304 }
}

/// A server table of typed rows, over `/tables/{name}`, bound to a FlatlandHTTP `Session`.
///
/// Every request goes through the session (its filters, credentials, retries, task tracking and
/// cancellation), and every row the server sends is streamed into the session's store. A row is
/// stored as `<prefix>-<server id>` (``TableRowID``); its system properties sit in
/// ``TableEntity/system``, and are never sent in a body: the version goes to `If-Match`.
///
/// ```swift
/// let todos = try Table<TodoItem>("todoitem", session: session)
/// var item = TodoItem(id: todos.newID())
/// item.text = "Buy milk"
/// item = try await todos.insert(item).item         // POST, 201, the server's system properties
/// item.complete = true
/// item = try await todos.update(item).item         // PATCH with If-Match: "<version>"
/// for try await page in todos.pages(TableQuery(filter: .field("complete") == false)) {
///     print(todos.items(in: page).map(\.text))
/// }
/// ```
public struct Table<T: TableEntity>: Sendable {
    let engine: TableEngine

    /// The table's name on the server.
    public var name: String { engine.name }
    /// The session the table talks through.
    public var session: Session { engine.session }
    /// How the table talks to its server.
    public var options: TableOptions { engine.options }

    /// A table of `T` rows named `name` on the session's server.
    ///
    /// - Throws: ``TableErrorCode/invalidRequest`` when `T` is not registered with the session's
    ///   store (its rows would be stored untyped).
    public init(_ name: String, of type: T.Type = T.self, session: Session, options: TableOptions = TableOptions())
        throws(TableError<T>)
    {
        guard session.store.registry.contains(prefix: T.prefix) else {
            throw TableError(
                code: .invalidRequest, message: "\(T.self) is not registered with the session's store", table: name)
        }
        engine = TableEngine(session: session, name: name, prefix: T.prefix, options: options)
    }

    /// A new row id made on the client: `<prefix>-<32 hex characters>`; the server sees the
    /// hexadecimal part.
    public func newID() -> EntityID<T> { EntityID(engine.storeID(TableRowID.generate())) }

    // MARK: Rows

    /// Inserts a row (`POST`): 201 and the row as the server stored it. A table whose server
    /// assigns ids (``TableOptions/serverAssignsIDs``) sends no id, and the answer carries the
    /// server's.
    ///
    /// - Throws: ``TableErrorCode/conflict`` (409) when the id exists, with the server's row.
    public func insert(_ item: T) async throws(TableError<T>) -> TableResponse<T> {
        try await write(.post, item, pathID: nil, version: nil, sendsID: !options.serverAssignsIDs)
    }

    /// Reads one row (`GET`). When the store holds it with a version, the request carries
    /// `If-None-Match` and a `304` keeps the stored row (``TableResponse/notModified``).
    ///
    /// - Throws: ``TableErrorCode/notFound`` (404), ``TableErrorCode/gone`` (410).
    public func lookup(_ id: EntityID<T>) async throws(TableError<T>) -> TableResponse<T> {
        do {
            let (storeID, result) = try await engine.lookup(engine.serverID(id.rawValue))
            return try response(storeID, result)
        } catch {
            throw converted(error)
        }
    }

    /// Updates a row with its declared fields (`PATCH` in v1 and v2, `PUT` in v3), with
    /// `If-Match` when it carries a version.
    ///
    /// - Throws: ``TableErrorCode/preconditionFailed`` (412) when the row changed on the server,
    ///   with the server's row in ``TableError/serverItem``; ``TableErrorCode/conflict`` (409).
    public func update(_ item: T) async throws(TableError<T>) -> TableResponse<T> {
        let method: HTTPMethod = engine.version == .v3 ? .put : .patch
        return try await write(method, item, pathID: item.serverID, version: item.system.version, sendsID: true)
    }

    /// Deletes a row (`DELETE`), with `If-Match` when it carries a version, then removes it
    /// from the store. A soft-deleting server keeps it with `deleted` set.
    public func delete(_ item: T) async throws(TableError<T>) {
        try await delete(item.id, version: item.system.version)
    }

    /// Deletes the row with this id, with `If-Match` when `version` is given.
    public func delete(_ id: EntityID<T>, version: String?) async throws(TableError<T>) {
        do {
            _ = try await engine.delete(engine.serverID(id.rawValue), version: version)
        } catch {
            throw converted(error)
        }
    }

    /// Restores a soft-deleted row (`POST /tables/{name}/{id}` with `If-Match`; v2 only).
    public func undelete(_ item: T) async throws(TableError<T>) -> TableResponse<T> {
        guard engine.version == .v2 else {
            throw TableError(
                code: .invalidRequest, message: "undelete is a v2 operation, not \(engine.version)'s",
                table: name)
        }
        do {
            let (storeID, result) = try await engine.write(
                .post, serverID: item.serverID, pathID: item.serverID, body: nil, version: item.system.version)
            return try response(storeID, result)
        } catch {
            throw converted(error)
        }
    }

    // MARK: Queries

    /// The pages of `query`, each read when asked for and streamed into the store (see
    /// ``TablePages``). The rows also land in the query's endpoint collection.
    public func pages(_ query: TableQuery = TableQuery()) -> TablePages<T> { TablePages(engine: engine, query: query) }

    /// A page's rows, from the store.
    public func items(in page: TablePage) -> [T] {
        page.ids.compactMap { session.store.entity(EntityID<T>($0)) }
    }

    /// Every row of every page of `query`. For large answers, read ``pages(_:)`` instead.
    public func query(_ query: TableQuery = TableQuery()) async throws(TableError<T>) -> [T] {
        var items: [T] = []
        var iterator = pages(query).makeAsyncIterator()
        while let page = try await iterator.next() { items += self.items(in: page) }
        return items
    }

    /// Writes a row the server sent in an error (``TableError/serverItem``) into the store,
    /// which table operations never do on their own.
    public func adopt(_ item: T) throws {
        try session.store.upsert(item)
    }

    /// The endpoint collection of `query`: the store ids of its rows at their positions, over
    /// every page read so far (paging and count parameters do not make another collection).
    public func collection(_ query: TableQuery = TableQuery()) -> EntityCollection? { engine.collection(query) }

    // MARK: Helpers

    private func write(_ method: HTTPMethod, _ item: T, pathID: String?, version: String?, sendsID: Bool)
        async throws(TableError<T>) -> TableResponse<T>
    {
        do {
            let keys = T.fields.map(\.key).filter { !TableEngine.systemNames.contains($0) }
            let body = try engine.body(id: sendsID ? item.serverID : nil, keys: keys) { writer in
                item.writeFields(to: &writer, only: keys)
            }
            let (storeID, result) = try await engine.write(
                method, serverID: sendsID ? item.serverID : nil, pathID: pathID, body: body, version: version)
            return try response(storeID, result)
        } catch {
            throw converted(error)
        }
    }

    private func response(_ storeID: String, _ result: HTTPResult) throws(TableError<JSONObject>) -> TableResponse<T> {
        guard let item = session.store.entity(EntityID<T>(storeID)) else {
            throw engine.failure(.invalidResponse, "the server's answer did not give a \(T.self) \(storeID)")
        }
        return TableResponse(item: item, status: result.status, taskID: result.taskID)
    }

    private func converted(_ error: TableError<JSONObject>) -> TableError<T> {
        error.mapItem { engine.decode($0, as: T.self) }
    }
}
