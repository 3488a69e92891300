import Flatland
import FlatlandJSON
import Foundation
import GRDB
import Synchronization

/// The table server's rows in SQLite, through GRDB: one SQL table per declared table, the row's
/// fields as JSON beside its system columns, and one clock for `updatedAt` and `version`.
///
/// Writes go through GRDB's writer queue (off Swift's cooperative pool), the writes of one
/// ``apply(_:)`` in one transaction; reads run concurrently with them on a
/// file (WAL). The statements writes run are compiled once per connection and kept.
final class SQLiteTableStorage: TableStorage {
    private let writer: any DatabaseWriter
    private let now: @Sendable () -> Int64
    /// Whether each write's `updatedAt` is past the last one's (else it may equal it: a coarse clock).
    private let strictlyIncreasing: Bool
    /// The schemas of the declared tables, by name (set by ``prepare(_:)``).
    private let schemas = Mutex<[String: TableSchema]>([:])

    /// In memory (`path` nil) or in a file.
    init(
        path: String?, now: @escaping @Sendable () -> Int64 = SQLiteTableStorage.wallClock,
        strictlyIncreasing: Bool = true
    ) throws(TableStorageError) {
        do {
            if let path {
                // Another server on the same file (a second instance, or one restarting while
                // the old one ends) holds the write lock for a moment: wait for it rather than
                // answer 500 "database is locked".
                var configuration = Configuration()
                configuration.busyMode = .timeout(SQLiteTableStorage.busyTimeout)
                writer = try DatabasePool(path: path, configuration: configuration)
            } else {
                writer = try DatabaseQueue()
            }
        } catch {
            throw TableStorageError(code: .storage, message: "cannot open the tables' database: \(error)")
        }
        self.now = now
        self.strictlyIncreasing = strictlyIncreasing
    }

    /// How long a write waits for another connection's write lock on the same file.
    static let busyTimeout: TimeInterval = 10

    static let wallClock: @Sendable () -> Int64 = { Int64((Date().timeIntervalSince1970 * 1_000_000).rounded(.down)) }

    /// The wall clock truncated to `tick` microseconds (a test's coarse clock).
    static func coarseClock(_ tick: Int64) -> @Sendable () -> Int64 {
        let tick = max(1, tick)
        return { wallClock() / tick * tick }
    }

    private static func sqlTable(_ name: String) -> String { "\"tbl_\(name)\"" }

    private func run<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(TableStorageError)
        -> T
    {
        try await access(writing: true, body)
    }

    /// Applies the writes in one transaction (see ``TableStorage``). A refusal (a
    /// ``TableStorageError``) is always met before the write's first change (see ``keyed(_:_:)``),
    /// so a refused write needs nothing undone and the others go on. Any other failure (the
    /// database's) rolls the whole transaction back; then each write is tried in a transaction
    /// of its own, so that only the one that fails fails.
    func apply(_ writes: [TableWrite]) async -> [Result<TableRow, TableStorageError>] {
        guard !writes.isEmpty else { return [] }
        do {
            return try await run { db in
                let results = try writes.map { write -> Result<TableRow, TableStorageError> in
                    do {
                        return .success(try self.keyed(db, write))
                    } catch let error as TableStorageError {
                        return .failure(error)
                    }
                }
                // Each caller's keyed writes counted once for the transaction (a batch's 300
                // writes, one statement).
                var counted: [String: (key: TableIdempotency, writes: Int)] = [:]
                for (write, result) in zip(writes, results) {
                    guard case .success = result, let key = write.idempotency else { continue }
                    counted[key.scope, default: (key, 0)].writes += 1
                }
                for (key, count) in counted.values { try Self.count(db, key, writes: count) }
                return results
            }
        } catch {
            guard writes.count > 1 else { return [.failure(error)] }
            var results: [Result<TableRow, TableStorageError>] = []
            for write in writes { results += await apply([write]) }
            return results
        }
    }

