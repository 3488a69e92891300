import Flatland
import FlatlandHTTP
import FlatlandJSON
import FlatlandSQLite
import Foundation
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
    /// The delta token after the pull: the `updatedAt` of its key, as the server wrote it (nil
    /// for a pull without a query id).
    public var token: String?
    /// The id of the key's row: with ``token``, the last row pulled (nil for a pull without a
    /// query id, and for a pull by the official clients' query strings, whose token is a date).
    public var tokenID: String?

    /// A result.
    public init(
        table: String, pages: Int, rows: Int, deleted: Int, skipped: Int, token: String?, tokenID: String? = nil
    ) {
        self.table = table
        self.pages = pages
        self.rows = rows
        self.deleted = deleted
        self.skipped = skipped
        self.token = token
        self.tokenID = tokenID
    }
}

extension OfflineTable {
    /// Brings the server's rows in, one page per request, each page streamed into the store and
    /// committed in one transaction together with the pull's key. Equivalent to
    /// ``pull(queryID:query:options:)`` with `PullOptions(pageSize: pageSize)`.
    public func pull(queryID: String? = nil, query: TableQuery = TableQuery(), pageSize: Int = 50)
        async throws(SyncError) -> PullResult
    {
        try await pull(queryID: queryID, query: query, options: PullOptions(pageSize: pageSize))
    }

    /// Brings the server's rows in, one page per request, each page streamed into the store and
    /// committed in one transaction together with the pull's key.
    ///
    /// By default (``PullOptions/Paging/key``) the pull pages by the key `(updatedAt, id)`:
    /// each request asks for the rows after the last one pulled, ordered by `updatedAt, id`, and
    /// the pull ends when a request brings no row. A next link the server sends (a `Link:
    /// <…>; rel=next` header, or v3's `nextLink` as a URL, a path or a query string) is
    /// followed, its rows applied, and the pull then asks again from its key. With a `queryID`
    /// the key is kept in the file, committed with each page: the next pull, or this one
    /// resumed after a crash, a kill or an error, starts at the `updatedAt` of the last row
    /// committed and reads that tick again from its first row (a server with a coarse clock may
    /// give a row written since the same `updatedAt` and an id before the key's); the rows it
    /// holds as they are count as none in ``PullResult/rows``. A delta token kept by an older
    /// version (a date) is read the same way. Without a `queryID` the whole query is read.
    ///
    /// A page holding one id twice keeps the copy with the later `updatedAt`. Rows marked
    /// deleted are removed locally; rows with operations not pushed yet are left as they are
    /// (local changes win until pushed). When the table has operations queued, the queue is
    /// pushed first, and the pull is cancelled (``SyncErrorCode/pushFailed``) if that does not
    /// empty the table's.
    ///
    /// - Throws: ``SyncErrorCode/noProgress`` when a request brings no row after the key, a
    ///   link brings no new row, or a link repeats a URL the pull asked for (never a loop);
    ///   ``SyncErrorCode/invalidResponse`` for a 200 whose body is not a page;
    ///   ``SyncErrorCode/deadline`` for a page that took longer than
    ///   ``PullOptions/requestDeadline``; ``SyncErrorCode/http`` for a failed request. The pages
    ///   committed before stay, with their key.
    public func pull(queryID: String? = nil, query: TableQuery = TableQuery(), options: PullOptions)
        async throws(SyncError) -> PullResult
    {
        let pageSize = options.pageSize
        guard pageSize > 0 else { throw SyncError(.invalidRow, "the page size is \(pageSize)", table: name) }
        guard options.requestDeadline > 0, options.requestDeadline <= 86_400 else {
            throw SyncError(
                .invalidRow, "the request deadline is \(options.requestDeadline) s, not between 0 and a day",
                table: name)
        }
        guard query.orderBy.isEmpty, query.top == nil, query.skip == nil, query.select.isEmpty else {
            throw SyncError(
                .invalidRow,
                "a pull orders and pages by itself: its query may not have $orderby, $top, $skip or $select",
                table: name)
        }
        if !(try context.operations(table: name)).isEmpty {
            let pushed = await context.push()
            if !(try context.operations(table: name)).isEmpty {
                throw SyncError(
                    .pushFailed, "the push before the pull left operations in the queue", table: name, push: pushed)
            }
        }
        let table = name
        var key: PullKey?
        if let queryID {
            let text = try context.read { db in try SyncQueue.token(db, table: table, queryID: queryID) }
            if let text {
                do {
                    key = try PullKey(token: text)
                } catch {
                    throw SyncError(.store, "the stored delta token '\(text)' is not a key", table: table)
                }
            }
        }
        let telemetry = context.telemetry  // its clock starts here
        var pull = PullRun(
            table: self, queryID: queryID, query: query, options: options, key: key,
            result: PullResult(
                table: name, pages: 0, rows: 0, deleted: 0, skipped: 0, token: key?.updatedAt.description,
                tokenID: options.paging == .key ? key?.id : nil))
        let result = try await pull.run()
        telemetry.pulled(result)
        return result
    }

