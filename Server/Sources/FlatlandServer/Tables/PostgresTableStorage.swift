import FlatlandJSON
import Foundation
import Logging
import PostgresNIO
import Synchronization

/// The table server's rows in PostgreSQL, through postgres-nio's `PostgresClient` (its own
/// connection pool), shared by every server instance on the same database.
///
/// The layout follows the SQLite storage's: one SQL table per declared table (`tbl_NAME`, the
/// row's fields as `json` text, kept exactly as written, beside the system columns and the owner),
/// in the URL's schema (`?schema=NAME`, `public` by default). `updatedAt` is the database's
/// `clock_timestamp()` in microseconds, kept strictly increasing across instances by a one-row
/// clock table (`flatland_table_clock`) written in each write's transaction; `version` comes from
/// a sequence (`flatland_table_version`). An update is `UPDATE … WHERE id = $1 AND version = $2`:
/// a write that lost a race to another instance finds no row and is retried or refused, never
/// applied over the other one.
final class PostgresTableStorage: TableStorage {
    let location: PostgresLocation
    private let client: PostgresClient
    private let runner: Task<Void, Never>
    /// The schemas of the declared tables, by name (set by ``prepare(_:)``).
    private let schemas = Mutex<[String: TableSchema]>([:])
    private static let logger: Logger = {
        var logger = Logger(label: "flatland.tables.postgres")
        logger.logLevel = .critical
        return logger
    }()

    /// A storage on the database `url` names (`postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE`,
    /// optionally `?schema=NAME`). Nothing connects before ``prepare(_:)``.
    init(url: String, maximumConnections: Int = 8) throws(TableStorageError) {
        location = try PostgresLocation(url: url)
        var configuration = PostgresClient.Configuration(
            host: location.host, port: location.port, username: location.user, password: location.password,
            database: location.database, tls: .disable)
        configuration.options.maximumConnections = maximumConnections
        configuration.options.connectionIdleTimeout = .seconds(30)
        configuration.options.connectTimeout = .seconds(5)
        let client = PostgresClient(configuration: configuration, backgroundLogger: Self.logger)
        self.client = client
        runner = Task { await client.run() }
    }

    deinit { runner.cancel() }

    private var schema: String { "\"\(location.schema)\"" }
    private func sqlTable(_ name: String) -> String { "\(schema).\"tbl_\(name)\"" }

    // MARK: Running statements

    /// `sql` (with `?` placeholders) and its arguments as a postgres-nio query.
    private static func statement(_ sql: String, _ arguments: [SQLArgument] = []) -> PostgresQuery {
        var binds = PostgresBindings(capacity: arguments.count)
        for argument in arguments {
            switch argument {
            case .text(let s): binds.append(s)
            case .integer(let i): binds.append(i)
            case .real(let d): binds.append(d)
            case .bool(let b): binds.append(b)
            case .null: binds.appendNull()
            }
        }
        return PostgresQuery(unsafeSQL: SQLDialect.postgres.render(SQLFragment(sql, arguments)), binds: binds)
    }

    private static func rows(_ connection: PostgresConnection, _ sql: String, _ arguments: [SQLArgument] = [])
        async throws -> [PostgresRow]
    {
        try await connection.query(statement(sql, arguments), logger: logger).collect()
    }

    /// What went wrong, in words (postgres-nio's own description hides the server's message).
    static func explain(_ error: any Error) -> String {
        guard let error = error as? PSQLError else { return "\(error)" }
        if let message = error.serverInfo?[.message] {
            return message + (error.serverInfo?[.sqlState].map { " (SQLSTATE \($0))" } ?? "")
        }
        if let underlying = error.underlying { return "\(underlying)" }
        return "\(error.code)"
    }

