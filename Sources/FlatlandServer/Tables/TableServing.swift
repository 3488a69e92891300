import NIOConcurrencyHelpers

/// What the server serves at `/tables/{name}`: the tables, where their rows live, which protocol
/// versions it speaks, and its page sizes.
public struct TableServing: Sendable {
    /// The tables (a free-form `todoitem` table with soft delete by default).
    public var tables: [TableDefinition]
    /// The SQLite file the rows live in; nil keeps them in memory.
    public var databasePath: String?
    /// The protocol versions served at once, chosen per request by its `ZUMO-API-VERSION`
    /// (v2 and v3 by default; with v1, a request without one is served as v1).
    public var protocols: Set<TableProtocolVersion>
    /// Rows in a page when a query gives no `$top`.
    public var pageSize: Int
    /// The largest `$top` accepted; more is a 400.
    public var maxTop: Int
    /// The largest request body a table route reads, in bytes (1 MiB by default): a larger one
    /// is a 413 and changes nothing.
    public var maxBodyBytes: Int

    /// How long the server remembers a write's `Idempotency-Key` and its answer, to answer a
    /// replay of the write with it (one day by default): see <doc:ServingTables>.
    public var idempotencyTTL: Duration = TableServing.defaultIdempotencyTTL

    /// The default ``idempotencyTTL``: 86,400 seconds.
    public static let defaultIdempotencyTTL: Duration = .seconds(86_400)

    /// The default ``maxBodyBytes``: 1 MiB.
    public static let defaultMaxBodyBytes = 1 << 20

    /// A configuration; every argument has a default.
    public init(
        tables: [TableDefinition] = [TableDefinition(name: "todoitem")], databasePath: String? = nil,
        protocols: Set<TableProtocolVersion> = [.v2, .v3], pageSize: Int = 50, maxTop: Int = 1000,
        maxBodyBytes: Int = TableServing.defaultMaxBodyBytes
    ) {
        self.tables = tables
        self.databasePath = databasePath
        self.protocols = protocols
        self.pageSize = pageSize
        self.maxTop = maxTop
        self.maxBodyBytes = maxBodyBytes
    }
}

/// A table route's answer, and what an injected fault does to it on the wire.
struct TableAnswer {
    var reply: SampleAPI.Reply
    /// Close the connection instead of answering (the request was served).
    var loseResponse = false
    /// Close the connection after this many bytes of the body.
    var dropAfter: Int?
}

/// The table routes of a running server: set when it starts, once their storage is open.
final class TableHost: Sendable {
    private let current = NIOLockedValueBox<TableAPI?>(nil)
    /// The faults tests inject.
    let faults = TableFaults()

    var api: TableAPI? { current.withLockedValue { $0 } }

    /// Whether `path` is one of the table routes' (`/tables`, `/tables/…`).
    static func isTablePath(_ path: String) -> Bool { path == "/tables" || path.hasPrefix("/tables/") }

    /// The largest body a table route reads.
    var maxBodyBytes: Int { api?.configuration.maxBodyBytes ?? TableServing.defaultMaxBodyBytes }

    /// The answer to a request whose path is a table route's, with the fault injected into it if
    /// any; nil for any other path, or before the tables are open.
    func respond(
        method: String, path: String, query: [String: String], headers: [String: String], body: [UInt8],
        baseURL: String, authenticate: (String) -> SampleAPI.Caller
    ) async -> TableAnswer? {
        guard let api, Self.isTablePath(path) else { return nil }
        let fault = faults.take(method: method, path: path, naming: path.hasPrefix("/tables/$") ? "/tables/$" : nil)
        switch fault {
        case .fail(let status, let retryAfter):
            var reply = TableAPI.error(status, "injected failure")
            if let retryAfter { reply.headers.append(("Retry-After", retryAfter)) }
            return TableAnswer(reply: reply)
        case .delay(let duration):
            try? await Task.sleep(for: duration)
        case .loseResponse, .dropMidBody, nil:
            break
        }
        guard
            let reply = await api.respond(
                method: method, path: path, query: query, headers: headers, body: body, baseURL: baseURL,
                authenticate: authenticate, faults: faults)
        else { return nil }
        var answer = TableAnswer(reply: reply)
        if let index = reply.headers.firstIndex(where: { $0.0 == TableAPI.loseResponseMarker }) {
            // An operation of a batch took a lost response: the batch's answer is lost.
            answer.reply.headers.remove(at: index)
            answer.loseResponse = true
        }
        switch fault {
        case .loseResponse:
            answer.loseResponse = true
        case .dropMidBody(let afterBytes) where reply.body.count > 1:
            let cut = min(max(1, afterBytes ?? reply.body.count / 2), reply.body.count - 1)
            answer.reply.headers.append(("Content-Length", "\(reply.body.count)"))
            answer.dropAfter = cut
        default:
            break
        }
        return answer
    }

    /// Opens the storage, creates the tables, and serves them.
    func open(_ serving: TableServing) async throws {
        guard api == nil else { return }
        let storage = try SQLiteTableStorage(path: serving.databasePath)
        try await storage.prepare(serving.tables)
        let configuration = TableAPI.Configuration(
            tables: serving.tables, protocols: serving.protocols, pageSize: serving.pageSize, maxTop: serving.maxTop,
            maxBodyBytes: serving.maxBodyBytes, idempotencyTTL: serving.idempotencyTTL)
        current.withLockedValue { $0 = TableAPI(storage: storage, configuration: configuration) }
    }
}
