import Flatland
import FlatlandHTTP
import FlatlandJSON

/// One page of a query's answer, already in the session's store.
public struct TablePage: Sendable {
    /// The page's place in the query: 0, 1, 2…
    public var index: Int
    /// The store ids of the page's rows, in the server's order.
    public var ids: [String]
    /// The rows received before this page.
    public var offset: Int
    /// The total the server counted, when the query asked for it
    /// (``TableQuery/includeTotalCount``).
    public var totalCount: Int?
    /// The path and query this page was read from.
    public var path: String
    /// The uuid of the page's HTTP task.
    public var taskID: String
}

/// The pages of a query, read one at a time as they are asked for: each page is one request,
/// streamed into the store before it is handed out.
///
/// After a page, the next one is read from the server's next link when it sent one (a `Link:
/// <…>; rel=next` header in v2, `nextLink` in v3), which must be on the session's server.
/// Otherwise, while a page is not empty and not shorter than the longest page so far, the query
/// goes on with `$skip` (and what is left of its `$top`): the paging of servers that send no
/// links. A server that answers a `$skip` with the page it sent before ends the query with an
/// ``TableErrorCode/invalidResponse`` error rather than looping.
public struct TablePages<Item: Sendable>: AsyncSequence {
    public typealias Element = TablePage
    public typealias Failure = TableError<Item>

    let engine: TableEngine
    let query: TableQuery

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(engine: engine, query: query) }

    /// Reads the pages.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let engine: TableEngine
        let query: TableQuery
        private var next: String??
        private var received = 0
        private var index = 0
        private var longestPage = 0
        private var followsLinks = false
        private var lastIDs: [String] = []

        init(engine: TableEngine, query: TableQuery) {
            self.engine = engine
            self.query = query
        }

        public mutating func next() async throws(TableError<Item>) -> TablePage? {
            do {
                return try await nextPage()
            } catch {
                throw error.mapItem { _ in nil }
            }
        }

        private mutating func nextPage() async throws(TableError<JSONObject>) -> TablePage? {
            let path: String
            switch next {
            case .none: path = try engine.queryPath(query)
            case .some(.none): return nil
            case .some(.some(let p)): path = p
            }
            let result = try await engine.send(.get, path, start: path.contains("$skip=") ? nil : received)
            let ids = result.items
            if !ids.isEmpty, ids == lastIDs {
                next = .some(nil)
                throw engine.failure(.invalidResponse, "the server sent the page of \(path) twice")
            }
            let page = TablePage(
                index: index, ids: ids, offset: received, totalCount: result.ingest?.page?.total, path: path,
                taskID: result.taskID)
            received += ids.count
            index += 1
            lastIDs = ids
            if let link = result.nextLink {
                followsLinks = true
                next = .some(try engine.relativePath(ofLink: link, requestPath: path))
            } else if !followsLinks, !ids.isEmpty, ids.count >= longestPage, query.top.map({ received < $0 }) ?? true {
                var rest = query
                rest.skip = (query.skip ?? 0) + received
                rest.top = query.top.map { $0 - received }
                next = .some(try engine.queryPath(rest))
            } else {
                next = .some(nil)
            }
            longestPage = Swift.max(longestPage, ids.count)
            return page
        }
    }
}