    /// The path of a pull's page by key: the query's filter and the rows after `key`, ordered
    /// by `updatedAt, id`, `pageSize` of them, deleted ones included; dates at full precision:
    /// `(updatedAt ge T) and ((updatedAt gt T) or (id gt 'I'))`, or `updatedAt ge T` for a key
    /// without an id.
    func keyPath(_ query: TableQuery, key: PullKey?, pageSize: Int) throws(SyncError) -> String {
        guard let updatedName = engine.wireName(.updatedAt) else {
            throw SyncError(.invalidRow, "the protocol has no updatedAt", table: name)
        }
        var request = query
        request.includeDeleted = true
        if let key {
            let stamp = TableFilter.Operand.literal(.date(key.updatedAt))
            let after: TableFilter
            if let id = key.id {
                // `(updatedAt gt T) or (updatedAt eq T and id gt 'I')`, written with its range
                // first so that a server's index on (updatedAt, id) starts at the key rather
                // than scanning every row before it on each page.
                after = .and(
                    .comparison(.field(updatedName), .ge, stamp),
                    .or(
                        .comparison(.field(updatedName), .gt, stamp),
                        .comparison(.field("id"), .gt, .literal(.string(id)))))
            } else {
                after = .comparison(.field(updatedName), .ge, stamp)
            }
            request.filter = query.filter.map { .and($0, after) } ?? after
        }
        request.orderBy = [.ascending(updatedName), .ascending("id")]
        request.skip = nil
        request.top = pageSize
        if engine.version == .v1, request.systemProperties == nil {
            request.systemProperties = (context.options.systemProperties ?? []).union([.updatedAt, .deleted])
        }
        var style = engine.options.style ?? .default(for: engine.version)
        style.fullPrecisionDates = true
        do {
            return try request.path(table: name, protocol: engine.version, style: style)
        } catch {
            throw SyncError(.invalidRow, error.message, table: name)
        }
    }

    /// The path of a pull's page as the official clients write it: the query with
    /// `(updatedAt ge token)` (`gt` in v3) and ordered by `updatedAt` when there is a token;
    /// `$skip` and `$top` in v1 and v2, `$count=true` in v3 (whose server pages with next links).
    func officialPath(_ query: TableQuery, token: TableTimestamp?, skip: Int, pageSize: Int)
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

    /// Whether the device holds a server row as the server sent it: the same version, or no
    /// row for a deleted one.
    static func holds(_ local: JSONObject?, version: JSONValue?, deleted: Bool, versionName: String?) -> Bool {
        if deleted { return local == nil }
        guard let local, let versionName, let version, case .string = version else { return false }
        return local[versionName] == version
    }