    /// One write under its idempotency key: a live record of the key answers instead
    /// (``TableStorageError/Code/replayed``), and a write that succeeds is recorded with it.
    ///
    /// Every refusal is thrown by a read, before the clock ticks or anything is written: the
    /// key's record, the row's existence, owner, `deleted` mark and version are all checked
    /// first. ``apply(_:)`` counts on it to run many writes without a savepoint each.
    private func keyed(_ db: Database, _ write: TableWrite) throws -> TableRow {
        let now = self.now()
        if let idempotency = write.idempotency, var record = try Self.remembered(db, idempotency, now: now) {
            // A record without its row's copy: the row as it is now, if its version is the same.
            if !record.complete, let row = try Self.fetch(db, write.table, id: record.row.id, owner: write.owner),
                row.version == record.row.version
            {
                record.row = row
                record.complete = true
            }
            throw TableStorageError(
                code: .replayed, message: "the idempotency key '\(idempotency.key)' was used before", replay: record)
        }
        let (row, data) = try perform(db, write)
        if let idempotency = write.idempotency { try Self.remember(db, idempotency, row, data: data, now: now) }
        return row
    }

    /// The live record of a key, if any.
    private static func remembered(_ db: Database, _ key: TableIdempotency, now: Int64) throws
        -> TableIdempotencyRecord?
    {
        let statement = try db.cachedStatement(
            sql: """
                SELECT row_id, created_at, updated_at, version, deleted, data, method, path, status
                FROM flatland_table_idempotency WHERE scope = ? AND key = ? AND expires_at > ?
                """)
        return try Row.fetchOne(statement, arguments: [key.scope, key.key, now]).map { row in
            try TableIdempotencyRecord.stored(
                method: row[6], path: row[7], status: row[8], id: row[0], createdAt: row[1], updatedAt: row[2],
                version: row[3], deleted: row[4] as Int64 != 0, data: row[5])
        }
    }

