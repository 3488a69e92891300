import FlatlandJSON

/// What a query of a table asks the storage for.
struct TableRowQuery: Sendable {
    var filter: ODataFilter?
    var orderBy: [(field: String, descending: Bool)] = []
    var skip = 0
    var top: Int
    var includeDeleted = false
    var includeCount = false
    /// Rows tied on every term of ``orderBy`` in a random order rather than by id
    /// (``TableServingQuirks/shuffledTies``).
    var shuffledTies = false
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

/// One write of a table's row, as a storage applies it (see ``TableStorage/apply(_:)``).
struct TableWrite: Sendable {
    enum Kind: Sendable {
        /// A new row with these fields; fails with ``TableStorageError/Code/exists`` (and the
        /// existing row, when the caller may see it).
        case insert(fields: JSONObject)
        /// Fields written into the row: merged (PATCH) or replacing them (PUT). With
        /// `allowDeleted` false, a soft-deleted row fails with ``TableStorageError/Code/deleted``.
        case update(fields: JSONObject, replace: Bool, allowDeleted: Bool)
        /// The row marked deleted (soft) or removed; the write answers with the row as it ends.
        /// A row already soft-deleted fails with ``TableStorageError/Code/deleted``.
        case delete(soft: Bool)
        /// The row's `deleted` mark cleared.
        case undelete
    }

    var table: String
    var id: String
    var kind: Kind
    /// The version the row must have (else ``TableStorageError/Code/versionMismatch``); nil: any.
    /// Not used by an insert.
    var expectedVersion: Int64? = nil
    /// The versions the row must not have (`If-None-Match`), else
    /// ``TableStorageError/Code/versionMismatch``; nil: none. Not used by an insert.
    var noneMatch: NoneMatch? = nil
    /// The owner the write is scoped to (a ``TableAccess/perUser`` table's caller); nil: none.
    var owner: String? = nil
    /// The key that makes the write repeatable; nil: none.
    var idempotency: TableIdempotency? = nil
    /// The `deleted` mark an update leaves (v3's `PUT` with `"deleted":false` undeletes); nil
    /// keeps the row's.
    var deletedMark: Bool? = nil

    /// What `If-None-Match` forbids: any existing row (`*`), or these versions.
    enum NoneMatch: Sendable, Equatable {
        case any
        case versions(Set<Int64>)

        /// Whether a row of `version` is forbidden.
        func forbids(_ version: Int64) -> Bool {
            switch self {
            case .any: true
            case .versions(let versions): versions.contains(version)
            }
        }
    }