    /// What one page's rows did, counted as they were read.
    struct PageTally: Sendable {
        /// The rows read (``unchanged`` included).
        var rows = 0
        /// The rows read again that the device holds as they are (``PageRequest/reread``):
        /// neither written nor counted in the pull's rows.
        var unchanged = 0
        var skipped = 0
        /// The store ids of the rows marked deleted (removed by the commit where they exist).
        var deletedIDs: [String] = []
        /// The server ids of the rows the page writes or removes.
        var written: Set<String> = []
        var newest: TableTimestamp?
        /// The earliest `updatedAt` of the page's rows.
        var oldest: TableTimestamp?
        /// The rows of the page's last tick (every row, for a request from inside a tick,
        /// ``PageRequest/keepsEveryRow``), as the page had them: the next request, which reads
        /// them again, counts them as no change even before this page's commit lands.
        var tail: [(id: String, row: HeldRow)] = []
        var tailStamp: TableTimestamp?
        /// The page's last row, in the server's order: its `updatedAt` (nil when it has none)
        /// and its id.
        var last: (updatedAt: TableTimestamp?, id: String)?
        /// The `updatedAt` of each id of the page, for a page that holds one id twice.
        var stamps: [String: TableTimestamp] = [:]
        /// Each row's `updatedAt` and id, when the request collects them
        /// (``PageRequest/collectsRows``).
        var pairs: [String] = []
    }

    /// A row as a page had it: its version, and whether it was marked deleted.
    struct HeldRow: Sendable, Equatable {
        var version: JSONValue?
        var deleted: Bool
    }

    /// Where a page is read from: its path, the position of its first row in the query, and
    /// whether the pull wrote it (from its key) or the server did (a next link).
    struct PageRequest: Sendable {
        var path: String
        var start: Int
        var isLink = false
        /// Whether the page's rows are listed, to check that it brings one the pull had not read.
        var collectsRows = false
        /// The `updatedAt`s the pull reads again (a tick it reads once more, and the rows after
        /// it that it applied already): a row of them that the device holds as it is counts as
        /// no change.
        var reread: ClosedRange<TableTimestamp>?
        /// The rows the page before brought that this one reads again (``PageTally/tail``).
        var readBefore: [String: HeldRow] = [:]
        /// Whether the page's every row goes into its ``PageTally/tail`` (a request from inside
        /// a tick: its answer may show the tick complete, and the tick is then read again).
        var keepsEveryRow = false
    }

    /// A page read to its end and not yet committed.
    struct FetchedPage: Sendable {
        var tally: PageTally
        var batch: IngestBatch
        var nextLink: String?
    }

    /// A page being read, in a task of its own, so that it can download while the page before
    /// it commits; cut at its deadline.
    struct PageFetch: Sendable {
        private let task: Task<FetchedPage, any Error>

