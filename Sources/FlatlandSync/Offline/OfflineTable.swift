import Flatland
import FlatlandHTTP
import FlatlandJSON
import GRDB

/// A table that works with no network: its rows live in the session's store, every local
/// insert, update and delete is applied at once and queued, in the same transaction, and
/// ``SyncContext/push(onConflict:options:)`` and ``pull(queryID:query:pageSize:)`` meet the server later.
///
/// Rows are JSON objects, as an ``UntypedTable`` hands them out: `id` first, then the members,
/// system properties under the protocol's names.
///
/// The queue collapses changes to one row in place, as the iOS client does, so the row keeps
/// its place in the queue (and foreign keys their order): insert + update → one insert (the
/// latest row is sent), insert + delete → nothing, update + update → one update, update +
/// delete → a delete where the update stood. An insert after an insert or an update, and
/// anything after a delete, is an ``SyncErrorCode/invalidOperation`` error. A change to a row
/// whose operation is being pushed is queued behind it, never merged into it.
public struct OfflineTable: Sendable {
    let context: SyncContext
    /// The table's name on the server.
    public let name: String
    let engine: TableEngine

    init(context: SyncContext, name: String, engine: TableEngine) {
        self.context = context
        self.name = name
        self.engine = engine
    }

    /// The prefix of the table's store ids.
    public var prefix: String { engine.prefix }
    var store: Store { context.session.store }

    // MARK: Reading

    /// The local row with this id: its server id, or the local id it had before its insert was
    /// pushed (in a table whose server assigns ids).
    public func lookup(_ id: String) -> JSONObject? { engine.row(engine.storeID(resolve(id))) }

    /// Whether the table's server assigns row ids (remembered in the file).
    public func serverAssignsIDs() throws(SyncError) -> Bool { try context.serverAssignsIDs(table: name) }

    /// The server id a local id became, or the id itself.
    public func resolve(_ id: String) -> String {
        guard LocalID.isLocal(id), !store.contains(engine.storeID(id)) else { return id }
        let table = name
        let found = try? context.read { db -> String? in try LocalID.serverID(db, table: table, localID: id) }
        return (found ?? nil) ?? id
    }

    /// Every local row, by id.
    public func rows() -> [JSONObject] { store.ids(prefix: prefix).compactMap(engine.row) }

    /// The row's data members: no `id`, no system property.
    static func data(_ row: JSONObject) -> JSONObject {
        JSONObject(row.members.filter { $0.key != "id" && !TableEngine.systemNames.contains($0.key) })
    }

    // MARK: Local writes

    /// Inserts a row locally and queues its insert. A row without `id` gets a new one
    /// (``TableRowID/generate()``).
    ///
    /// - Returns: the row as stored.
    /// - Throws: ``SyncErrorCode/invalidOperation`` when the row exists or its id has an
    ///   operation that an insert cannot follow.
    @discardableResult
    public func insert(_ row: JSONObject) throws(SyncError) -> JSONObject {
        var id = TableEngine.idText(row["id"]) ?? ""
        if id.isEmpty { id = try serverAssignsIDs() ? LocalID.make() : TableRowID.generate() }
        let storeID = engine.storeID(id)
        guard !store.contains(storeID) else {
            throw SyncError(.invalidOperation, "a row with id \(id) exists", table: name)
        }
        try checkNames(row)
        var change = StoreChange()
        change.upsert(id: storeID, fields: OfflineTable.data(row))
        try enqueue(change, id: id, kind: .insert, version: nil, item: nil)
        return engine.row(storeID) ?? ["id": .string(id)]
    }

    /// Merges the row's members into the local row (as a `PATCH` would) and queues an update.
    /// A row that carries a version must carry the one stored: otherwise it was edited from a
    /// stale copy.
    ///
    /// - Throws: ``SyncErrorCode/notFound``, ``SyncErrorCode/staleVersion``,
    ///   ``SyncErrorCode/invalidOperation``.
    @discardableResult
    public func update(_ row: JSONObject) throws(SyncError) -> JSONObject {
        guard let given = TableEngine.idText(row["id"]) else {
            throw SyncError(.invalidRow, "the row to update has no id", table: name)
        }
        let id = resolve(given)
        let storeID = engine.storeID(id)
        guard store.contains(storeID) else { throw SyncError(.notFound, "no local row \(id)", table: name) }
        let stored = engine.storedVersion(storeID)
        try checkVersion(given: version(of: row), stored: stored, id: id)
        try checkNames(row)
        var change = StoreChange()
        change.upsert(id: storeID, fields: OfflineTable.data(row))
        try enqueue(change, id: id, kind: .update, version: stored, item: nil)
        return engine.row(storeID) ?? ["id": .string(id)]
    }

