import Flatland
import FlatlandHTTP
import FlatlandJSON
import FlatlandSQLite
import GRDB
import Synchronization

/// What a pull did.
public struct PullResult: Sendable, Hashable {
    /// The table.
    public var table: String
    /// The pages read.
    public var pages: Int
    /// The rows the server sent.
    public var rows: Int
    /// The local rows removed because the server marked them deleted.
    public var deleted: Int
    /// The rows left as they are locally because they have operations not pushed yet.
    public var skipped: Int
    /// The delta token after the pull: the largest `updatedAt` seen, as the server wrote it
    /// (nil for a pull without a query id).
    public var token: String?
}

extension OfflineTable {
    /// Brings the server's rows in, one page per request, each page streamed into the store and
    /// committed in one transaction together with the new delta token.
    ///
    /// With a `queryID` the pull is incremental: it asks for `(filter) and (updatedAt ge token)`
    /// (`gt` in v3) ordered by `updatedAt`, `pageSize` rows at a time, re-paged as the v2
    /// clients do (when a page raises the token the filter moves to it and `$skip` starts again
    /// at 0, otherwise `$skip` advances), and a crash or a dropped connection resumes from the
    /// last whole page. Without one it reads the whole query. In v3 the pull sends `$count=true`
    /// and no `$skip`/`$top`, as the Datasync clients do, and follows the server's next links:
    /// `pageSize` applies to v1 and v2. Rows marked deleted are removed
    /// locally; rows with operations not pushed yet are left as they are (local changes win
    /// until pushed). When the table has operations queued, the queue is pushed first, and the
    /// pull is cancelled (``SyncErrorCode/pushFailed``) if that does not empty the table's.
    public func pull(queryID: String? = nil, query: TableQuery = TableQuery(), pageSize: Int = 50)
        async throws(SyncError) -> PullResult
    {
        guard pageSize > 0 else { throw SyncError(.invalidRow, "the page size is \(pageSize)", table: name) }
        if !(try context.operations(table: name)).isEmpty {
            let pushed = await context.push()
            if !(try context.operations(table: name)).isEmpty {
                throw SyncError(
                    .pushFailed, "the push before the pull left operations in the queue", table: name, push: pushed)
            }
        }
        let table = name
        var token: TableTimestamp?
        if let queryID {
            let text = try context.read { db in try SyncQueue.token(db, table: table, queryID: queryID) }
            token =
                try text.map { text throws(SyncError) in
                    do {
                        return try TableTimestamp(parsing: text)
                    } catch {
                        throw SyncError(.store, "the stored delta token '\(text)' is not a date", table: table)
                    }
                } ?? .epoch
        }
        var result = PullResult(table: name, pages: 0, rows: 0, deleted: 0, skipped: 0, token: token?.description)
        let followsLinks = engine.version == .v3
        var skip = 0
        var path = try pullPath(query, token: token, skip: skip, pageSize: pageSize)
        while true {
            var page = PageTally()
            // A local change to a row of the page, made while the page was on its way, makes its
            // commit step back (checked inside the commit, where no local write can come between):
            // the page is read again with that row skipped.
            for attempt in 1...5 {
                do {
                    page = try await pullPage(path, start: skip, token: token, queryID: queryID)
                    break
                } catch  where attempt < 5 && error.code == .pageRace {
                    continue
                }
            }
            result.pages += 1
            result.rows += page.rows
            result.deleted += page.deleted
            result.skipped += page.skipped
            context.report(.pull(table: name, pages: result.pages, rows: result.rows))
            let raised = page.newest.map { newest in token.map { newest > $0 } ?? false } ?? false
            if raised, let newest = page.newest {
                token = newest
                result.token = newest.description
            }
            if followsLinks {
                // Datasync: the server's next link, until it sends none.
                guard let link = page.nextLink else { break }
                do {
                    path = try engine.relativePath(ofLink: link)
                } catch {
                    throw SyncError(.http, error.message, table: name, tableError: error)
                }
                skip += page.rows
            } else {
                // The v2 clients' re-paging: a raised token moves the filter and restarts $skip.
                if page.rows < pageSize { break }
                skip = raised ? 0 : skip + page.rows
                path = try pullPath(query, token: token, skip: skip, pageSize: pageSize)
            }
        }
        return result
    }

