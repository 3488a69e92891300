import Flatland
import FlatlandJSON

/// An ``OfflineTable`` of typed rows: the same queue, push and pull, with rows as `T`.
///
/// ```swift
/// let todos = try sync.table("todoitem", of: TodoItem.self)
/// var item = TodoItem(id: todos.newID())
/// item.text = "Buy milk"
/// try todos.insert(item)                 // local, queued
/// ```
public struct TypedOfflineTable<T: TableEntity>: Sendable {
    /// The same table with JSON rows.
    public let untyped: OfflineTable

    init(untyped: OfflineTable) { self.untyped = untyped }

    var store: Store { untyped.store }

    /// A new row id made on the client: `<prefix>-<32 hex characters>`.
    public func newID() -> EntityID<T> { EntityID(untyped.engine.storeID(TableRowID.generate())) }

    /// The local row.
    public func lookup(_ id: EntityID<T>) -> T? { store.entity(id) }

    /// Every local row, by id.
    public func items() -> [T] { store.all(T.self) }

    /// Inserts the row locally and queues its insert.
    @discardableResult
    public func insert(_ item: T) throws(SyncError) -> T {
        try untyped.insert(row(item))
        return store.entity(item.id) ?? item
    }

    /// Replaces the local row's fields with the item's and queues an update; an item whose
    /// version is not the stored one is refused (``SyncErrorCode/staleVersion``).
    @discardableResult
    public func update(_ item: T) throws(SyncError) -> T {
        try untyped.update(row(item))
        return store.entity(item.id) ?? item
    }

    /// Deletes the local row and queues its delete, checking the item's version.
    public func delete(_ item: T) throws(SyncError) {
        try untyped.delete(item.serverID, version: item.system.version)
    }

    /// See ``OfflineTable/pull(queryID:query:pageSize:)``.
    public func pull(queryID: String? = nil, query: TableQuery = TableQuery(), pageSize: Int = 50)
        async throws(SyncError) -> PullResult
    {
        try await untyped.pull(queryID: queryID, query: query, pageSize: pageSize)
    }

    /// See ``OfflineTable/purge(queryID:force:)``.
    public func purge(queryID: String? = nil, force: Bool = false) throws(SyncError) {
        try untyped.purge(queryID: queryID, force: force)
    }

    /// See ``OfflineTable/reconcile(by:ids:)``.
    public func reconcile(by method: ReconcileMethod = .listing, ids: [String]? = nil)
        async throws(SyncError) -> ReconcileResult
    {
        try await untyped.reconcile(by: method, ids: ids)
    }

    /// The item as a JSON row: its server id, its declared fields, and its version under the
    /// protocol's name when it has one.
    func row(_ item: T) throws(SyncError) -> JSONObject {
        let keys = T.fields.map(\.key).filter { !TableEngine.systemNames.contains($0) }
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("id")
        writer.string(item.serverID)
        item.writeFields(to: &writer, only: keys)
        if let version = item.system.version, let name = untyped.engine.wireName(.version) {
            writer.key(name)
            writer.string(version)
        }
        writer.endObject()
        guard case .object(let object)? = try? JSONValue(parsing: writer.bytes) else {
            throw SyncError(.invalidRow, "\(T.self) did not write a JSON object", table: untyped.name)
        }
        return object
    }
}

extension SyncContext {
    /// A typed offline table of `T` rows (stored under `T.prefix`).
    ///
    /// - Throws: ``SyncErrorCode/invalidRow`` when `T` is not registered with the session's store.
    public func table<T: TableEntity>(_ name: String, of type: T.Type, collapses: Bool = true) throws(SyncError)
        -> TypedOfflineTable<T>
    {
        guard session.store.registry.contains(prefix: T.prefix) else {
            throw SyncError(.invalidRow, "\(T.self) is not registered with the session's store", table: name)
        }
        return TypedOfflineTable(untyped: table(name, prefix: T.prefix, collapses: collapses))
    }
}
