import FlatlandJSON

/// What a query of a table asks the storage for.
struct TableRowQuery: Sendable {
    var filter: ODataFilter?
    var orderBy: [(field: String, descending: Bool)] = []
    var skip = 0
    var top: Int
    var includeDeleted = false
    var includeCount = false
    /// Only the rows of this owner (a ``TableAccess/perUser`` table's caller); nil: every row.
    var owner: String?
}

/// A write or read the storage refused, with the row as it is where that matters.
struct TableStorageError: Error, Sendable, CustomStringConvertible {
    enum Code: Sendable, Equatable {
        /// No row with that id (or a soft-deleted one, where deleted rows are not asked for).
        case notFound
        /// An insert of an id that exists; `current` is the existing row.
        case exists
        /// A write whose expected version is not the row's; `current` is the row.
        case versionMismatch
        /// A write to a soft-deleted row where deleted rows are not written; `current` is the row.
        case deleted
        /// A filter or order that cannot be run against the table.
        case badQuery
        /// The database failed.
        case storage
        /// The write's idempotency key was used before, by the write `replay` recorded: nothing
        /// was written now.
        case replayed
    }

    var code: Code
    var message: String
    var current: TableRow?
    /// For ``Code/replayed``: the first write's record.
    var replay: TableIdempotencyRecord?

    var description: String { message }
}

/// Where the table server keeps its rows: SQLite (embedded) today.
///
/// Every write is one transaction; `updatedAt` comes from the storage's clock and is strictly
/// increasing over every write, `version` from its counter.
///
/// `owner` scopes a call to one user's rows (``TableAccess/perUser``): an insert records it, and
/// every other call sees a row of another owner (or of none) as absent; an insert of such an id
/// fails with ``TableStorageError/Code/exists`` without the row. Nil sees every row.
///
/// `idempotency` (on every write; nil: none) makes a write repeatable (see
/// ``TableIdempotency``): inside the write's transaction, before anything else, a live record of
/// the same scope and key fails the write with ``TableStorageError/Code/replayed`` and that
/// record; otherwise a successful write records itself (the row it answers with) in the same
/// transaction, to live `ttl`. A failed write records nothing. Records past their time are
/// never answered and are pruned now and then by later writes.
protocol TableStorage: Sendable {
    /// Creates what the tables need (idempotent).
    func prepare(_ tables: [TableDefinition]) async throws(TableStorageError)
    /// Inserts a row; fails with ``TableStorageError/Code/exists`` (and the existing row).
    func insert(_ table: String, id: String, fields: JSONObject, owner: String?, idempotency: TableIdempotency?)
        async throws(TableStorageError) -> TableRow
    /// The row with this id, soft-deleted or not.
    func row(_ table: String, id: String, owner: String?) async throws(TableStorageError) -> TableRow?
    /// Writes fields into a row: merged (PATCH) or replacing them (PUT). With an expected version,
    /// fails with ``TableStorageError/Code/versionMismatch`` unless it is the row's.
    /// With `allowDeleted` false, a soft-deleted row fails with ``TableStorageError/Code/deleted``.
    func update(
        _ table: String, id: String, fields: JSONObject, replace: Bool, expectedVersion: Int64?, allowDeleted: Bool,
        owner: String?, idempotency: TableIdempotency?
    ) async throws(TableStorageError) -> TableRow
    /// Deletes a row: marks it deleted (soft) or removes it. Returns the row as it ends. A row
    /// already soft-deleted fails with ``TableStorageError/Code/deleted``.
    func delete(
        _ table: String, id: String, soft: Bool, expectedVersion: Int64?, owner: String?, idempotency: TableIdempotency?
    ) async throws(TableStorageError) -> TableRow
    /// Clears a row's `deleted` mark.
    func undelete(_ table: String, id: String, expectedVersion: Int64?, owner: String?, idempotency: TableIdempotency?)
        async throws(TableStorageError) -> TableRow
    /// The rows a query selects, and their number when asked for.
    func query(_ table: String, _ query: TableRowQuery, wire: TableWire) async throws(TableStorageError) -> (
        rows: [TableRow], count: Int?
    )
}
