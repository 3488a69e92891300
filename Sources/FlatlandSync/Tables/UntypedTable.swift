import Flatland
import FlatlandHTTP
import FlatlandJSON

/// A server table whose rows are JSON objects, over `/tables/{name}`, bound to a FlatlandHTTP `Session`.
///
/// The rows are untyped entities of the session's store, stored as `<prefix>-<server id>`
/// (``TableRowID``); a row is handed out as a `JSONObject`: its `id` (the server's) first, then
/// its members as the server sent them, system properties under the protocol's names. Members
/// named as a system property are never sent in a body; a row's version (`version`, or
/// `__version` in v1) goes to `If-Match`.
///
/// ```swift
/// let todos = UntypedTable("todoitem", session: session)
/// let row = try await todos.insert(["text": "Buy milk", "complete": false]).item
/// let all = try await todos.query(TableQuery(filter: .field("complete") == false))
/// ```
public struct UntypedTable: Sendable {
    let engine: TableEngine

    /// The table's name on the server.
    public var name: String { engine.name }
    /// The prefix of its rows' store ids.
    public var prefix: String { engine.prefix }
    /// The session the table talks through.
    public var session: Session { engine.session }
    /// How the table talks to its server.
    public var options: TableOptions { engine.options }

    /// A table named `name`; its rows are stored under `prefix` (by default made from the name:
    /// ``TableRowID/prefix(forTable:)``).
    public init(_ name: String, session: Session, prefix: String? = nil, options: TableOptions = TableOptions()) {
        engine = TableEngine(
            session: session, name: name, prefix: prefix ?? TableRowID.prefix(forTable: name), options: options)
    }

    /// The store id of the row with this server id.
    public func storeID(_ serverID: String) -> String { engine.storeID(serverID) }

    // MARK: Rows

    /// Inserts a row (`POST`). A row without `id` gets a new one (``TableRowID/generate()``)
    /// unless the server assigns ids (``TableOptions/serverAssignsIDs``).
    ///
    /// - Throws: ``TableErrorCode/conflict`` (409) when the id exists, with the server's row.
    public func insert(_ row: JSONObject) async throws(TableError<JSONObject>) -> TableResponse<JSONObject> {
        var id = TableEngine.idText(row["id"])
        if id == nil, !options.serverAssignsIDs { id = TableRowID.generate() }
        return try await write(.post, row, id: id, pathID: nil, version: nil)
    }

    /// Reads one row (`GET`), with `If-None-Match` when the store holds it with a version.
    ///
    /// - Throws: ``TableErrorCode/notFound`` (404), ``TableErrorCode/gone`` (410).
    public func lookup(_ id: String) async throws(TableError<JSONObject>) -> TableResponse<JSONObject> {
        let (storeID, result) = try await engine.lookup(id)
        return try response(storeID, result)
    }

    /// Updates a row (`PATCH` with the members given in v1 and v2, `PUT` in v3). The row must
    /// hold its `id`; its version, when it holds one, goes to `If-Match`.
    ///
    /// - Throws: ``TableErrorCode/preconditionFailed`` (412) with the server's row,
    ///   ``TableErrorCode/conflict`` (409), ``TableErrorCode/notFound`` (404).
    public func update(_ row: JSONObject) async throws(TableError<JSONObject>) -> TableResponse<JSONObject> {
        guard let id = TableEngine.idText(row["id"]) else {
            throw engine.failure(.invalidRequest, "the row to update has no id")
        }
        let method: HTTPMethod = engine.version == .v3 ? .put : .patch
        return try await write(method, row, id: id, pathID: id, version: version(of: row))
    }

    /// Deletes the row with this id (`DELETE`, with `If-Match` when `version` is given), then
    /// removes it from the store.
    public func delete(_ id: String, version: String? = nil) async throws(TableError<JSONObject>) {
        _ = try await engine.delete(id, version: version)
    }

    /// Restores a soft-deleted row (`POST /tables/{name}/{id}` with `If-Match`; v2 only).
    public func undelete(_ id: String, version: String? = nil) async throws(TableError<JSONObject>)
        -> TableResponse<JSONObject>
    {
        guard engine.version == .v2 else {
            throw engine.failure(.invalidRequest, "undelete is a v2 operation, not \(engine.version)'s")
        }
        let (storeID, result) = try await engine.write(.post, serverID: id, pathID: id, body: nil, version: version)
        return try response(storeID, result)
    }

    /// The version a row holds under the protocol's name (or the other protocols').
    public func version(of row: JSONObject) -> String? {
        for name in [engine.wireName(.version), "version", "__version"].compactMap({ $0 }) {
            if case .string(let v)? = row[name] { return v }
        }
        return nil
    }

    // MARK: Queries

    /// The pages of `query`, each read when asked for and streamed into the store (see
    /// ``TablePages``).
    public func pages(_ query: TableQuery = TableQuery()) -> TablePages<JSONObject> {
        TablePages(engine: engine, query: query)
    }

    /// A page's rows, from the store.
    public func rows(in page: TablePage) -> [JSONObject] { page.ids.compactMap(engine.row) }

    /// Every row of every page of `query`. For large answers, read ``pages(_:)`` instead.
    public func query(_ query: TableQuery = TableQuery()) async throws(TableError<JSONObject>) -> [JSONObject] {
        var rows: [JSONObject] = []
        var iterator = pages(query).makeAsyncIterator()
        while let page = try await iterator.next() { rows += self.rows(in: page) }
        return rows
    }

    /// The stored row with this server id, if the store has it.
    public func stored(_ id: String) -> JSONObject? { engine.row(engine.storeID(id)) }

    /// The endpoint collection of `query`: the store ids of its rows at their positions, over
    /// every page read so far (paging and count parameters do not make another collection).
    public func collection(_ query: TableQuery = TableQuery()) -> EntityCollection? { engine.collection(query) }

    // MARK: Helpers

    private func write(_ method: HTTPMethod, _ row: JSONObject, id: String?, pathID: String?, version: String?)
        async throws(TableError<JSONObject>) -> TableResponse<JSONObject>
    {
        let members = row.members.filter { $0.key != "id" && !TableEngine.systemNames.contains($0.key) }
        let body = try engine.body(id: id, keys: members.map(\.key)) { writer in
            for (key, value) in members {
                writer.key(key)
                writer.value(value)
            }
        }
        let (storeID, result) = try await engine.write(
            method, serverID: id, pathID: pathID, body: body, version: version)
        return try response(storeID, result)
    }

    private func response(_ storeID: String, _ result: HTTPResult) throws(TableError<JSONObject>)
        -> TableResponse<JSONObject>
    {
        guard let row = engine.row(storeID) else {
            throw engine.failure(.invalidResponse, "the server's answer did not give the row \(storeID)")
        }
        return TableResponse(item: row, status: result.status, taskID: result.taskID)
    }
}