    /// Runs `body` in one transaction on a pooled connection: committed when it returns, rolled
    /// back when it throws (with `body`'s error).
    private func attempt<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await client.withConnection { connection in
            try await connection.query("BEGIN", logger: Self.logger)
            do {
                let value = try await body(connection)
                try await connection.query("COMMIT", logger: Self.logger)
                return value
            } catch {
                _ = try? await connection.query("ROLLBACK", logger: Self.logger)
                throw error
            }
        }
    }

    /// Runs `body` on a pooled connection (reads).
    private func read<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws(TableStorageError) -> T
    {
        do {
            return try await client.withConnection { connection in try await body(connection) }
        } catch {
            throw Self.storageError(error)
        }
    }

    private static func storageError(_ error: any Error) -> TableStorageError {
        if let error = error as? TableStorageError { return error }
        return TableStorageError(code: .storage, message: "the tables' database failed: \(explain(error))")
    }

    /// A query's read. The answer to a client never holds PostgreSQL's message (only its
    /// SQLSTATE); a data exception or a program limit (class 22 or 54: a filter whose
    /// arithmetic overflows, a statement too complex) is the client's
    /// ``TableStorageError/Code/badQuery``.
    private func queryRead<T: Sendable>(_ body: (PostgresConnection) async throws -> T)
        async throws(TableStorageError) -> T
    {
        do {
            return try await client.withConnection { connection in try await body(connection) }
        } catch let error as TableStorageError {
            throw error
        } catch {
            let state = (error as? PSQLError)?.serverInfo?[.sqlState]
            if let state, state.hasPrefix("22") || state.hasPrefix("54") {
                throw TableStorageError(
                    code: .badQuery,
                    message: "$filter: the filter cannot be evaluated on this table's rows (error \(state))")
            }
            throw TableStorageError(
                code: .storage, message: "the tables' database failed" + (state.map { " (error \($0))" } ?? ""))
        }
    }

    /// The function that reads text as an instant, NULL when it is not one (a filter compares
    /// a date with a free-form field through it): ISO 8601 with or without an offset (UTC).
    private var instantFunction: String { "\(schema).flatland_instant" }
    /// The function that reads text as microseconds since the epoch (a declared `datetime`).
    private var microsFunction: String { "\(schema).flatland_micros" }

    /// The columns of `table` under `wire`'s names.
    private func columns(_ table: String, _ wire: TableWire) -> WireColumns {
        WireColumns(
            wire: wire, dialect: .postgres, instantFunction: instantFunction, schema: schemas.withLock { $0[table] })
    }

    // MARK: Schema

    /// The schema, run under an advisory lock so that instances starting at once on one
    /// database wait for each other instead of failing on each other's `CREATE`s.
    private func migration(_ tables: [TableDefinition]) -> [String] {
        var statements = [
            "CREATE SCHEMA IF NOT EXISTS \(schema)",
            """
            CREATE TABLE IF NOT EXISTS \(schema).flatland_table_clock (
                id integer PRIMARY KEY CHECK (id = 1), updated_at bigint NOT NULL)
            """,
            "INSERT INTO \(schema).flatland_table_clock VALUES (1, 0) ON CONFLICT (id) DO NOTHING",
            "CREATE SEQUENCE IF NOT EXISTS \(schema).flatland_table_version",
            """
            CREATE TABLE IF NOT EXISTS \(schema).flatland_table_idempotency (
                scope text COLLATE "C" NOT NULL, key text COLLATE "C" NOT NULL, method text NOT NULL,
                path text NOT NULL, status integer NOT NULL, row_id text NOT NULL, created_at bigint NOT NULL,
                updated_at bigint NOT NULL, version bigint NOT NULL, deleted boolean NOT NULL, data json NOT NULL,
                expires_at bigint NOT NULL, PRIMARY KEY (scope, key))
            """,
            """
            CREATE INDEX IF NOT EXISTS flatland_table_idempotency_expiry
            ON \(schema).flatland_table_idempotency (expires_at)
            """,
            """
            CREATE INDEX IF NOT EXISTS flatland_table_idempotency_scope
            ON \(schema).flatland_table_idempotency (scope, expires_at)
            """,
            """
            CREATE OR REPLACE FUNCTION \(instantFunction)(t text) RETURNS timestamptz
            LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
            BEGIN
                IF t ~ '^\\d{4}-\\d{2}-\\d{2}([Tt ]\\d{2}:\\d{2}(:\\d{2}(\\.\\d+)*)*)*([Zz]|[+-]\\d{2}:\\d{2})$' THEN
                    RETURN t::timestamptz;
                END IF;
                IF t ~ '^\\d{4}-\\d{2}-\\d{2}([Tt ]\\d{2}:\\d{2}(:\\d{2}(\\.\\d+)*)*)*$' THEN
                    RETURN t::timestamp AT TIME ZONE 'UTC';
                END IF;
                RETURN NULL;
            EXCEPTION WHEN others THEN
                RETURN NULL;
            END
            $$
            """,
            """
            CREATE OR REPLACE FUNCTION \(microsFunction)(t text) RETURNS bigint
            LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
            RETURN CAST(floor(extract(epoch from \(instantFunction)(t)) * 1000000) AS bigint)
            """,
        ]
        for table in tables {
            let t = sqlTable(table.name)
            statements += [
                """
                CREATE TABLE IF NOT EXISTS \(t) (
                    id text COLLATE "C" PRIMARY KEY, created_at bigint NOT NULL, updated_at bigint NOT NULL,
                    version bigint NOT NULL, deleted boolean NOT NULL, data json NOT NULL)
                """,
                // The owner of a per-user table's row; a table from before owners gains it.
                "ALTER TABLE \(t) ADD COLUMN IF NOT EXISTS owner text",
                "CREATE INDEX IF NOT EXISTS \"tbl_\(table.name)_updated_at\" ON \(t) (updated_at, id)",
                "CREATE INDEX IF NOT EXISTS \"tbl_\(table.name)_live\" ON \(t) (deleted, id)",
                "CREATE INDEX IF NOT EXISTS \"tbl_\(table.name)_owner\" ON \(t) (owner, updated_at, id)",
            ]
            // A declared table's typed columns, generated from the row's JSON, and their indexes.
            for field in table.schema?.fields ?? [] where field.hasColumn {
                statements.append(
                    "ALTER TABLE \(t) ADD COLUMN IF NOT EXISTS \(field.postgresDefinition(micros: microsFunction))")
                if field.indexed {
                    statements.append(
                        "CREATE INDEX IF NOT EXISTS \"tbl_\(table.name)_f_\(field.name)\" ON \(t) (\(field.column), id)"
                    )
                }
            }
        }
        return statements
    }

    /// Connects once on its own connection (so that a wrong address or an unreachable server
    /// is a prompt, clear error rather than a pool waiting for it), then creates or migrates
    /// the schema in one transaction under an advisory lock.
    func prepare(_ tables: [TableDefinition]) async throws(TableStorageError) {
        var configuration = PostgresConnection.Configuration(
            host: location.host, port: location.port, username: location.user, password: location.password,
            database: location.database, tls: .disable)
        configuration.options.connectTimeout = .seconds(5)
        let connection: PostgresConnection
        do {
            connection = try await PostgresConnection.connect(
                configuration: configuration, id: 0, logger: Self.logger)
        } catch {
            throw TableStorageError(
                code: .storage, message: "cannot connect to PostgreSQL at \(location.display): \(Self.explain(error))")
        }
        do {
            try await connection.query("BEGIN", logger: Self.logger)
            _ = try await Self.rows(
                connection, "SELECT pg_advisory_xact_lock(hashtext('flatland_tables'), hashtext(?))",
                [.text(location.schema)])
            for sql in migration(tables) { _ = try await Self.rows(connection, sql) }
            try await connection.query("COMMIT", logger: Self.logger)
            try await connection.close()
            schemas.withLock { schemas in
                for table in tables { schemas[table.name] = table.schema }
            }
        } catch {
            try? await connection.close()
            throw TableStorageError(
                code: .storage,
                message: "cannot prepare the tables in PostgreSQL at \(location.display): \(Self.explain(error))")
        }
    }

    /// Drops the schema and everything in it (a schema made for one benchmark run).
    func dropSchema() async throws(TableStorageError) {
        do {
            try await client.withConnection { connection in
                _ = try await Self.rows(connection, "DROP SCHEMA IF EXISTS \(schema) CASCADE")
            }
        } catch {
            throw Self.storageError(error)
        }
    }

    // MARK: Rows

    private static let columns = "id, created_at, updated_at, version, deleted, data::text, owner"

    private static func decode(_ row: PostgresRow) throws -> (row: TableRow, owner: String?) {
        let (id, createdAt, updatedAt, version, deleted, data, owner) = try row.decode(
            (String, Int64, Int64, Int64, Bool, String, String?).self)
        guard case .object(let fields) = try JSONValue(parsing: data) else {
            throw TableStorageError(code: .storage, message: "a stored row is not a JSON object")
        }
        return (
            TableRow(
                id: id, createdAt: createdAt, updatedAt: updatedAt, version: version, deleted: deleted, fields: fields),
            owner
        )
    }

    /// The row with this id and its owner, whoever that is.
    private func fetchOwned(_ connection: PostgresConnection, _ table: String, id: String) async throws -> (
        row: TableRow, owner: String?
    )? {
        try await Self.rows(
            connection, "SELECT \(Self.columns) FROM \(sqlTable(table)) WHERE id = ?", [.text(id)]
        ).first.map(Self.decode)
    }

    /// The clock's next tick as a common table expression named `clock` (`updated_at`,
    /// `version`): the database clock in microseconds, or one past the last one, and the next
    /// version. The clock's row stays locked until the transaction ends, so commits come in
    /// `updatedAt` order. A write ticks in the statement that writes the row: one round trip.
    private var tickCTE: String {
        """
        WITH clock AS (
            UPDATE \(schema).flatland_table_clock
            SET updated_at = greatest(floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint, updated_at + 1)
            WHERE id = 1 RETURNING updated_at, nextval('\(schema).flatland_table_version') AS version)
        """
    }

    /// Inserts a row (ticking the clock in the same statement); an id taken (by this owner's
    /// row or another's, or by another instance meanwhile) is ``TableStorageError/Code/exists``.
    private func insert(
        _ connection: PostgresConnection, _ table: String, id: String, fields: JSONObject, owner: String?
    ) async throws -> TableRow {
        let inserted = try await Self.rows(
            connection,
            """
            \(tickCTE)
            INSERT INTO \(sqlTable(table)) (id, created_at, updated_at, version, deleted, data, owner)
            SELECT ?, updated_at, updated_at, version, false, ?::json, ? FROM clock
            ON CONFLICT (id) DO NOTHING RETURNING updated_at, version
            """,
            [.text(id), .text(JSONValue.object(fields).jsonString()), owner.map(SQLArgument.text) ?? .null])
        guard let written = inserted.first else {
            let existing = try await fetchOwned(connection, table, id: id)
            // Another owner's row is not shown: only that the id is taken.
            let visible = existing.map { owner == nil || $0.owner == owner } ?? false
            throw TableStorageError(
                code: .exists, message: "an item with id '\(id)' exists", current: visible ? existing?.row : nil)
        }
        let (updatedAt, version) = try written.decode((Int64, Int64).self)
        return TableRow(
            id: id, createdAt: updatedAt, updatedAt: updatedAt, version: version, deleted: false, fields: fields)
    }

    func row(_ table: String, id: String, owner: String?) async throws(TableStorageError) -> TableRow? {
        try await read { connection in
            try await fetchOwned(connection, table, id: id).flatMap { owner == nil || $0.owner == owner ? $0.row : nil }
        }
    }

    /// A write that found the row changed between reading it and writing it (another instance
    /// wrote it), or its idempotency key recorded meanwhile: the transaction is rolled back and
    /// the write tried again from the read.
    private struct LostRace: Error {}

    /// The database clock in microseconds, as the idempotency records' times are kept.
    private static let clockMicros = "floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint"

    /// Applies `writes` (see ``TableStorage``). Several go in one transaction that takes the
    /// clock's row first: no other writer (of any instance) commits meanwhile, so the checks of
    /// each write hold until the commit and a write refused changed nothing but the clock. Should
    /// that transaction fail all the same (a race lost, a statement failed), it is rolled back
    /// whole and each write is applied on its own instead.
    func apply(_ writes: [TableWrite]) async -> [Result<TableRow, TableStorageError>] {
        if writes.count > 1 {
            do {
                return try await attempt { connection in
                    try await lockClock(connection)
                    var results: [Result<TableRow, TableStorageError>] = []
                    results.reserveCapacity(writes.count)
                    var index = 0
                    while index < writes.count {
                        // A run of inserts goes in a few statements, whatever its length.
                        var end = index
                        while end < writes.count, case .insert = writes[end].kind,
                            writes[end].table == writes[index].table
                        {
                            end += 1
                        }
                        if end - index > 1 {
                            results += try await insertAll(connection, Array(writes[index..<end]))
                            index = end
                            continue
                        }
                        do {
                            results.append(.success(try await keyed(connection, writes[index])))
                        } catch let error as TableStorageError {
                            results.append(.failure(error))
                        }
                        index += 1
                    }
                    return results
                }
            } catch {
                // Rolled back: nothing of the batch was written. Each write on its own below.
            }
        }
        var results: [Result<TableRow, TableStorageError>] = []
        for write in writes {
            do throws(TableStorageError) {
                results.append(.success(try await single(write)))
            } catch {
                results.append(.failure(error))
            }
        }
        return results
    }

    /// A run of inserts into one table inside a batch's transaction (the clock's row held): their keys'
    /// records read in one statement, the rows written in one (each with its own tick of the
    /// clock and its own version), the new records in one. Each insert answers as it would on
    /// its own: a key already used is ``TableStorageError/Code/replayed``, an id taken is
    /// ``TableStorageError/Code/exists`` (a second insert of an id in the run too). A key given
    /// twice in the run: each insert on its own, in order.
    private func insertAll(_ connection: PostgresConnection, _ writes: [TableWrite]) async throws
        -> [Result<TableRow, TableStorageError>]
    {
        let keyed = writes.compactMap(\.idempotency)
        if Set(keyed.map { [$0.scope, $0.key] }).count < keyed.count {
            var results: [Result<TableRow, TableStorageError>] = []
            for write in writes {
                do {
                    results.append(.success(try await self.keyed(connection, write)))
                } catch let error as TableStorageError {
                    results.append(.failure(error))
                }
            }
            return results
        }
        var results = [Result<TableRow, TableStorageError>?](repeating: nil, count: writes.count)
        // The keys used before: answered from their records.
        if !keyed.isEmpty {
            var binds = PostgresBindings()
            binds.append(keyed.map(\.scope))
            binds.append(keyed.map(\.key))
            let sql = """
                SELECT scope, key, row_id, created_at, updated_at, version, deleted, data::text, method, path, status
                FROM \(schema).flatland_table_idempotency
                WHERE (scope, key) IN (SELECT * FROM unnest($1::text[], $2::text[]))
                AND expires_at > \(Self.clockMicros)
                """
            var records: [[String]: TableIdempotencyRecord] = [:]
            for found in try await connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: Self.logger)
                .collect()
            {
                let (scope, key, id, createdAt, updatedAt, version, deleted, data, method, path, status) =
                    try found.decode(
                        (String, String, String, Int64, Int64, Int64, Bool, String, String, String, Int).self)
                records[[scope, key]] = try TableIdempotencyRecord.stored(
                    method: method, path: path, status: status, id: id, createdAt: createdAt, updatedAt: updatedAt,
                    version: version, deleted: deleted, data: data)
            }
            for (index, write) in writes.enumerated() {
                guard let key = write.idempotency, var record = records[[key.scope, key.key]] else { continue }
                // A record without its row's copy: the row as it is now, if its version is the same.
                if !record.complete, let found = try await fetchOwned(connection, write.table, id: record.row.id),
                    write.owner == nil || found.owner == write.owner, found.row.version == record.row.version
                {
                    record.row = found.row
                    record.complete = true
                }
                results[index] = .failure(
                    TableStorageError(
                        code: .replayed, message: "the idempotency key '\(key.key)' was used before", replay: record))
            }
        }
        let pending = writes.indices.filter { results[$0] == nil }
        guard !pending.isEmpty else { return results.map { $0! } }
        // Fresh versions, ascending, for the rows in order (nobody else ticks: the clock is held).
        let versions = try await connection.query(
            PostgresQuery(
                unsafeSQL:
                    "SELECT nextval('\(schema).flatland_table_version') FROM generate_series(1, \(pending.count))",
                binds: PostgresBindings()),
            logger: Self.logger
        ).collect().map { try $0.decode(Int64.self) }.sorted()
        let fields = pending.map { index -> JSONObject in
            if case .insert(let f) = writes[index].kind { return f }
            return JSONObject()
        }
        var binds = PostgresBindings()
        binds.append(pending.map { writes[$0].id })
        binds.append(fields.map { JSONValue.object($0).jsonString() })
        binds.append(pending.map { writes[$0].owner ?? "" })
        binds.append(versions)
        binds.append(Int64(pending.count))
        let insert = """
            WITH input AS (
                SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) WITH ORDINALITY
                AS i(id, data, owner, version, n)),
            clock AS (
                UPDATE \(schema).flatland_table_clock
                SET updated_at = greatest(\(Self.clockMicros), updated_at + 1) + $5 - 1
                WHERE id = 1 RETURNING updated_at - ($5 - 1) AS first)
            INSERT INTO \(sqlTable(writes[0].table)) (id, created_at, updated_at, version, deleted, data, owner)
            SELECT i.id, c.first + i.n - 1, c.first + i.n - 1, i.version, false, i.data::json, NULLIF(i.owner, '')
            FROM input i, clock c ORDER BY i.n
            ON CONFLICT (id) DO NOTHING RETURNING id, updated_at, version
            """
        var written: [String: (updatedAt: Int64, version: Int64)] = [:]
        for row in try await connection.query(PostgresQuery(unsafeSQL: insert, binds: binds), logger: Self.logger)
            .collect()
        {
            let (id, updatedAt, version) = try row.decode((String, Int64, Int64).self)
            written[id] = (updatedAt, version)
        }
        var remembered: [(TableIdempotency, TableRow)] = []
        for (position, index) in pending.enumerated() {
            let write = writes[index]
            // The first insert of an id took it; a later one in the run, or one of an id that
            // was there, finds it taken.
            if let tick = written.removeValue(forKey: write.id), tick.version == versions[position] {
                let row = TableRow(
                    id: write.id, createdAt: tick.updatedAt, updatedAt: tick.updatedAt, version: tick.version,
                    deleted: false, fields: fields[position])
                results[index] = .success(row)
                if let key = write.idempotency { remembered.append((key, row)) }
            } else {
                let existing = try await fetchOwned(connection, write.table, id: write.id)
                // Another owner's row is not shown: only that the id is taken.
                let visible = existing.map { write.owner == nil || $0.owner == write.owner } ?? false
                results[index] = .failure(
                    TableStorageError(
                        code: .exists, message: "an item with id '\(write.id)' exists",
                        current: visible ? existing?.row : nil))
            }
        }
        if !remembered.isEmpty { try await rememberAll(connection, remembered) }
        return results.map { $0! }
    }

    /// Records writes under their keys in one statement, each over an expired record of its key
    /// if there is one; a live record another instance made meanwhile is a lost race. When a
    /// version among them is a multiple of 128, the records past their time are pruned.
    private func rememberAll(_ connection: PostgresConnection, _ records: [(TableIdempotency, TableRow)]) async throws {
        var binds = PostgresBindings()
        binds.append(records.map(\.0.scope))
        binds.append(records.map(\.0.key))
        binds.append(records.map(\.0.method))
        binds.append(records.map(\.0.path))
        binds.append(records.map { Int64($0.0.status) })
        binds.append(records.map(\.1.id))
        binds.append(records.map(\.1.createdAt))
        binds.append(records.map(\.1.updatedAt))
        binds.append(records.map(\.1.version))
        binds.append(records.map(\.1.deleted))
        binds.append(records.map { $0.0.kept(JSONValue.object($0.1.fields).jsonString()) })
        binds.append(records.map(\.0.ttl))
        let table = "\(schema).flatland_table_idempotency"
        let sql = """
            INSERT INTO \(table) AS r
            (scope, key, method, path, status, row_id, created_at, updated_at, version, deleted, data, expires_at)
            SELECT scope, key, method, path, status, row_id, created_at, updated_at, version, deleted, data::json,
                \(Self.clockMicros) + ttl
            FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[], $7::bigint[],
                $8::bigint[], $9::bigint[], $10::boolean[], $11::text[], $12::bigint[])
                AS i(scope, key, method, path, status, row_id, created_at, updated_at, version, deleted, data, ttl)
            ON CONFLICT (scope, key) DO UPDATE SET
                method = excluded.method, path = excluded.path, status = excluded.status, row_id = excluded.row_id,
                created_at = excluded.created_at, updated_at = excluded.updated_at, version = excluded.version,
                deleted = excluded.deleted, data = excluded.data, expires_at = excluded.expires_at
            WHERE r.expires_at <= \(Self.clockMicros)
            RETURNING key
            """
        let recorded = try await connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: Self.logger)
            .collect()
        guard recorded.count == records.count else { throw LostRace() }
        // Each scope keeps its newest records only (TableIdempotency.maxPerScope).
        for (scope, cap) in Set(records.map { [$0.0.scope, String($0.0.maxPerScope)] }).map({ ($0[0], Int($0[1]) ?? 0) }
        ) {
            _ = try await Self.rows(
                connection,
                """
                DELETE FROM \(table) WHERE scope = ? AND expires_at <= (
                    SELECT expires_at FROM \(table) WHERE scope = ? ORDER BY expires_at DESC LIMIT 1 OFFSET ?)
                """, [.text(scope), .text(scope), .integer(Int64(cap))])
        }
        if records.contains(where: { $0.1.version % 128 == 0 }) {
            _ = try await Self.rows(connection, "DELETE FROM \(table) WHERE expires_at <= \(Self.clockMicros)")
        }
    }

    /// Takes the clock's row for the rest of the transaction. Every write takes it before any
    /// other lock (a write's own tick, in the statement that writes its row, is the first lock
    /// it takes), so two writers never wait for each other's rows (no deadlock).
    private func lockClock(_ connection: PostgresConnection) async throws {
        _ = try await Self.rows(connection, "SELECT id FROM \(schema).flatland_table_clock WHERE id = 1 FOR UPDATE")
    }

    /// One write in a transaction of its own. Two instances writing under one key at once: the
    /// second's record waits for the first's commit and then finds it, so its write is rolled
    /// back and tried again, and answered from the first's record. A lost race with another
    /// writer of the row is tried again the same way.
    private func single(_ write: TableWrite) async throws(TableStorageError) -> TableRow {
        for _ in 0..<100 {
            do {
                // Its own tick is the first lock it takes (see lockClock).
                return try await attempt { connection in try await keyed(connection, write) }
            } catch is LostRace {
                continue
            } catch {
                throw Self.storageError(error)
            }
        }
        throw TableStorageError(code: .storage, message: "the item kept changing while it was written")
    }

    /// One write under its idempotency key (see ``TableStorage``): a live record of the key
    /// answers instead (``TableStorageError/Code/replayed``), and a write that succeeds is
    /// recorded with it.
    private func keyed(_ connection: PostgresConnection, _ write: TableWrite) async throws -> TableRow {
        if let idempotency = write.idempotency, var record = try await remembered(connection, idempotency) {
            // A record without its row's copy: the row as it is now, if its version is the same.
            if !record.complete, let found = try await fetchOwned(connection, write.table, id: record.row.id),
                write.owner == nil || found.owner == write.owner, found.row.version == record.row.version
            {
                record.row = found.row
                record.complete = true
            }
            throw TableStorageError(
                code: .replayed, message: "the idempotency key '\(idempotency.key)' was used before", replay: record)
        }
        let row: TableRow
        switch write.kind {
        case .insert(let fields):
            do {
                row = try await insert(connection, write.table, id: write.id, fields: fields, owner: write.owner)
            } catch let error as TableStorageError where error.code == .exists {
                // The same keyed insert sent twice at once: the other one's insert made this one
                // wait and find the id taken, and its record is committed with it. It answers.
                if let idempotency = write.idempotency, let record = try await remembered(connection, idempotency) {
                    throw TableStorageError(
                        code: .replayed, message: "the idempotency key '\(idempotency.key)' was used before",
                        replay: record)
                }
                throw error
            }
        case .update(let fields, let replace, let allowDeleted):
            row = try await self.write(connection, write, allowDeleted: allowDeleted) { row in
                row.fields = replace ? fields : row.fields.merging(fields)
                if let mark = write.deletedMark { row.deleted = mark }
            }
        case .delete(let soft):
            row = try await self.write(connection, write, allowDeleted: false, remove: !soft) { row in
                row.deleted = true
            }
        case .undelete:
            row = try await self.write(connection, write, allowDeleted: true) { row in row.deleted = false }
        }
        if let idempotency = write.idempotency { try await remember(connection, idempotency, row) }
        return row
    }

    /// The live record of a key, if any.
    private func remembered(_ connection: PostgresConnection, _ key: TableIdempotency) async throws
        -> TableIdempotencyRecord?
    {
        let sql = """
            SELECT row_id, created_at, updated_at, version, deleted, data::text, method, path, status
            FROM \(schema).flatland_table_idempotency
            WHERE scope = ? AND key = ? AND expires_at > \(Self.clockMicros)
            """
        guard let found = try await Self.rows(connection, sql, [.text(key.scope), .text(key.key)]).first else {
            return nil
        }
        let (id, createdAt, updatedAt, version, deleted, data, method, path, status) = try found.decode(
            (String, Int64, Int64, Int64, Bool, String, String, String, Int).self)
        return try TableIdempotencyRecord.stored(
            method: method, path: path, status: status, id: id, createdAt: createdAt, updatedAt: updatedAt,
            version: version, deleted: deleted, data: data)
    }

    /// Records a write under its key (``rememberAll(_:_:)`` of one).
    private func remember(_ connection: PostgresConnection, _ key: TableIdempotency, _ row: TableRow) async throws {
        try await rememberAll(connection, [(key, row)])
    }

    /// Reads the row a write is about, checks it (exists for this owner, not deleted where that
    /// matters, the expected version), lets `change` make the new row, and writes it with
    /// `UPDATE … WHERE id = $1 AND version = $2` (or deletes it): a row changed meanwhile is a
    /// lost race, retried, so the check is made again on the new row.
    private func write(
        _ connection: PostgresConnection, _ write: TableWrite, allowDeleted: Bool, remove: Bool = false,
        _ change: (inout TableRow) -> Void
    ) async throws -> TableRow {
        let (table, id, owner) = (write.table, write.id, write.owner)
        guard let found = try await fetchOwned(connection, table, id: id), owner == nil || found.owner == owner else {
            throw TableStorageError(code: .notFound, message: "The item does not exist")
        }
        var row = found.row
        if row.deleted, !allowDeleted {
            throw TableStorageError(code: .deleted, message: "The item is deleted", current: row)
        }
        if write.preconditionFails(row) {
            throw TableStorageError(
                code: .versionMismatch, message: "the item has changed since version was read", current: row)
        }
        let read = row.version
        let written: [PostgresRow]
        if remove {
            // It ticks too: every write takes the clock's row before any other lock.
            written = try await Self.rows(
                connection,
                "\(tickCTE) DELETE FROM \(sqlTable(table)) WHERE id = ? AND version = ? AND EXISTS (SELECT 1 FROM clock) "
                    + "RETURNING updated_at, version",
                [.text(id), .integer(read)])
        } else {
            change(&row)
            written = try await Self.rows(
                connection,
                """
                \(tickCTE)
                UPDATE \(sqlTable(table)) AS t
                SET updated_at = clock.updated_at, version = clock.version, deleted = ?, data = ?::json FROM clock
                WHERE t.id = ? AND t.version = ? RETURNING t.updated_at, t.version
                """,
                [.bool(row.deleted), .text(JSONValue.object(row.fields).jsonString()), .text(id), .integer(read)])
        }
        guard let first = written.first else { throw LostRace() }
        if !remove { (row.updatedAt, row.version) = try first.decode((Int64, Int64).self) }
        return row
    }

    func query(_ table: String, _ query: TableRowQuery, wire: TableWire) async throws(TableStorageError) -> (
        rows: [TableRow], count: Int?
    ) {
        let (select, count) = try statements(table, query, wire: wire)
        return try await queryRead { connection in
            let rows = try await Self.rows(connection, select.sql, select.arguments).map { try Self.decode($0).row }
            return (rows, try await Self.count(connection, count, if: query.includeCount))
        }
    }

    /// The number of a query's rows, when asked for.
    private static func count(_ connection: PostgresConnection, _ count: SQLFragment, if asked: Bool) async throws
        -> Int?
    {
        guard asked else { return nil }
        return Int(try await rows(connection, count.sql, count.arguments).first?.decode(Int64.self) ?? 0)
    }

    /// The list route's rows written straight from their stored text (see
    /// ``TableRow/encoded(id:storedFields:createdAt:updatedAt:version:deleted:_:using:)``); with a
    /// field selection, read as values.
    func encodedQuery(_ table: String, _ query: TableRowQuery, wire: TableWire, select: [String]?)
        async throws(TableStorageError) -> (rows: [[UInt8]], count: Int?)
    {
        try TableRowQuery.checkSelect(select, columns(table, wire))
        guard select == nil else {
            let (rows, count) = try await self.query(table, query, wire: wire)
            return (TableRow.encoded(rows, wire, select: select), count)
        }
        let (select, count) = try statements(table, query, wire: wire)
        return try await queryRead { connection in
            var writer = JSONWriter()
            var rows: [[UInt8]] = []
            for row in try await Self.rows(connection, select.sql, select.arguments) {
                let (id, createdAt, updatedAt, version, deleted, data, _) = try row.decode(
                    (String, Int64, Int64, Int64, Bool, String, String?).self)
                guard
                    let bytes = TableRow.encoded(
                        id: id, storedFields: data, createdAt: createdAt, updatedAt: updatedAt, version: version,
                        deleted: deleted, wire, using: &writer)
                else {
                    throw TableStorageError(code: .storage, message: "a stored row is not a JSON object")
                }
                rows.append(bytes)
            }
            return (rows, try await Self.count(connection, count, if: query.includeCount))
        }
    }

    /// The `SELECT` of a query's rows, and the one of their number.
    private func statements(_ table: String, _ query: TableRowQuery, wire: TableWire) throws(TableStorageError) -> (
        rows: SQLFragment, count: SQLFragment
    ) {
        let (condition, order) = try query.sql(columns(table, wire))
        let t = sqlTable(table)
        let select =
            SQLFragment("SELECT \(Self.columns) FROM \(t) WHERE ") + condition + SQLFragment(" ORDER BY ") + order
            + SQLFragment(" LIMIT \(max(0, query.top)) OFFSET \(max(0, query.skip))")
        return (select, SQLFragment("SELECT count(*) FROM \(t) WHERE ") + condition)
    }

    /// PostgreSQL's plan for a query's rows (`EXPLAIN`), one line per step: how a page is read.
    func plan(_ table: String, _ query: TableRowQuery, wire: TableWire) async throws(TableStorageError) -> String {
        let select = try statements(table, query, wire: wire).rows
        return try await read { connection in
            try await Self.rows(connection, "EXPLAIN " + select.sql, select.arguments).map {
                try $0.decode(String.self)
            }
            .joined(separator: "\n")
        }
    }
}