        init(_ table: OfflineTable, _ request: PageRequest, pending: Set<String>, deadline: TimeInterval) {
            task = Task {
                // Not a task group: a group waits for its reading child to end after the
                // deadline, and a transport that does not end on a cancel would hold the pull.
                let outcome = await RequestDeadline.run(deadline) { () -> Result<FetchedPage, SyncError> in
                    do throws(SyncError) {
                        return .success(try await table.fetchPage(request, pending: pending))
                    } catch {
                        return .failure(error)
                    }
                }
                switch outcome {
                case .finished(let result):
                    return try result.get()
                case .passed:
                    let message = "the page \(request.path) took longer than its deadline of \(deadline) s"
                    throw SyncError(
                        .deadline, message, table: table.name,
                        tableError: TableError(
                            code: .http, message: message, table: table.name,
                            httpError: HTTPError(.transport, message)))
                }
            }
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
    /// operations not pushed yet) are left out and counted, the deleted ones listed for removal,
    /// and of two copies of one id the one with the later `updatedAt` kept.
    func fetchPage(_ request: PageRequest, pending: Set<String>) async throws(SyncError) -> FetchedPage {
        let table = name
        let engine = engine
        guard let updatedName = engine.wireName(.updatedAt), let deletedName = engine.wireName(.deleted) else {
            throw SyncError(.invalidRow, "the protocol has no updatedAt", table: table)
        }
        let tally = Mutex(PageTally())
        let prefix = engine.prefix
        let versionName = engine.wireName(.version)
        let reread = request.reread
        let condition: @Sendable (IncomingEntity) -> Bool = { entity in
            // The two system fields read alone, typed or untyped: building every row's fields
            // as values (a typed row's written out as JSON and parsed again) cost the pull more
            // than the rest of this check.
            let updated = entity.field(updatedName)
            let deleted = entity.field(deletedName)
            let id = TableRowID.serverID(fromStoreID: entity.id, prefix: prefix)
            var stamp: TableTimestamp?
            if case .string(let text)? = updated { stamp = try? TableTimestamp(parsing: text) }
            let held = HeldRow(version: versionName.flatMap { entity.field($0) }, deleted: deleted == .bool(true))
            // A row read again that the device has as it is, or that the page before brought so.
            let unchanged =
                stamp.map { reread?.contains($0) ?? false } ?? false
                && (request.readBefore[id] == held
                    || OfflineTable.holds(
                        engine.row(entity.id), version: held.version, deleted: held.deleted, versionName: versionName))
            return tally.withLock { t in
                t.rows += 1
                t.last = (stamp, id)
                if request.collectsRows { t.pairs.append((stamp?.description ?? "") + "\t" + id) }
                if let stamp, t.newest.map({ stamp > $0 }) ?? true { t.newest = stamp }
                if let stamp, t.oldest.map({ stamp < $0 }) ?? true { t.oldest = stamp }
                if let stamp {
                    if !request.keepsEveryRow, t.tailStamp != stamp {
                        t.tail.removeAll(keepingCapacity: true)
                        t.tailStamp = stamp
                    }
                    t.tail.append((id, held))
                    // One id twice in a page: the later copy wins, whichever comes first.
                    if let earlier = t.stamps[id], earlier > stamp { return false }
                    t.stamps[id] = stamp
                }
                if unchanged {
                    t.unchanged += 1
                    return false
                }
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
        guard batch.page != nil else {
            throw SyncError(
                .invalidResponse,
                "the server answered \(request.path) with \(answer.status) and a body that is not a page of rows",
                table: table)
        }
        return FetchedPage(tally: tally.withLock { $0 }, batch: batch, nextLink: answer.nextLink)
    }

    /// Commits a page read by ``fetchPage(_:pending:)``, its removals and (with a query id)
    /// the token `token` when given, in one transaction; returns how many rows it removed, and
    /// the ids of the table's rows with operations not pushed, as that transaction read them.
    /// - Throws: ``SyncErrorCode/pageRace`` when a row of the page got a local change meanwhile
    ///   (nothing is then written).
    func commit(_ page: FetchedPage, token: String?, queryID: String?) throws(SyncError) -> (
        removed: Int, pending: Set<String>
    ) {
        let table = name
        let tally = page.tally
        let pending = Mutex<Set<String>>([])
        // The work's outcome, kept aside: a race is told by it, not by the store's error.
        let raced = Mutex(false)
        let work = SQLiteTransactionWork { db in
            let now = try SyncQueue.pendingIDs(db, table: table)
            if !now.isDisjoint(with: tally.written) {
                raced.withLock { $0 = true }
                throw LocalChangeDuringPage()
            }
            pending.withLock { $0 = now }
            if let queryID, let token {
                try SyncQueue.setToken(db, table: table, queryID: queryID, token: token)
            }
        }
        do {
            let result = try store.commit(page.batch, removing: tally.deletedIDs, alongside: work)
            return (result.changes.removed.count, pending.withLock { $0 })
        } catch {
            if raced.withLock({ $0 }) {
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