    /// Whether `row` fails this write's preconditions (`If-Match`'s expected version, or
    /// `If-None-Match`).
    func preconditionFails(_ row: TableRow) -> Bool {
        if let expectedVersion, expectedVersion != row.version { return true }
        return noneMatch?.forbids(row.version) ?? false
    }
}

/// Where the table server keeps its rows: SQLite (embedded) or PostgreSQL.
///
/// Writes go through ``apply(_:)``: each write on its own, all of one call in one transaction, so that a batch of a thousand writes costs one commit and one that fails leaves
/// nothing of itself while the others stand. `updatedAt` comes from the storage's clock and is
/// strictly increasing over every write, `version` from its counter.
///
/// `owner` scopes a call to one user's rows (``TableAccess/perUser``): an insert records it, and
/// every other call sees a row of another owner (or of none) as absent; an insert of such an id
/// fails with ``TableStorageError/Code/exists`` without the row. Nil sees every row.
///
/// `idempotency` (on every write; nil: none) makes a write repeatable (see
/// ``TableIdempotency``): inside the write's transaction, before anything else, a live record of
/// the same scope and key fails the write with ``TableStorageError/Code/replayed`` and that
/// record; otherwise a successful write records itself (the row it answers with) in the same
/// transaction, to live `ttl`. A failed write records nothing. Records past their time are never
/// answered and are pruned now and then by later writes.
protocol TableStorage: Sendable {
    /// Creates what the tables need (idempotent).
    func prepare(_ tables: [TableDefinition]) async throws(TableStorageError)
    /// Applies `writes` in order, each on its own, all in one transaction: one result per write,
    /// the row it answers with or why it was refused (that write then changed nothing). When the
    /// transaction itself fails, every write fails with ``TableStorageError/Code/storage`` and
    /// nothing is written.
    func apply(_ writes: [TableWrite]) async -> [Result<TableRow, TableStorageError>]
    /// The row with this id, soft-deleted or not.
    func row(_ table: String, id: String, owner: String?) async throws(TableStorageError) -> TableRow?
    /// The rows a query selects, and their number when asked for.
    func query(_ table: String, _ query: TableRowQuery, wire: TableWire) async throws(TableStorageError) -> (
        rows: [TableRow], count: Int?
    )
    /// The rows a query selects, each written as the list route sends it
    /// (``TableRow/write(to:_:select:)``, only the members in `select` when given), and their
    /// number when asked for.
    func encodedQuery(_ table: String, _ query: TableRowQuery, wire: TableWire, select: [String]?)
        async throws(TableStorageError) -> (rows: [[UInt8]], count: Int?)
}

extension TableStorage {
    /// The rows of ``query(_:_:wire:)``, each written by ``TableRow/write(to:_:select:)``.
    func encodedQuery(_ table: String, _ query: TableRowQuery, wire: TableWire, select: [String]?)
        async throws(TableStorageError) -> (rows: [[UInt8]], count: Int?)
    {
        let (rows, count) = try await self.query(table, query, wire: wire)
        return (TableRow.encoded(rows, wire, select: select), count)
    }
}

extension TableRow {
    /// Each of `rows` as the list route sends it.
    static func encoded(_ rows: [TableRow], _ wire: TableWire, select: [String]?) -> [[UInt8]] {
        var writer = JSONWriter()
        return rows.map { row in
            writer.reset()
            row.write(to: &writer, wire, select: select)
            return writer.bytes
        }
    }
}

extension TableStorage {
    /// One write, in a transaction of its own.
    func apply(_ write: TableWrite) async throws(TableStorageError) -> TableRow {
        guard let result = await apply([write]).first else {
            throw TableStorageError(code: .storage, message: "the storage answered no write")
        }
        return try result.get()
    }

    /// Inserts a row (see ``TableWrite/Kind/insert(fields:)``).
    func insert(
        _ table: String, id: String, fields: JSONObject, owner: String?, idempotency: TableIdempotency?
    ) async throws(TableStorageError) -> TableRow {
        try await apply(
            TableWrite(table: table, id: id, kind: .insert(fields: fields), owner: owner, idempotency: idempotency))
    }

    /// Writes fields into a row (see ``TableWrite/Kind/update(fields:replace:allowDeleted:)``).
    func update(
        _ table: String, id: String, fields: JSONObject, replace: Bool, expectedVersion: Int64?, allowDeleted: Bool,
        owner: String?, idempotency: TableIdempotency?
    ) async throws(TableStorageError) -> TableRow {
        try await apply(
            TableWrite(
                table: table, id: id, kind: .update(fields: fields, replace: replace, allowDeleted: allowDeleted),
                expectedVersion: expectedVersion, owner: owner, idempotency: idempotency))
    }

    /// Deletes a row (see ``TableWrite/Kind/delete(soft:)``).
    func delete(
        _ table: String, id: String, soft: Bool, expectedVersion: Int64?, owner: String?,
        idempotency: TableIdempotency?
    ) async throws(TableStorageError) -> TableRow {
        try await apply(
            TableWrite(
                table: table, id: id, kind: .delete(soft: soft), expectedVersion: expectedVersion, owner: owner,
                idempotency: idempotency))
    }

    /// Clears a row's `deleted` mark.
    func undelete(
        _ table: String, id: String, expectedVersion: Int64?, owner: String?, idempotency: TableIdempotency?
    ) async throws(TableStorageError) -> TableRow {
        try await apply(
            TableWrite(
                table: table, id: id, kind: .undelete, expectedVersion: expectedVersion, owner: owner,
                idempotency: idempotency))
    }
}
