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
        let telemetry = context.telemetry
        var result = PullResult(table: name, pages: 0, rows: 0, deleted: 0, skipped: 0, token: token?.description)
        let followsLinks = engine.version == .v3
        var skip = 0
        var request = PageRequest(path: try pullPath(query, token: token, skip: skip, pageSize: pageSize), start: skip)
        // One page ahead: the next page downloads (and the server reads it) while this one
        // commits. It is read with the token this page will leave, and committed only after this
        // page is, so pages and tokens still reach the file in order; a failed commit drops it.
        // The rows with operations not pushed: read here, then again by each page's commit (in
        // its transaction), for the pages read after it. A page read with an older set is still
        // checked by its own commit: an operation queued meanwhile for one of its rows makes
        // the page be read again. A row whose operation was pushed meanwhile is left as the
        // push's answer wrote it.
        var pending = try context.read { db in try SyncQueue.pendingIDs(db, table: table) }
        var next: PageFetch? = PageFetch(self, request, pending: pending)
        defer { next?.cancel() }
        var attempts = 0
        while let fetch = next {
            next = nil
            // A cancel stops the pull between pages: what is committed is whole pages, each with
            // its token.
            if Task.isCancelled { throw SyncError(.cancelled, "the pull was cancelled", table: name) }
            let page: FetchedPage
            do {
                page = try await fetch.page()
            } catch  where Task.isCancelled {
                throw SyncError(.cancelled, "the pull was cancelled while a page was read", table: name)
            }
            var following: PageRequest?
            var pageToken = token
            let raised = page.tally.newest.map { newest in token.map { newest > $0 } ?? false } ?? false
            if raised, let newest = page.tally.newest { pageToken = newest }
            if let link = page.nextLink {
                // The server's next link, in every protocol (a v2 server that caps its pages
                // below $top sends `Link: <…>; rel=next`), until it sends none.
                do {
                    following = PageRequest(
                        path: try engine.relativePath(ofLink: link, requestPath: request.path),
                        start: skip + page.tally.rows)
                } catch {
                    throw SyncError(.http, error.message, table: name, tableError: error)
                }
            } else if !followsLinks, page.tally.rows >= pageSize {
                // The v2 clients' re-paging: a raised token moves the filter and restarts $skip.
                let nextSkip = raised ? 0 : skip + page.tally.rows
                following = PageRequest(
                    path: try pullPath(query, token: pageToken, skip: nextSkip, pageSize: pageSize), start: nextSkip)
            }
            next = following.map { PageFetch(self, $0, pending: pending) }
            let removed: Int
            do {
                // Off the concurrency pool: the commit blocks on SQLite (and on store hooks).
                let committed = await runBlocking { [self, token] in
                    Result { () throws(SyncError) -> (Int, Set<String>) in
                        try commit(page, token: token, queryID: queryID)
                    }
                }
                (removed, pending) = try committed.get()
            } catch  where attempts < 4 && error.code == .pageRace {
                // A local change to a row of the page, made while the page was on its way: the
                // page is read again, with that row skipped, and what was read after it dropped.
                attempts += 1
                next?.cancel()
                pending = try context.read { db in try SyncQueue.pendingIDs(db, table: table) }
                next = PageFetch(self, request, pending: pending)
                continue
            }
            attempts = 0
            result.pages += 1
            result.rows += page.tally.rows
            result.deleted += removed
            result.skipped += page.tally.skipped
            context.report(.pull(table: name, pages: result.pages, rows: result.rows))
            if raised, let newest = page.tally.newest {
                token = newest
                result.token = newest.description
            }
            guard let following else { break }
            if !followsLinks { skip = following.start }
            request = following
        }
        telemetry.pulled(result)
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

    /// What one page's rows did, counted as they were read.
    struct PageTally: Sendable {
        var rows = 0
        var skipped = 0
        /// The store ids of the rows marked deleted (removed by the commit where they exist).
        var deletedIDs: [String] = []
        /// The server ids of the rows the page writes or removes.
        var written: Set<String> = []
        var newest: TableTimestamp?
    }

    /// Where a page is read from: its path, and the position of its first row in the query.
    struct PageRequest: Sendable {
        var path: String
        var start: Int
    }

    /// A page read to its end and not yet committed.
    struct FetchedPage: Sendable {
        var tally: PageTally
        var batch: IngestBatch
        var nextLink: String?
    }

    /// A page being read, in a task of its own, so that it can download while the page before
    /// it commits.
    struct PageFetch: Sendable {
        private let task: Task<FetchedPage, any Error>

        init(_ table: OfflineTable, _ request: PageRequest, pending: Set<String>) {
            task = Task { try await table.fetchPage(request, pending: pending) }
        }

        /// The page, or the error that ended its reading.
        func page() async throws(SyncError) -> FetchedPage {
            do {
                return try await withTaskCancellationHandler {
                    try await task.value
                } onCancel: {
                    task.cancel()
                }
            } catch let error as SyncError {
                throw error
            } catch {
                throw SyncError(.http, "the page could not be read: \(error)")
            }
        }

        func cancel() { task.cancel() }
    }

    /// A page that met a local change made while it was read: it is read again.
    struct LocalChangeDuringPage: Error {}

    /// Reads one page into a batch that is not committed: the rows of `pending` (those with
    /// operations not pushed yet) are left out and counted, the deleted ones listed for removal.
    private func fetchPage(_ request: PageRequest, pending: Set<String>) async throws(SyncError) -> FetchedPage {
        let table = name
        let engine = engine
        guard let updatedName = engine.wireName(.updatedAt), let deletedName = engine.wireName(.deleted) else {
            throw SyncError(.invalidRow, "the protocol has no updatedAt", table: table)
        }
        let tally = Mutex(PageTally())
        let prefix = engine.prefix
        let condition: @Sendable (IncomingEntity) -> Bool = { entity in
            // The two system fields read alone: building every row's fields as values cost
            // the pull more than the rest of this check.
            let updated: JSONValue?
            let deleted: JSONValue?
            if entity.isUntyped {
                updated = entity.untypedField(updatedName)
                deleted = entity.untypedField(deletedName)
            } else {
                let fields = entity.fields
                (updated, deleted) = (fields[updatedName], fields[deletedName])
            }
            let id = TableRowID.serverID(fromStoreID: entity.id, prefix: prefix)
            var stamp: TableTimestamp?
            if case .string(let text)? = updated { stamp = try? TableTimestamp(parsing: text) }
            return tally.withLock { t in
                t.rows += 1
                if let stamp, t.newest.map({ stamp > $0 }) ?? true { t.newest = stamp }
                if pending.contains(id) {
                    t.skipped += 1
                    return false
                }
                t.written.insert(id)
                if deleted == .bool(true) {
                    t.deletedIDs.append(entity.id)
                    return false
                }
                return true
            }
        }
        let answer: HTTPResult
        do {
            answer = try await engine.send(
                .get, request.path, start: request.start, condition: condition, commitPlan: { _ in .handBack },
                endpointCollection: false)
        } catch {
            throw SyncError(.http, error.message, table: table, tableError: error)
        }
        guard let batch = answer.uncommitted else {
            throw SyncError(.http, "the server answered \(answer.status) without a page", table: table)
        }
        return FetchedPage(tally: tally.withLock { $0 }, batch: batch, nextLink: answer.nextLink)
    }

    /// Commits a page read by ``fetchPage(_:)``, its removals and (with a query id, when the page
    /// raised it) the new delta token, in one transaction; returns how many rows it removed, and
    /// the ids of the table's rows with operations not pushed, as that transaction read them.
    /// - Throws: ``SyncErrorCode/pageRace`` when a row of the page got a local change meanwhile
    ///   (nothing is then written).
    private func commit(_ page: FetchedPage, token: TableTimestamp?, queryID: String?) throws(SyncError) -> (
        removed: Int, pending: Set<String>
    ) {
        let table = name
        let tally = page.tally
        let newToken = queryID != nil && tally.newest.map { new in token.map { new > $0 } ?? true } == true
        let text = tally.newest?.description
        let pending = Mutex<Set<String>>([])
        let work = SQLiteTransactionWork { db in
            let now = try SyncQueue.pendingIDs(db, table: table)
            if !now.isDisjoint(with: tally.written) { throw LocalChangeDuringPage() }
            pending.withLock { $0 = now }
            if newToken, let queryID, let text {
                try SyncQueue.setToken(db, table: table, queryID: queryID, token: text)
            }
        }
        do {
            let result = try store.commit(page.batch, removing: tally.deletedIDs, alongside: work)
            return (result.changes.removed.count, pending.withLock { $0 })
        } catch {
            if SyncContext.chain(of: error).contains(where: { $0 is LocalChangeDuringPage }) {
                throw SyncError(.pageRace, "a row of the page changed locally while it was read", table: table)
            }
            throw SyncError(.store, "the page could not be written: \(error)", table: table)
        }
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
