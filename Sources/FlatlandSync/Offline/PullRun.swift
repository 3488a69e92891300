import Flatland
import FlatlandHTTP
import FlatlandJSON

/// One pull, from its first request to the request that brings no row: which page to read next,
/// what each page's commit keeps, and the checks that make a server's paging end or fail,
/// never loop.
///
/// By key (``PullOptions/Paging/key``): a request the pull writes asks for the rows from the
/// key: after `(T, I)`, or from the first row of `T` when the key has no id; its rows are
/// contiguous from the key, and the next key (``nextKey(after:stamp:id:full:)``) is committed
/// with the page. A page read from the server's next link is applied but moves no key (a link that
/// pages with `$skip` skips a row when a row before it changes meanwhile); when the links end,
/// the pull asks again from its key. The pull ends when a request from the key brings no row.
struct PullRun {
    let table: OfflineTable
    let queryID: String?
    let query: TableQuery
    let options: PullOptions
    /// Where the next request from the key starts: nil before the first row.
    var key: PullKey?
    var result: PullResult

    /// The rows per request, lowered to a server's cap once its links show it.
    private var pageSize = 0
    /// Every path asked for: a link to one of them is a loop.
    private var asked: Set<String> = []
    /// The `updatedAt`s the pull reads again: the tick it starts from, a tick it reads once more
    /// from its first row, and the rows after that tick it applied already. Those rows that the
    /// device holds as they are count as none.
    private var reread: ClosedRange<TableTimestamp>?
    /// The tick read again once the pull saw it closed (``nextKey(after:stamp:id:full:)``).
    private var rechecked: TableTimestamp?
    /// The last row pulled, as ``PullResult/token`` and ``PullResult/tokenID`` report it.
    private var lastPulled: PullKey?
    /// The rows of the last page from the key that the next request reads again.
    private var readBefore: [String: OfflineTable.HeldRow] = [:]
    /// Official-client paging: the token (largest `updatedAt` seen).
    private var token: TableTimestamp?
    /// The rows (`updatedAt` and id) of the pages that must bring a new one: every page of
    /// official-client paging, every linked page.
    private var seen: Set<String> = []

    init(
        table: OfflineTable, queryID: String?, query: TableQuery, options: PullOptions, key: PullKey?,
        result: PullResult
    ) {
        self.table = table
        self.queryID = queryID
        self.query = query
        self.options = options
        self.key = key
        self.result = result
        pageSize = options.pageSize
        if queryID != nil, key == nil { self.result.token = TableTimestamp.epoch.description }
        if options.paging == .officialClients, queryID != nil { token = key?.updatedAt ?? .epoch }
        if options.paging == .key, let key {
            // A pull starts at its key's tick, from the tick's first row, even when the key has
            // an id (a pull stopped before its end, by a kill or an error): on a coarse clock a
            // row written meanwhile, by another client, may get that tick's `updatedAt` with an
            // id before the key's. Behind the key, it would never be read, for the pull goes on
            // into later ticks and the next pull starts from the last.
            reread = key.updatedAt...key.updatedAt
            self.key = PullKey(updatedAt: key.updatedAt, id: nil)
        }
    }

    private var name: String { table.name }

    /// The first request.
    private mutating func first() throws(SyncError) -> OfflineTable.PageRequest {
        switch options.paging {
        case .key:
            return OfflineTable.PageRequest(
                path: try table.keyPath(query, key: key, pageSize: pageSize), start: 0, reread: reread,
                keepsEveryRow: key?.id != nil)
        case .officialClients:
            return OfflineTable.PageRequest(
                path: try table.officialPath(query, token: token, skip: 0, pageSize: pageSize), start: 0,
                collectsRows: true)
        }
    }