    /// The path of a pull's page: the query with `(updatedAt ge token)` (`gt` in v3) and ordered
    /// by `updatedAt` when there is a token; `$skip` and `$top` in v1 and v2, `$count=true` in v3
    /// (whose server pages with next links), as the official clients write them.
    private func pullPath(_ query: TableQuery, token: TableTimestamp?, skip: Int, pageSize: Int)
        throws(SyncError) -> String
    {
        guard let updatedName = engine.wireName(.updatedAt) else {
            throw SyncError(.invalidRow, "the protocol has no updatedAt", table: name)
        }
        var request = query
        request.includeDeleted = true
        if let token {
            let since = TableFilter.comparison(
                .field(updatedName), engine.version == .v3 ? .gt : .ge, .literal(.date(token)))
            request.filter = query.filter.map { .and($0, since) } ?? since
            request.orderBy = [.ascending(updatedName)]
        }
        if engine.version == .v3 {
            request.includeTotalCount = true
        } else {
            request.skip = skip
            request.top = pageSize
        }
        if engine.version == .v1, request.systemProperties == nil {
            request.systemProperties = (context.options.systemProperties ?? []).union([.updatedAt, .deleted])
        }
        do {
            return try engine.queryPath(request)
        } catch {
            throw SyncError(.invalidRow, error.message, table: name)
        }
    }

    /// What one page did.
    struct PageTally: Sendable {
        var rows = 0
        var deleted = 0
        var skipped = 0
        var deletedIDs: [String] = []
        var written: Set<String> = []
        var newest: TableTimestamp?
        var nextLink: String?
    }

    /// A page that met a local change made while it was read: it is read again.
    struct LocalChangeDuringPage: Error {}

    private func pullPage(_ path: String, start: Int, token: TableTimestamp?, queryID: String?)
        async throws(SyncError) -> PageTally
    {
        let table = name
        let engine = engine
        guard let updatedName = engine.wireName(.updatedAt), let deletedName = engine.wireName(.deleted) else {
            throw SyncError(.invalidRow, "the protocol has no updatedAt", table: table)
        }
        let pending = try context.read { db in try SyncQueue.pendingIDs(db, table: table) }
        let tally = Mutex(PageTally())
        let prefix = engine.prefix
        let store = store
        let condition: @Sendable (IncomingEntity) -> Bool = { entity in
            let fields = entity.untypedFields ?? entity.fields
            let id = TableRowID.serverID(fromStoreID: entity.id, prefix: prefix)
            var stamp: TableTimestamp?
            if case .string(let text)? = fields[updatedName] { stamp = try? TableTimestamp(parsing: text) }
            return tally.withLock { t in
                t.rows += 1
                if let stamp, t.newest.map({ stamp > $0 }) ?? true { t.newest = stamp }
                if pending.contains(id) {
                    t.skipped += 1
                    return false
                }
                if fields[deletedName] == .bool(true) {
                    if store.contains(entity.id) {
                        t.deleted += 1
                        t.deletedIDs.append(entity.id)
                        t.written.insert(id)
                    }
                    return false
                }
                t.written.insert(id)
                return true
            }
        }
        let commitPlan: @Sendable (IngestBatch) throws -> ResponseCommit = { _ in
            let page = tally.withLock { $0 }
            let newToken = queryID != nil && page.newest.map { new in token.map { new > $0 } ?? true } == true
            let text = page.newest?.description
            let work = SQLiteTransactionWork { db in
                if !page.written.isEmpty, !(try SyncQueue.pendingIDs(db, table: table)).isDisjoint(with: page.written) {
                    throw LocalChangeDuringPage()
                }
                if newToken, let queryID, let text {
                    try SyncQueue.setToken(db, table: table, queryID: queryID, token: text)
                }
            }
            return ResponseCommit(removing: page.deletedIDs, alongside: work)
        }
        do {
            let answer = try await engine.send(
                .get, path, start: start, condition: condition, commitPlan: commitPlan, endpointCollection: false)
            tally.withLock { $0.nextLink = answer.nextLink }
        } catch {
            if let http = error.httpError, SyncContext.chain(of: http).contains(where: { $0 is LocalChangeDuringPage })
            {
                throw SyncError(.pageRace, "a row of the page changed locally while it was read", table: table)
            }
            throw SyncError(.http, error.message, table: table, tableError: error)
        }
        return tally.withLock { $0 }
    }

    /// Drops the table's local rows, its queued operations and its delta tokens, in one
    /// transaction; with a `queryID`, resets that query's token only.
    ///
    /// - Throws: ``SyncErrorCode/pendingOperations`` when the table has operations not pushed
    ///   yet and `force` is false.
    public func purge(queryID: String? = nil, force: Bool = false) throws(SyncError) {
        let table = name
        if let queryID {
            try context.transaction { db in try SyncQueue.purge(db, table: table, queryID: queryID) }
            return
        }
        let pending = try context.operations(table: table)
        guard pending.isEmpty || force else {
            throw SyncError(
                .pendingOperations, "\(pending.count) operations are not pushed yet (purge with force to drop them)",
                table: table)
        }
        var change = StoreChange()
        for id in store.ids(prefix: prefix) { change.remove(id) }
        try context.commit(change) { db in try SyncQueue.purge(db, table: table, queryID: nil) }
    }
}