extension JSONObject {
    /// These members with `other`'s written over them (a PATCH): a member already here keeps
    /// its place, a new one goes at the end.
    func merging(_ other: JSONObject) -> JSONObject {
        var merged = self
        for (key, value) in other.members {
            if let i = merged.members.firstIndex(where: { $0.key == key }) {
                merged.members[i].value = value
            } else {
                merged.members.append((key: key, value: value))
            }
        }
        return merged
    }
}

/// Where a PostgreSQL storage connects, from a `postgres://` (or `postgresql://`) URL:
/// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?schema=NAME]`.
struct PostgresLocation: Sendable, Equatable {
    var host: String
    var port: Int
    var user: String
    var password: String?
    var database: String
    /// The schema the tables live in (`public` by default).
    var schema: String

    /// Whether `text` is a PostgreSQL URL rather than a file path.
    static func isURL(_ text: String) -> Bool {
        let lower = text.lowercased()
        return lower.hasPrefix("postgres://") || lower.hasPrefix("postgresql://")
    }

    /// The URL without its password, to name the database in a message.
    var display: String { "postgres://\(user)@\(host):\(port)/\(database)?schema=\(schema)" }

    init(url text: String) throws(TableStorageError) {
        func bad(_ why: String) -> TableStorageError {
            TableStorageError(code: .badQuery, message: "not a PostgreSQL URL: \(why)")
        }
        guard Self.isURL(text), let schemeEnd = text.range(of: "://") else {
            throw bad("expected postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?schema=NAME]")
        }
        let rest = text[schemeEnd.upperBound...]
        let (beforeQuery, query) = Self.split(rest, at: "?")
        let (authority, path) = Self.split(beforeQuery, at: "/")
        guard let at = authority.lastIndex(of: "@") else { throw bad("no user (USER@HOST)") }
        let (userText, passwordText) = Self.split(authority[..<at], at: ":")
        var (host, portText) = Self.split(authority[authority.index(after: at)...], at: ":")
        if host.hasPrefix("[") {  // [IPv6]:PORT
            guard let close = authority.lastIndex(of: "]"), close > at else { throw bad("an unclosed [ in the host") }
            host = authority[authority.index(after: at)...close]
            let after = authority[authority.index(after: close)...]
            portText = after.hasPrefix(":") ? after.dropFirst() : nil
        }
        guard let user = userText.removingPercentEncoding, !user.isEmpty else { throw bad("no user (USER@HOST)") }
        guard !host.isEmpty else { throw bad("no host") }
        var port = 5432
        if let portText {
            guard let n = Int(portText), (1...65535).contains(n) else {
                throw bad("the port '\(portText)' is not a number from 1 to 65535")
            }
            port = n
        }
        guard let database = path.flatMap({ $0.removingPercentEncoding }), !database.isEmpty, !database.contains("/")
        else { throw bad("no database name (HOST/DATABASE)") }
        var schema = "public"
        for item in (query ?? "").split(separator: "&") {
            let (name, value) = Self.split(item, at: "=")
            switch (name, value) {
            case ("schema", let value?):
                guard Self.isIdentifier(String(value)) else {
                    throw bad("the schema '\(value)' is not a name (letters, digits and _, at most 63)")
                }
                schema = String(value)
            case ("sslmode", "disable"): break
            default: throw bad("'\(name)' is not an option here (schema=NAME, sslmode=disable)")
            }
        }
        self.host = String(host.hasPrefix("[") ? host.dropFirst().dropLast() : host)
        self.port = port
        self.user = user
        self.password = passwordText.flatMap { $0.removingPercentEncoding }
        self.database = database
        self.schema = schema
    }

    /// `text` before the first `separator`, and after it (nil when there is none).
    private static func split(_ text: Substring, at separator: Character) -> (Substring, Substring?) {
        guard let i = text.firstIndex(of: separator) else { return (text, nil) }
        return (text[..<i], text[text.index(after: i)...])
    }

    /// A lowercase-safe SQL identifier: a letter or `_`, then letters, digits or `_`.
    static func isIdentifier(_ name: String) -> Bool {
        guard let first = name.utf8.first, name.utf8.count <= 63, !(0x30...0x39).contains(first) else { return false }
        return name.utf8.allSatisfy { b in
            (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) || (0x30...0x39).contains(b) || b == 0x5F
        }
    }
}
