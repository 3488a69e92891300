import Flatland
import FlatlandHTTP
import FlatlandJSON
import Synchronization

/// How ``OfflineTable/reconcile(by:ids:)`` asks the server which rows it still has.
public enum ReconcileMethod: String, Sendable, Hashable, CaseIterable {
    /// One listing of the table's ids (`$select=id`, page by page).
    case listing
    /// One `GET` per local row.
    case get
}

/// What a reconcile did.
public struct ReconcileResult: Sendable, Hashable {
    /// The table.
    public var table: String
    /// The local rows checked (those without queued operations).
    public var checked: Int
    /// The local rows removed because the server no longer has them.
    public var removed: Int

    /// A result.
    public init(table: String, checked: Int, removed: Int) {
        self.table = table
        self.checked = checked
        self.removed = removed
    }
}

extension OfflineTable {
    /// Removes the local rows the server no longer has: rows hard-deleted on the server, which
    /// an incremental pull never sees. Rows with queued operations are left alone (they are not
    /// checked).
    ///
    /// - Parameters:
    ///   - method: one listing of the table's ids, or one `GET` per row (a row answered 404 or
    ///     410 is gone).
    ///   - ids: the server ids to check; every local row when nil.
    public func reconcile(by method: ReconcileMethod = .listing, ids: [String]? = nil)
        async throws(SyncError) -> ReconcileResult
    {
        let table = name
        let pending = try context.read { db in try SyncQueue.pendingIDs(db, table: table) }
        let local = (ids ?? store.ids(prefix: prefix).map(engine.serverID)).filter {
            !pending.contains($0) && store.contains(engine.storeID($0))
        }
        var missing: [String] = []
        switch method {
        case .listing:
            let present = try await serverIDs()
            missing = local.filter { !present.contains($0) }
        case .get:
            for id in local where try await !exists(id) { missing.append(id) }
        }
        // Rows that got an operation while the server was asked stay.
        let stillPending = try context.read { db in try SyncQueue.pendingIDs(db, table: table) }
        var change = StoreChange()
        let removed = missing.filter { !stillPending.contains($0) }
        for id in removed { change.remove(engine.storeID(id)) }
        if !change.isEmpty { try context.commit(change) { _ in } }
        return ReconcileResult(table: name, checked: local.count, removed: removed.count)
    }

    /// Every id the server lists for the table, read without touching the store: the server's
    /// next links, or `$skip` while pages come full.
    private func serverIDs() async throws(SyncError) -> Set<String> {
        let seen = Mutex<Set<String>>([])
        let prefix = prefix
        let collect: @Sendable (IncomingEntity) -> Bool = { entity in
            let id = TableRowID.serverID(fromStoreID: entity.id, prefix: prefix)
            seen.withLock { _ = $0.insert(id) }
            return false
        }
        let pageSize = 1000
        var query = TableQuery(skip: 0, top: pageSize, select: ["id"])
        var path: String? = try queryPath(query)
        var received = 0
        var previous = -1
        while let current = path {
            let before = seen.withLock { $0.count }
            let result: HTTPResult
            do {
                result = try await engine.send(.get, current, start: 0, condition: collect)
            } catch {
                throw SyncError(.http, error.message, table: name, tableError: error)
            }
            let count = seen.withLock { $0.count } - before
            received += count
            if let link = result.nextLink {
                do {
                    path = try engine.relativePath(ofLink: link, requestPath: current)
                } catch {
                    throw SyncError(.http, error.message, table: name, tableError: error)
                }
            } else if count > 0, count >= previous, received > (query.skip ?? 0) {
                query.skip = received
                path = try queryPath(query)
            } else {
                path = nil
            }
            previous = count
        }
        return seen.withLock { $0 }
    }

    private func queryPath(_ query: TableQuery) throws(SyncError) -> String {
        do {
            return try engine.queryPath(query)
        } catch {
            throw SyncError(.invalidRow, error.message, table: name)
        }
    }

    /// Whether the server has the row: a 404 or 410 says it has not.
    private func exists(_ id: String) async throws(SyncError) -> Bool {
        do {
            _ = try await engine.send(.get, try engine.rowPath(id), condition: { _ in false })
            return true
        } catch  where error.code == .notFound || error.code == .gone {
            return false
        } catch {
            throw SyncError(.http, error.message, table: name, tableError: error)
        }
    }
}

extension SyncContext {
    /// Whether the file remembers that `table`'s server assigns its row ids.
    public func serverAssignsIDs(table: String) throws(SyncError) -> Bool {
        try read { db in try SyncQueue.serverAssignsIDs(db, table: table) }
    }
}
