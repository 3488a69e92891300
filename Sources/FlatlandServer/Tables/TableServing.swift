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

    /// A configuration; every argument has a default.
    public init(
        tables: [TableDefinition] = [TableDefinition(name: "todoitem")], databasePath: String? = nil,
        protocols: Set<TableProtocolVersion> = [.v2, .v3], pageSize: Int = 50, maxTop: Int = 1000
    ) {
        self.tables = tables
        self.databasePath = databasePath
        self.protocols = protocols
        self.pageSize = pageSize
        self.maxTop = maxTop
    }
}

/// The table routes of a running server: set when it starts, once their storage is open.
final class TableHost: Sendable {
    private let current = NIOLockedValueBox<TableAPI?>(nil)

    var api: TableAPI? { current.withLockedValue { $0 } }

    /// Opens the storage, creates the tables, and serves them.
    func open(_ serving: TableServing) async throws {
        guard api == nil else { return }
        let storage = try SQLiteTableStorage(path: serving.databasePath)
        try await storage.prepare(serving.tables)
        let configuration = TableAPI.Configuration(
            tables: serving.tables, protocols: serving.protocols, pageSize: serving.pageSize, maxTop: serving.maxTop)
        current.withLockedValue { $0 = TableAPI(storage: storage, configuration: configuration) }
    }
}