    mutating func run() async throws(SyncError) -> PullResult {
        var request = try first()
        asked.insert(request.path)
        let deadline = options.requestDeadline
        let context = table.context
        let tableName = name
        // One page ahead: the next page downloads (and the server reads it) while this one
        // commits. It is committed only after this page is, so pages and keys still reach the
        // file in order; a failed commit drops it. The rows with operations not pushed: read
        // here, then again by each page's commit (in its transaction), for the pages read after
        // it. A page read with an older set is still checked by its own commit: an operation
        // queued meanwhile for one of its rows makes the page be read again.
        var pending = try context.read { db in try SyncQueue.pendingIDs(db, table: tableName) }
        var next: OfflineTable.PageFetch? = OfflineTable.PageFetch(
            table, request, pending: pending, deadline: deadline)
        defer { next?.cancel() }
        var attempts = 0
        while let fetch = next {
            next = nil
            // A cancel stops the pull between pages: what is committed is whole pages, each with
            // its key.
            if Task.isCancelled { throw SyncError(.cancelled, "the pull was cancelled", table: name) }
            let page: OfflineTable.FetchedPage
            do {
                page = try await fetch.page()
            } catch  where Task.isCancelled {
                throw SyncError(.cancelled, "the pull was cancelled while a page was read", table: name)
            }
            // A page that brings no row the pull had not read goes nowhere, except the first one
            // after the official paging moved its token (its `$skip` starts again at 0, and reads
            // the rows of the new token once more).
            if request.collectsRows, page.tally.rows > 0, request.isLink || request.start > 0 {
                if !page.tally.pairs.contains(where: { !seen.contains($0) }) {
                    throw SyncError(
                        .noProgress, "the server answered \(request.path) with no row the pull had not read already",
                        table: name)
                }
            }
            let (following, commitToken, newKey) = try step(after: page, of: request)
            if let following, !asked.insert(following.path).inserted {
                throw SyncError(
                    .noProgress, "the server's next link \(following.path) repeats a page the pull asked for",
                    table: name)
            }
            next = following.map { OfflineTable.PageFetch(table, $0, pending: pending, deadline: deadline) }
            let removed: Int
            do {
                // Off the concurrency pool: the commit blocks on SQLite (and on store hooks).
                let committed = await runBlocking { [table, queryID] in
                    Result { () throws(SyncError) -> (Int, Set<String>) in
                        try table.commit(page, token: commitToken, queryID: queryID)
                    }
                }
                (removed, pending) = try committed.get()
            } catch  where attempts < 4 && error.code == .pageRace {
                // A local change to a row of the page, made while the page was on its way: the
                // page is read again, with that row skipped, and what was read after it dropped.
                attempts += 1
                next?.cancel()
                if let following { asked.remove(following.path) }
                pending = try context.read { db in try SyncQueue.pendingIDs(db, table: tableName) }
                next = OfflineTable.PageFetch(table, request, pending: pending, deadline: deadline)
                continue
            }
            attempts = 0
            seen.formUnion(page.tally.pairs)
            result.pages += 1
            result.rows += page.tally.rows - page.tally.unchanged
            result.deleted += removed
            result.skipped += page.tally.skipped
            context.report(.pull(table: name, pages: result.pages, rows: result.rows))
            switch options.paging {
            case .key:
                if let newKey {
                    key = newKey
                    if queryID != nil, let lastPulled {
                        result.token = lastPulled.updatedAt.description
                        result.tokenID = lastPulled.id
                    }
                }
            case .officialClients:
                if let raised = officialRaised(page), queryID != nil {
                    token = raised
                    result.token = raised.description
                }
            }
            guard let following else { break }
            request = following
        }
        return result
    }

    /// The request after `page` (nil when the pull is done), the token its commit keeps (nil:
    /// none), and the key it leaves.
    private mutating func step(
        after page: OfflineTable.FetchedPage, of request: OfflineTable.PageRequest
    ) throws(SyncError) -> (OfflineTable.PageRequest?, String?, PullKey?) {
        let tally = page.tally
        var linked: OfflineTable.PageRequest?
        if let link = page.nextLink {
            do {
                linked = OfflineTable.PageRequest(
                    path: try table.engine.relativePath(ofLink: link, requestPath: request.path),
                    start: request.start + tally.rows, isLink: true, collectsRows: true, reread: reread)
            } catch {
                throw SyncError(.http, error.message, table: name, tableError: error)
            }
        }
        switch options.paging {
        case .key:
            return try keyStep(tally, request: request, linked: linked)
        case .officialClients:
            return try officialStep(tally, request: request, linked: linked)
        }
    }