    /// Records a write under its key (`data`: the row's fields as stored, kept only up to
    /// ``TableIdempotency/maxRowBytes``); every 128th version also prunes the records past their
    /// time. ``apply(_:)`` then counts the transaction's records per caller
    /// (``count(_:_:writes:)``).
    private static func remember(_ db: Database, _ key: TableIdempotency, _ row: TableRow, data: String, now: Int64)
        throws
    {
        try db.cachedStatement(
            sql: """
                INSERT OR REPLACE INTO flatland_table_idempotency
                (scope, key, method, path, status, row_id, created_at, updated_at, version, deleted, data, expires_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(arguments: [
            key.scope, key.key, key.method, key.path, key.status, row.id, row.createdAt, row.updatedAt,
            row.version, row.deleted ? 1 : 0, key.kept(data), now + key.ttl,
        ])
        if row.version % 128 == 0 {
            try db.execute(sql: "DELETE FROM flatland_table_idempotency WHERE expires_at <= ?", arguments: [now])
        }
    }

    /// Adds `writes` records to `key`'s scope's count since its last pruning (in
    /// `flatland_table_idempotency_scopes`, in the writes' own transaction, so that a rollback
    /// takes the count back with them), and forgets the scope's oldest records past
    /// ``TableIdempotency/maxPerScope`` once that count passes ``TableIdempotency/pruneSlack``.
    ///
    /// Finding the cap's boundary walks the scope's newest records in the index: at every write
    /// that cost about eight times the write itself.
    private static func count(_ db: Database, _ key: TableIdempotency, writes: Int) throws {
        let since =
            try Int.fetchOne(
                db.cachedStatement(
                    sql: """
                        INSERT INTO flatland_table_idempotency_scopes (scope, writes) VALUES (?, ?)
                        ON CONFLICT (scope) DO UPDATE SET writes = writes + excluded.writes RETURNING writes
                        """),
                arguments: [key.scope, writes]) ?? writes
        guard since > key.pruneSlack else { return }
        try db.cachedStatement(
            sql: """
                DELETE FROM flatland_table_idempotency WHERE scope = ? AND expires_at <= (
                    SELECT expires_at FROM flatland_table_idempotency WHERE scope = ?
                    ORDER BY expires_at DESC LIMIT 1 OFFSET ?)
                """
        ).execute(arguments: [key.scope, key.scope, key.maxPerScope])
        try db.cachedStatement(sql: "UPDATE flatland_table_idempotency_scopes SET writes = 0 WHERE scope = ?")
            .execute(arguments: [key.scope])
    }

    private func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(TableStorageError)
        -> T
    {
        try await access(writing: false, body)
    }

    /// Runs `body` in a write transaction or a read, with every error a ``TableStorageError``.
    private func access<T: Sendable>(writing: Bool, _ body: @escaping @Sendable (Database) throws -> T)
        async throws(TableStorageError) -> T
    {
        do {
            return writing ? try await writer.write(body) : try await writer.read(body)
        } catch {
            throw Self.failure(error)
        }
    }

    /// `error` as the storage's: a client's answer never holds the statement or SQLite's
    /// message, only its code.
    private static func failure(_ error: any Error) -> TableStorageError {
        if let error = error as? TableStorageError { return error }
        if let error = error as? DatabaseError {
            return TableStorageError(
                code: .storage, message: "the tables' database failed (error \(error.resultCode.rawValue))")
        }
        return TableStorageError(code: .storage, message: "the tables' database failed")
    }

    /// A query's read: a statement SQLite refuses as too large or too deep for it (a filter
    /// past its limits that got through ``TableRowQuery/sql(_:)``'s own) is the client's
    /// ``TableStorageError/Code/badQuery``, not a failure of the database.
    private func queryRead<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T)
        async throws(TableStorageError) -> T
    {
        do {
            return try await writer.read(body)
        } catch let error as DatabaseError
            where error.resultCode == .SQLITE_TOOBIG || error.resultCode == .SQLITE_RANGE
            || (error.resultCode == .SQLITE_ERROR
                && ["too large", "too many", "stack overflow", "too deep"].contains {
                    error.message?.contains($0) ?? false
                })
        {
            throw TableStorageError(code: .badQuery, message: "$filter: the filter is too large or too deep to run")
        } catch {
            throw Self.failure(error)
        }
    }

    func prepare(_ tables: [TableDefinition]) async throws(TableStorageError) {
        try await run { db in
            try db.execute(
                sql: """
                    CREATE TABLE IF NOT EXISTS flatland_table_clock (
                        id INTEGER PRIMARY KEY CHECK (id = 1), updated_at INTEGER NOT NULL, version INTEGER NOT NULL);
                    INSERT OR IGNORE INTO flatland_table_clock VALUES (1, 0, 0);
                    CREATE TABLE IF NOT EXISTS flatland_table_idempotency (
                        scope TEXT NOT NULL, key TEXT NOT NULL, method TEXT NOT NULL, path TEXT NOT NULL,
                        status INTEGER NOT NULL, row_id TEXT NOT NULL, created_at INTEGER NOT NULL,
                        updated_at INTEGER NOT NULL, version INTEGER NOT NULL, deleted INTEGER NOT NULL,
                        data TEXT NOT NULL, expires_at INTEGER NOT NULL, PRIMARY KEY (scope, key));
                    CREATE INDEX IF NOT EXISTS flatland_table_idempotency_expiry
                        ON flatland_table_idempotency (expires_at);
                    CREATE INDEX IF NOT EXISTS flatland_table_idempotency_scope
                        ON flatland_table_idempotency (scope, expires_at);
                    CREATE TABLE IF NOT EXISTS flatland_table_idempotency_scopes (
                        scope TEXT PRIMARY KEY NOT NULL, writes INTEGER NOT NULL);
                    """)
            for table in tables {
                let t = Self.sqlTable(table.name)
                try db.execute(
                    sql: """
                        CREATE TABLE IF NOT EXISTS \(t) (
                            id TEXT PRIMARY KEY NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
                            version INTEGER NOT NULL, deleted INTEGER NOT NULL, data TEXT NOT NULL);
                        CREATE INDEX IF NOT EXISTS "tbl_\(table.name)_updated_at" ON \(t) (updated_at, id);
                        """)
                // Listings leave soft-deleted rows out and page by id: without this index every
                // OFFSET re-read the rows before it through the table (a full read was quadratic).
                try db.execute(
                    sql: "CREATE INDEX IF NOT EXISTS \"tbl_\(table.name)_live\" ON \(t) (deleted, id)")
                // The owner of a per-user table's row; a file written before it existed gains it.
                if try !db.columns(in: "tbl_\(table.name)").contains(where: { $0.name == "owner" }) {
                    try db.execute(sql: "ALTER TABLE \(t) ADD COLUMN owner TEXT")
                }
                try db.execute(
                    sql: "CREATE INDEX IF NOT EXISTS \"tbl_\(table.name)_owner\" ON \(t) (owner, updated_at, id)")
                try Self.declare(db, table)
            }
        }
        schemas.withLock { schemas in
            for table in tables { schemas[table.name] = table.schema }
        }
    }

    /// A declared table's typed columns (generated from the row's JSON, added to a table from
    /// before them) and their indexes.
    private static func declare(_ db: Database, _ table: TableDefinition) throws {
        guard let schema = table.schema else { return }
        let existing = Set(
            try String.fetchAll(db, sql: "SELECT name FROM pragma_table_xinfo(?)", arguments: ["tbl_\(table.name)"]))
        for field in schema.fields where field.hasColumn {
            if !existing.contains("f_\(field.name)") {
                try db.execute(sql: "ALTER TABLE \(sqlTable(table.name)) ADD COLUMN \(field.sqliteDefinition)")
            }
            if field.indexed {
                try db.execute(
                    sql:
                        "CREATE INDEX IF NOT EXISTS \"tbl_\(table.name)_f_\(field.name)\" ON \(sqlTable(table.name)) (\(field.column), id)"
                )
            }
        }
    }

    /// The columns of `table` under `wire`'s names.
    private func columns(_ table: String, _ wire: TableWire) -> WireColumns {
        WireColumns(wire: wire, dialect: .sqlite, schema: schemas.withLock { $0[table] })
    }

    /// The next `updatedAt` and `version`: the clock's time, or one microsecond past the last one
    /// (or the last one itself, for a coarse clock).
    private func tick(_ db: Database) throws -> (updatedAt: Int64, version: Int64) {
        let read = try db.cachedStatement(sql: "SELECT updated_at, version FROM flatland_table_clock WHERE id = 1")
        guard let row = try Row.fetchOne(read) else {
            throw TableStorageError(code: .storage, message: "the tables' clock is missing")
        }
        let last: Int64 = row[0]
        let version: Int64 = row[1]
        let next = (updatedAt: max(now(), strictlyIncreasing ? last + 1 : last), version: version + 1)
        try db.cachedStatement(sql: "UPDATE flatland_table_clock SET updated_at = ?, version = ? WHERE id = 1")
            .execute(arguments: [next.updatedAt, next.version])
        return next
    }

    /// The row with this id, if there is one and `owner` (when given) owns it.
    private static func fetch(_ db: Database, _ table: String, id: String, owner: String?) throws -> TableRow? {
        try fetchOwned(db, table, id: id).flatMap { owner == nil || $0.owner == owner ? $0.row : nil }
    }

    /// The row with this id and its owner, whoever that is.
    private static func fetchOwned(_ db: Database, _ table: String, id: String) throws -> (
        row: TableRow, owner: String?
    )? {
        let statement = try db.cachedStatement(
            sql: "SELECT id, created_at, updated_at, version, deleted, data, owner FROM \(sqlTable(table)) WHERE id = ?"
        )
        return try Row.fetchOne(statement, arguments: [id]).map { (try decode($0), $0[6]) }
    }

    private static func decode(_ row: Row) throws -> TableRow {
        let data: String = row[5]
        guard case .object(let fields) = try JSONValue(parsing: data) else {
            throw TableStorageError(code: .storage, message: "a stored row is not a JSON object")
        }
        return TableRow(
            id: row[0], createdAt: row[1], updatedAt: row[2], version: row[3], deleted: row[4] as Int64 != 0,
            fields: fields)
    }

    /// Writes `row` (inserted, or over the row of its id) and returns its fields as stored.
    private static func write(
        _ db: Database, _ table: String, _ row: TableRow, insert: Bool, owner: String? = nil
    ) throws -> String {
        let data = JSONValue.object(row.fields).jsonString()
        if insert {
            try db.cachedStatement(
                sql:
                    "INSERT INTO \(sqlTable(table)) (id, created_at, updated_at, version, deleted, data, owner) VALUES (?, ?, ?, ?, ?, ?, ?)"
            ).execute(arguments: [
                row.id, row.createdAt, row.updatedAt, row.version, row.deleted ? 1 : 0, data, owner,
            ])
        } else {
            try db.cachedStatement(
                sql: "UPDATE \(sqlTable(table)) SET updated_at = ?, version = ?, deleted = ?, data = ? WHERE id = ?"
            ).execute(arguments: [row.updatedAt, row.version, row.deleted ? 1 : 0, data, row.id])
        }
        return data
    }

    /// One write, without its key: the row it answers with, and its fields as stored.
    private func perform(_ db: Database, _ write: TableWrite) throws -> (TableRow, String) {
        let (table, id, owner) = (write.table, write.id, write.owner)
        switch write.kind {
        case .insert(let fields):
            if let existing = try Self.fetchOwned(db, table, id: id) {
                // Another owner's row is not shown: only that the id is taken.
                let visible = owner == nil || existing.owner == owner
                throw TableStorageError(
                    code: .exists, message: "an item with id '\(id)' exists", current: visible ? existing.row : nil)
            }
            let clock = try tick(db)
            let row = TableRow(
                id: id, createdAt: clock.updatedAt, updatedAt: clock.updatedAt, version: clock.version, deleted: false,
                fields: fields)
            return (row, try Self.write(db, table, row, insert: true, owner: owner))
        case .update(let fields, let replace, let allowDeleted):
            var row = try Self.current(db, write, allowDeleted: allowDeleted)
            row.fields = replace ? fields : row.fields.merging(fields)
            if let mark = write.deletedMark { row.deleted = mark }
            (row.updatedAt, row.version) = try tick(db)
            return (row, try Self.write(db, table, row, insert: false))
        case .delete(let soft):
            var row = try Self.current(db, write, allowDeleted: false)
            guard soft else {
                try db.cachedStatement(sql: "DELETE FROM \(Self.sqlTable(table)) WHERE id = ?").execute(arguments: [id])
                return (row, JSONValue.object(row.fields).jsonString())
            }
            row.deleted = true
            (row.updatedAt, row.version) = try tick(db)
            return (row, try Self.write(db, table, row, insert: false))
        case .undelete:
            var row = try Self.current(db, write)
            row.deleted = false
            (row.updatedAt, row.version) = try tick(db)
            return (row, try Self.write(db, table, row, insert: false))
        }
    }

    func row(_ table: String, id: String, owner: String?) async throws(TableStorageError) -> TableRow? {
        try await read { db in try Self.fetch(db, table, id: id, owner: owner) }
    }

    /// Loads the row a write is about, checking that it exists and meets the write's
    /// preconditions (``TableWrite/preconditionFails(_:)``).
    private static func current(_ db: Database, _ write: TableWrite, allowDeleted: Bool = true) throws -> TableRow {
        guard let row = try fetch(db, write.table, id: write.id, owner: write.owner) else {
            throw TableStorageError(code: .notFound, message: "The item does not exist")
        }
        if row.deleted, !allowDeleted {
            throw TableStorageError(code: .deleted, message: "The item is deleted", current: row)
        }
        if write.preconditionFails(row) {
            throw TableStorageError(
                code: .versionMismatch, message: "the item has changed since version was read", current: row)
        }
        return row
    }

    func query(_ table: String, _ query: TableRowQuery, wire: TableWire) async throws(TableStorageError) -> (
        rows: [TableRow], count: Int?
    ) {
        let statements = try Self.statements(table, query, columns(table, wire))
        return try await queryRead { db in
            let rows = try Row.fetchAll(db, sql: statements.select, arguments: statements.selectArguments).map(
                Self.decode)
            return (rows, try statements.count(db))
        }
    }

    /// The rows written straight from their stored fields (a JSON object this storage wrote),
    /// without reading them as values: the list route's rows, when it selects no fields.
    func encodedQuery(_ table: String, _ query: TableRowQuery, wire: TableWire, select: [String]?)
        async throws(TableStorageError) -> (rows: [[UInt8]], count: Int?)
    {
        try TableRowQuery.checkSelect(select, columns(table, wire))
        guard select == nil else {
            let (rows, count) = try await self.query(table, query, wire: wire)
            return (TableRow.encoded(rows, wire, select: select), count)
        }
        let statements = try Self.statements(table, query, columns(table, wire))
        return try await queryRead { db in
            var rows: [[UInt8]] = []
            var writer = JSONWriter()
            let cursor = try Row.fetchCursor(db, sql: statements.select, arguments: statements.selectArguments)
            while let row = try cursor.next() {
                guard
                    let bytes = TableRow.encoded(
                        id: row[0], storedFields: row[5], createdAt: row[1], updatedAt: row[2], version: row[3],
                        deleted: row[4] as Int64 != 0, wire, using: &writer)
                else {
                    throw TableStorageError(code: .storage, message: "a stored row is not a JSON object")
                }
                rows.append(bytes)
            }
            return (rows, try statements.count(db))
        }
    }

    /// The statements of a query: its rows, and their number when asked for.
    private struct QueryStatements {
        var select: String
        var selectArguments: StatementArguments
        var countSQL: String?
        var countArguments: StatementArguments

        func count(_ db: Database) throws -> Int? {
            try countSQL.map { try Int.fetchOne(db, sql: $0, arguments: countArguments) ?? 0 }
        }
    }

    private static func statements(_ table: String, _ query: TableRowQuery, _ columns: WireColumns)
        throws(TableStorageError) -> QueryStatements
    {
        let (condition, order) = try query.sql(columns)
        let t = sqlTable(table)
        return QueryStatements(
            select:
                "SELECT id, created_at, updated_at, version, deleted, data FROM \(t) WHERE \(condition.sql) ORDER BY \(order.sql) LIMIT \(max(0, query.top)) OFFSET \(max(0, query.skip))",
            selectArguments: StatementArguments((condition.arguments + order.arguments).map(\.databaseValue)),
            countSQL: query.includeCount ? "SELECT count(*) FROM \(t) WHERE \(condition.sql)" : nil,
            countArguments: StatementArguments(condition.arguments.map(\.databaseValue)))
    }
}

extension SQLArgument {
    var databaseValue: DatabaseValue {
        switch self {
        case .text(let s): s.databaseValue
        case .integer(let i): i.databaseValue
        case .real(let d): d.databaseValue
        case .bool(let b): (b ? 1 : 0).databaseValue
        case .null: .null
        }
    }
}
