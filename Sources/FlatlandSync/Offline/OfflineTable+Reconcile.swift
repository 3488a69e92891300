import Flatland
import FlatlandHTTP
import FlatlandJSON

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
        let pending = try await context.queueRead { db in try SyncQueue.pendingIDs(db, table: table) }
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
        let stillPending = try await context.queueRead { db in try SyncQueue.pendingIDs(db, table: table) }
        var change = StoreChange()
        let removed = missing.filter { !stillPending.contains($0) }
        for id in removed { change.remove(engine.storeID(id)) }
        if !change.isEmpty { try await context.commitQueued(change) { _ in } }
        return ReconcileResult(table: name, checked: local.count, removed: removed.count)
    }

    /// Every id the server lists for the table, read as JSON without touching the store: the
    /// server's next links, or `$skip` while pages come full.
    private func serverIDs() async throws(SyncError) -> Set<String> {
        var seen: Set<String> = []
        let pageSize = 1000
        var query = TableQuery(skip: 0, top: pageSize, select: ["id"])
        var path: String? = try queryPath(query)
        var visited: Set<String> = []
        var received = 0
        var previous = -1
        while let current = path {
            guard visited.insert(current).inserted else {
                throw SyncError(.http, "the server sent the listing \(current) twice", table: name)
            }
            let result: HTTPResult
            do {
                result = try await context.session.send(.get, current, consuming: .json())
            } catch {
                let mapped = engine.mapped(error)
                throw SyncError(.http, mapped.message, table: name, tableError: mapped)
            }
            var items: [JSONValue] = []
            var bodyLink: String?
            switch result.json {
            case .array(let rows)?: items = rows
            case .object(let envelope)?:
                if case .array(let rows)? = envelope["items"] ?? envelope["results"] { items = rows }
                if case .string(let link)? = envelope["nextLink"] { bodyLink = link }
            default:
                throw SyncError(.http, "the server's listing \(current) is not a page of rows", table: name)
            }
            let before = seen.count
            for case .object(let row) in items {
                if let id = TableEngine.idText(row["id"]) { seen.insert(id) }
            }
            let count = seen.count - before
            received += count
            if let link = bodyLink ?? result.nextLink {
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
        return seen
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
        let path: String
        do {
            path = try engine.rowPath(id)
        } catch {
            throw SyncError(.invalidRow, error.message, table: name, tableError: error)
        }
        do {
            _ = try await context.session.send(.get, path, consuming: .bytes())
            return true
        } catch {
            let mapped = engine.mapped(error)
            if mapped.code == .notFound || mapped.code == .gone { return false }
            throw SyncError(.http, mapped.message, table: name, tableError: mapped)
        }
    }
}

extension SyncContext {
    /// Whether the file remembers that `table`'s server assigns its row ids.
    public func serverAssignsIDs(table: String) throws(SyncError) -> Bool {
        try read { db in try SyncQueue.serverAssignsIDs(db, table: table) }
    }
}