    /// Deletes the local row and queues its delete, with the version given or the stored one.
    ///
    /// - Throws: ``SyncErrorCode/notFound``, ``SyncErrorCode/staleVersion``,
    ///   ``SyncErrorCode/invalidOperation``.
    public func delete(_ given: String, version: String? = nil) throws(SyncError) {
        let id = resolve(given)
        let storeID = engine.storeID(id)
        guard let row = engine.row(storeID) else { throw SyncError(.notFound, "no local row \(id)", table: name) }
        let stored = engine.storedVersion(storeID)
        try checkVersion(given: version, stored: stored, id: id)
        var change = StoreChange()
        change.remove(storeID)
        try enqueue(change, id: id, kind: .delete, version: stored, item: row)
    }

    /// The version a row carries under the protocol's name.
    func version(of row: JSONObject) -> String? {
        guard let name = engine.wireName(.version), case .string(let v)? = row[name] else { return nil }
        return v
    }

    private func checkVersion(given: String?, stored: String?, id: String) throws(SyncError) {
        guard let given, given != stored else { return }
        throw SyncError(
            .staleVersion,
            "row \(id) was edited at version \(given), but the local row is at version \(stored ?? "none")",
            table: name)
    }

    private func checkNames(_ row: JSONObject) throws(SyncError) {
        guard engine.version == .v1 else { return }
        if let reserved = OfflineTable.data(row).keys.first(where: { $0.hasPrefix("__") }) {
            throw SyncError(.invalidRow, "'\(reserved)': names starting with __ are the server's in v1", table: name)
        }
    }

    /// Commits the local change and its queue entry together, collapsing it into the row's
    /// queued operation where the rules allow.
    private func enqueue(
        _ change: StoreChange, id: String, kind: SyncOperation.Kind, version: String?, item: JSONObject?
    ) throws(SyncError) {
        let table = name
        let collapses = context.settings(name).collapses
        try context.commit(change) { db in
            try OfflineTable.queue(
                db, table: table, id: id, kind: kind, version: version, item: item, collapses: collapses)
        }
    }

    /// The queue's rules for a new change to a row (inside the local write's transaction).
    static func queue(
        _ db: Database, table: String, id: String, kind: SyncOperation.Kind, version: String?, item: JSONObject?,
        collapses: Bool
    ) throws {
        guard let last = try SyncQueue.operations(db, table: table, itemID: id).last else {
            try SyncQueue.append(db, table: table, itemID: id, kind: kind, version: version, item: item)
            return
        }
        if last.kind == .delete {
            throw SyncError(
                .invalidOperation, "row \(id) has a delete queued (operation \(last.sequence)): nothing can follow it",
                table: table)
        }
        if kind == .insert {
            throw SyncError(
                .invalidOperation, "row \(id) has an \(last.kind.rawValue) queued (operation \(last.sequence))",
                table: table)
        }
        // Only into an operation not yet sent (or refused, never possibly applied): one being sent,
        // or whose answer is unknown, gets the change queued behind it.
        guard collapses, OperationLifecycle.acceptsCollapse(last) else {
            try SyncQueue.append(db, table: table, itemID: id, kind: kind, version: version, item: item)
            return
        }
        switch (last.kind, kind) {
        case (.insert, .delete):
            // Never sent, or refused: the server has no such row. Nothing to send.
            try SyncQueue.remove(db, sequence: last.sequence)
        case (_, .delete):
            try SyncQueue.collapse(db, sequence: last.sequence, kind: .delete, version: last.version, item: item)
        default:
            // An update into an insert or an update: the latest row is read when it is pushed.
            try SyncQueue.collapse(db, sequence: last.sequence, kind: last.kind, version: last.version, item: nil)
        }
    }
}