    private mutating func keyStep(
        _ tally: OfflineTable.PageTally, request: OfflineTable.PageRequest, linked: OfflineTable.PageRequest?
    ) throws(SyncError) -> (OfflineTable.PageRequest?, String?, PullKey?) {
        if request.isLink {
            // A linked page moves no key: when the links end, the pull asks again from its key.
            if let linked { return (linked, nil, nil) }
            return (try fromKey(key), nil, nil)
        }
        guard let last = tally.last else {
            // No row after the key: the end (a link on an empty page is still followed). The
            // token kept is the key's `updatedAt` without its id: the next pull reads that tick
            // again, for a server whose clock is coarse gives a row written later in the same
            // tick the same `updatedAt` (and, with an id before the key's, it would be behind
            // it). A pull stopped before its end keeps its whole key; resumed, it reads the
            // key's tick again too (`init`).
            let ended =
                linked == nil && queryID != nil ? key.map { PullKey(updatedAt: $0.updatedAt, id: nil).token } : nil
            return (linked, ended, nil)
        }
        guard let stamp = last.updatedAt else {
            throw SyncError(
                .invalidResponse, "the row \(last.id) of \(request.path) has no \(updatedName) the pull can read",
                table: name)
        }
        if let key {
            // The server's own order decides which id comes after which; only a key that did
            // not move, or moved back in time, or a row before the key's tick, says the server
            // did not answer the filter.
            guard stamp > key.updatedAt || (stamp == key.updatedAt && last.id != key.id),
                tally.oldest.map({ $0 >= key.updatedAt }) ?? true
            else {
                throw SyncError(
                    .noProgress,
                    "the server answered \(request.path) with no row after the pull's key (\(key.updatedAt), \(key.id ?? "none"))",
                    table: name)
            }
        }
        lastPulled = PullKey(updatedAt: stamp, id: last.id)
        let newKey = nextKey(after: tally, stamp: stamp, id: last.id, full: linked != nil || tally.rows >= pageSize)
        if let linked {
            // A server that caps its pages below $top: later requests ask for its cap.
            if tally.rows < pageSize { pageSize = tally.rows }
            return (linked, queryID == nil ? nil : newKey.token, newKey)
        }
        return (try fromKey(newKey), queryID == nil ? nil : newKey.token, newKey)
    }

    /// Where the request after a page from the key starts, the page's last row being
    /// `(stamp, id)`; the key committed with the page.
    ///
    /// A tick is complete only in an answer that also holds a row of a later tick: a server
    /// gives a new row the clock's time, never earlier than a row it holds, so once a later
    /// tick has a row no row joins the earlier one. Until then another client's write may land
    /// in the tick with an id before the key's, behind it. So:
    /// - a full page whose last tick began in it: the next request reads that tick again from
    ///   its first row, with the rows after it (`updatedAt ge T`): on a fine clock, one row
    ///   again;
    /// - a page all of one tick (more rows in the tick than a page), or a short one (most often
    ///   the last): the next request goes on from the key, `(T, id)`; when an answer from inside
    ///   the tick shows a later one, the tick is read once more from its first row, now that it
    ///   is complete. After a short page that answer is most often empty: the end, whose token
    ///   reads the tick again at the next pull.
    private mutating func nextKey(
        after tally: OfflineTable.PageTally, stamp: TableTimestamp, id: String, full: Bool
    ) -> PullKey {
        readBefore = Dictionary(tally.tail, uniquingKeysWith: { _, later in later })
        if let key, key.id != nil, stamp > key.updatedAt, rechecked != key.updatedAt {
            rechecked = key.updatedAt
            reread = key.updatedAt...max(stamp, reread?.upperBound ?? stamp)
            // The tick's requests are asked once more: not a loop, a tick is read again once.
            asked.removeAll()
            return PullKey(updatedAt: key.updatedAt, id: nil)
        }
        if full, let oldest = tally.oldest, oldest < stamp {
            reread = stamp...max(stamp, reread?.upperBound ?? stamp)
            return PullKey(updatedAt: stamp, id: nil)
        }
        return PullKey(updatedAt: stamp, id: id)
    }

    private var updatedName: String { table.engine.wireName(.updatedAt) ?? "updatedAt" }

    private func fromKey(_ key: PullKey?) throws(SyncError) -> OfflineTable.PageRequest {
        OfflineTable.PageRequest(
            path: try table.keyPath(query, key: key, pageSize: pageSize), start: 0, reread: reread,
            readBefore: readBefore, keepsEveryRow: key?.id != nil)
    }

    /// The token a page raises in official-client paging, if it does.
    private func officialRaised(_ page: OfflineTable.FetchedPage) -> TableTimestamp? {
        guard let newest = page.tally.newest, let token, newest > token else { return nil }
        return newest
    }

    private mutating func officialStep(
        _ tally: OfflineTable.PageTally, request: OfflineTable.PageRequest, linked: OfflineTable.PageRequest?
    ) throws(SyncError) -> (OfflineTable.PageRequest?, String?, PullKey?) {
        var raised: TableTimestamp?
        if let newest = tally.newest, let token, newest > token { raised = newest }
        let commitToken = queryID == nil ? nil : raised?.description
        if let linked { return (linked, commitToken, nil) }
        guard table.engine.version != .v3, tally.rows >= pageSize else { return (nil, commitToken, nil) }
        // The v2 clients' re-paging: a raised token moves the filter and restarts $skip.
        let nextSkip = raised != nil ? 0 : request.start + tally.rows
        let path = try table.officialPath(query, token: raised ?? token, skip: nextSkip, pageSize: pageSize)
        return (OfflineTable.PageRequest(path: path, start: nextSkip, collectsRows: true), commitToken, nil)
    }
}
