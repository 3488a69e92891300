import FlatlandJSON
import Foundation
import GRDB

/// The operation queue, the delta tokens and the tables' settings, as SQL on the session's own
/// SQLite file: every function runs inside a transaction the caller holds (the store's commit),
/// so a local write and its operation are written together or not at all.
enum SyncQueue {
    static let schema = [
        """
        CREATE TABLE IF NOT EXISTS flatland_sync_operations (
            sequence INTEGER PRIMARY KEY AUTOINCREMENT,
            table_name TEXT NOT NULL,
            item_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            state TEXT NOT NULL DEFAULT 'pending',
            version TEXT,
            item BLOB,
            changes INTEGER NOT NULL DEFAULT 1,
            status INTEGER,
            server_item BLOB,
            raw_body BLOB,
            error TEXT
        )
        """,
        "CREATE INDEX IF NOT EXISTS flatland_sync_operations_item ON flatland_sync_operations (table_name, item_id)",
        """
        CREATE TABLE IF NOT EXISTS flatland_sync_tokens (
            table_name TEXT NOT NULL, query_id TEXT NOT NULL, token TEXT NOT NULL,
            PRIMARY KEY (table_name, query_id)
        )
        """,
        """
        CREATE TABLE IF NOT EXISTS flatland_sync_tables (
            table_name TEXT PRIMARY KEY, server_ids INTEGER NOT NULL DEFAULT 0
        )
        """,
    ]

    /// The version of the queue's tables this code reads and writes (kept in
    /// `flatland_sync_schema`). 1: the tables before the version was kept; 2: the operation's
    /// `maybe_applied`, the `uncertain` state and this table.
    static let schemaVersion = 2

    /// Creates the queue's tables, or brings an older file's up to ``schemaVersion``.
    ///
    /// - Throws: ``SyncErrorCode/unsupportedSchema`` for a file a newer version wrote (it is
    ///   left as it is).
    static func create(_ db: Database) throws {
        try db.execute(sql: "CREATE TABLE IF NOT EXISTS flatland_sync_schema (version INTEGER NOT NULL)")
        let found = try Int.fetchOne(db, sql: "SELECT max(version) FROM flatland_sync_schema")
        if let found, found > schemaVersion {
            throw SyncError(
                .unsupportedSchema,
                "the sync tables are at schema version \(found), written by a newer version of Flatland; this one knows up to \(schemaVersion) and leaves them as they are"
            )
        }
        for statement in schema + [LocalID.schema] { try db.execute(sql: statement) }
        // The idempotency key of each operation's request; a file written before keys existed
        // gains the column, and a key for each operation it holds.
        let columns = try db.columns(in: "flatland_sync_operations").map(\.name)
        if !columns.contains("key") {
            try db.execute(sql: "ALTER TABLE flatland_sync_operations ADD COLUMN key TEXT")
        }
        if !columns.contains("sent_row") {
            try db.execute(sql: "ALTER TABLE flatland_sync_operations ADD COLUMN sent_row BLOB")
        }
        if !columns.contains("maybe_applied") {
            try db.execute(
                sql: "ALTER TABLE flatland_sync_operations ADD COLUMN maybe_applied INTEGER NOT NULL DEFAULT 0")
            // Version 1 kept no such fact: an operation sent with no answer may have been applied.
            try db.execute(sql: "UPDATE flatland_sync_operations SET maybe_applied = 1 WHERE state = 'attempted'")
        }
        try db.execute(sql: "UPDATE flatland_sync_operations SET key = \(newKeySQL) WHERE key IS NULL")
        // A changed operation is a new request (another row, kind, id or If-Match): a new key, so
        // that the server does not answer it with the answer to the old one. A replay of the
        // same request (a retry, the next push) keeps its key.
        try db.execute(
            sql: """
                CREATE TRIGGER IF NOT EXISTS flatland_sync_operations_rekey
                AFTER UPDATE OF item_id, kind, version, item, changes ON flatland_sync_operations
                BEGIN
                    UPDATE flatland_sync_operations SET key = \(newKeySQL) WHERE sequence = NEW.sequence;
                END
                """)
        if found != schemaVersion {
            try db.execute(sql: "DELETE FROM flatland_sync_schema")
            try db.execute(sql: "INSERT INTO flatland_sync_schema (version) VALUES (?)", arguments: [schemaVersion])
        }
    }

    /// The schema version the file's queue is at.
    static func storedSchemaVersion(_ db: Database) throws -> Int? {
        try Int.fetchOne(db, sql: "SELECT max(version) FROM flatland_sync_schema")
    }

    /// A fresh random key in SQL: a version-4 UUID's text.
    static let newKeySQL = """
        (lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4' || substr(lower(hex(randomblob(2))), 2) \
        || '-' || substr('89ab', 1 + (abs(random()) % 4), 1) || substr(lower(hex(randomblob(2))), 2) || '-' \
        || lower(hex(randomblob(6))))
        """

    // MARK: Reading

    /// The columns every read of an operation selects, in this order: ``operation(_:)`` reads
    /// them by position (by name, GRDB lowercases and compares every column's name for each
    /// value: a sixth of a batched push's CPU went to reading its operations).
    private enum Column: Int, CaseIterable {
        case sequence, tableName, itemID, kind, state, version, item, changes, status, serverItem, rawBody, error, key,
            maybeApplied, sentRow

        var name: String {
            switch self {
            case .sequence: "sequence"
            case .tableName: "table_name"
            case .itemID: "item_id"
            case .kind: "kind"
            case .state: "state"
            case .version: "version"
            case .item: "item"
            case .changes: "changes"
            case .status: "status"
            case .serverItem: "server_item"
            case .rawBody: "raw_body"
            case .error: "error"
            case .key: "key"
            case .maybeApplied: "maybe_applied"
            case .sentRow: "sent_row"
            }
        }
    }

    static let columns = Column.allCases.map(\.name).joined(separator: ", ")

    /// An operation from a row that selected ``columns``.
    ///
    /// - Throws: ``SyncErrorCode/unknownOperation`` for a kind or a state this version does not
    ///   know (a newer one wrote it): such a row is never read as something else, nor sent.
    static func operation(_ row: Row) throws(SyncError) -> SyncOperation {
        // Each column read with its concrete type: GRDB then reads it straight from the
        // statement (a generic read went through metadata lookups and a `DatabaseValue` for
        // each of the fifteen columns of every operation).
        func text(_ column: Column) -> String? { row[column.rawValue] as String? }
        func object(_ column: Column) -> JSONObject? {
            guard let bytes = row[column.rawValue] as Data?,
                case .object(let o)? = try? JSONValue(parsing: Array(bytes))
            else { return nil }
            return o
        }
        let sequence = row[Column.sequence.rawValue] as Int64
        let table = row[Column.tableName.rawValue] as String
        let stateText = text(.state) ?? ""
        let kind = try self.kind(text(.kind), sequence: sequence, table: table)
        guard let state = SyncOperation.State(rawValue: stateText) else {
            throw SyncError(
                .unknownOperation,
                "operation \(sequence) of table \(table) has state '\(stateText)', which this version of Flatland does not know: it is not sent (cancel it to go on)",
                table: table)
        }
        return SyncOperation(
            sequence: sequence, table: table, itemID: row[Column.itemID.rawValue] as String, kind: kind, state: state,
            version: text(.version), item: object(.item), changes: row[Column.changes.rawValue] as Int,
            status: row[Column.status.rawValue] as Int?, serverItem: object(.serverItem),
            rawBody: (row[Column.rawBody.rawValue] as Data?).map { Array($0) }, error: text(.error),
            key: text(.key) ?? "",
            mayHaveBeenApplied: (row[Column.maybeApplied.rawValue] as Int64?).map { $0 != 0 } ?? false,
            sentRow: object(.sentRow))
    }

    /// The operations `statement` selects (its columns: ``columns``), each read strictly
    /// (``operation(_:)``) from the statement itself as it steps, those that `keep` keeps.
    private static func operations(
        _ statement: Statement, _ arguments: StatementArguments = [], keep: (Int64) -> Bool = { _ in true }
    ) throws -> [SyncOperation] {
        var result: [SyncOperation] = []
        let rows = try Row.fetchCursor(statement, arguments: arguments)
        while let row = try rows.next() {
            guard keep(row[Column.sequence.rawValue] as Int64) else { continue }
            result.append(try operation(row))
        }
        return result
    }

    /// Every operation, in queue order; only `table`'s when given.
    static func operations(_ db: Database, table: String? = nil) throws -> [SyncOperation] {
        if let table {
            return try operations(
                db.cachedStatement(
                    sql: "SELECT \(columns) FROM flatland_sync_operations WHERE table_name = ? ORDER BY sequence"),
                [table])
        }
        return try operations(
            db.cachedStatement(sql: "SELECT \(columns) FROM flatland_sync_operations ORDER BY sequence"))
    }

    /// The operation with this sequence number.
    static func operation(_ db: Database, sequence: Int64) throws -> SyncOperation? {
        guard
            let row = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT \(columns) FROM flatland_sync_operations WHERE sequence = ?"),
                arguments: [sequence])
        else { return nil }
        return try operation(row)
    }

    /// Whether the queue holds an operation with this sequence number, whatever it holds.
    static func exists(_ db: Database, sequence: Int64) throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM flatland_sync_operations WHERE sequence = ?)"),
            arguments: [sequence]) ?? false
    }

    /// An operation queued behind another of its row, as far as settling the earlier one's
    /// answer depends on it: which operation, what it does, how many changes it stands for.
    struct Later: Hashable, Sendable {
        var sequence: Int64
        var kind: SyncOperation.Kind
        var changes: Int
    }

    /// ``later(_:table:itemID:after:)`` for each of `operations` (in their order), read in one
    /// statement per table and run of 500 rather than one per operation (a batch settles up to
    /// 300 answers at once, and reads this twice for each).
    ///
    /// - Throws: ``SyncErrorCode/unknownOperation`` for a kind this version does not know.
    static func later(_ db: Database, after operations: [SyncOperation]) throws -> [[Later]] {
        guard operations.count > 1 else {
            return try operations.map { try later(db, table: $0.table, itemID: $0.itemID, after: $0.sequence) }
        }
        var result = [[Later]](repeating: [], count: operations.count)
        let byTable = Dictionary(grouping: operations.indices, by: { operations[$0].table })
        for (table, indices) in byTable {
            for start in stride(from: 0, to: indices.count, by: 500) {
                let run = indices[start..<min(start + 500, indices.count)]
                let ids = Array(Set(run.map { operations[$0].itemID }))
                guard let low = run.map({ operations[$0].sequence }).min() else { continue }
                let list = Array(repeating: "?", count: ids.count).joined(separator: ", ")
                let statement = try db.makeStatement(
                    sql: """
                        SELECT sequence, item_id, kind, changes FROM flatland_sync_operations
                        WHERE table_name = ? AND sequence > ? AND item_id IN (\(list)) ORDER BY sequence
                        """)
                var behind: [String: [(sequence: Int64, kind: String?, changes: Int)]] = [:]
                let rows = try Row.fetchCursor(
                    statement,
                    arguments: StatementArguments([table, low] + ids.map { $0 as any DatabaseValueConvertible }))
                while let row = try rows.next() {
                    behind[row[1] as String, default: []].append(
                        (sequence: row[0] as Int64, kind: row[2] as String?, changes: row[3] as Int))
                }
                for index in run {
                    let operation = operations[index]
                    result[index] = try (behind[operation.itemID] ?? []).filter { $0.sequence > operation.sequence }
                        .map { found in
                            Later(
                                sequence: found.sequence,
                                kind: try kind(found.kind, sequence: found.sequence, table: table),
                                changes: found.changes)
                        }
                }
            }
        }
        return result
    }

    /// The operations of one row after `sequence`, in queue order: only what ``Later`` holds
    /// (settling an answer reads it twice an operation; reading whole operations parsed their
    /// items and sent rows for nothing).
    ///
    /// - Throws: ``SyncErrorCode/unknownOperation`` for a kind this version does not know.
    static func later(_ db: Database, table: String, itemID: String, after sequence: Int64) throws -> [Later] {
        let statement = try db.cachedStatement(
            sql: """
                SELECT sequence, kind, changes FROM flatland_sync_operations
                WHERE table_name = ? AND item_id = ? AND sequence > ? ORDER BY sequence
                """)
        // Stepped through a cursor and read from the statement (most answers have nothing
        // behind them: no row is copied for nothing).
        var found: [Later] = []
        let rows = try Row.fetchCursor(statement, arguments: [table, itemID, sequence])
        while let row = try rows.next() {
            let later = row[0] as Int64
            found.append(
                Later(
                    sequence: later, kind: try kind(row[1] as String?, sequence: later, table: table),
                    changes: row[2] as Int))
        }
        return found
    }

    /// A stored operation's kind, refused when this version does not know it (a newer one
    /// wrote it): such a row is never read as something else, nor sent.
    private static func kind(_ text: String?, sequence: Int64, table: String) throws(SyncError) -> SyncOperation.Kind {
        guard let kind = SyncOperation.Kind(rawValue: text ?? "") else {
            throw SyncError(
                .unknownOperation,
                "operation \(sequence) of table \(table) has kind '\(text ?? "")', which this version of Flatland does not know: it is not sent (cancel it to go on)",
                table: table)
        }
        return kind
    }

    /// The operations with these sequence numbers that are still queued, in queue order: one
    /// statement over their range.
    static func operations(_ db: Database, sequences: [Int64]) throws -> [SyncOperation] {
        guard let low = sequences.min(), let high = sequences.max() else { return [] }
        let wanted = Set(sequences)
        let statement = try db.cachedStatement(
            sql: "SELECT \(columns) FROM flatland_sync_operations WHERE sequence BETWEEN ? AND ? ORDER BY sequence")
        return try operations(statement, [low, high]) { wanted.contains($0) }
    }

    /// The operations of one row, in queue order.
    static func operations(_ db: Database, table: String, itemID: String) throws -> [SyncOperation] {
        try operations(
            db.cachedStatement(
                sql:
                    "SELECT \(columns) FROM flatland_sync_operations WHERE table_name = ? AND item_id = ? ORDER BY sequence"
            ),
            [table, itemID])
    }

    /// Whether an operation of the row comes after `sequence` in the queue.
    static func hasOperation(_ db: Database, table: String, itemID: String, after sequence: Int64) throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT EXISTS (SELECT 1 FROM flatland_sync_operations
                    WHERE table_name = ? AND item_id = ? AND sequence > ?)
                    """),
            arguments: [table, itemID, sequence]) ?? false
    }

    /// The server ids of `table`'s rows with an operation in the queue.
    static func pendingIDs(_ db: Database, table: String) throws -> Set<String> {
        Set(
            try String.fetchAll(
                db.cachedStatement(sql: "SELECT DISTINCT item_id FROM flatland_sync_operations WHERE table_name = ?"),
                arguments: [table]))
    }

    // MARK: Writing

    static func bytes(_ object: JSONObject?) -> Data? {
        guard let object else { return nil }
        var writer = JSONWriter()
        writer.value(.object(object))
        return Data(writer.bytes)
    }

    @discardableResult
    static func append(
        _ db: Database, table: String, itemID: String, kind: SyncOperation.Kind, version: String?, item: JSONObject?
    ) throws -> Int64 {
        try db.cachedStatement(
            sql:
                "INSERT INTO flatland_sync_operations (table_name, item_id, kind, version, item, key) VALUES (?, ?, ?, ?, ?, ?)"
        ).execute(arguments: [table, itemID, kind.rawValue, version, bytes(item), UUID().uuidString.lowercased()])
        return db.lastInsertedRowID
    }

    @discardableResult
    static func remove(_ db: Database, sequence: Int64) throws -> Bool {
        try db.cachedStatement(sql: "DELETE FROM flatland_sync_operations WHERE sequence = ?")
            .execute(arguments: [sequence])
        return db.changesCount > 0
    }

    /// Collapses a new change into the operation at `sequence`: its kind, version and item may
    /// change, it counts one change more, and it is pending again.
    static func collapse(
        _ db: Database, sequence: Int64, kind: SyncOperation.Kind, version: String?, item: JSONObject?
    ) throws {
        try db.cachedStatement(
            sql: """
                UPDATE flatland_sync_operations
                SET kind = ?, version = ?, item = ?, changes = changes + 1
                WHERE sequence = ?
                """
        ).execute(arguments: [kind.rawValue, version, bytes(item), sequence])
    }

    static func setState(_ db: Database, sequence: Int64, _ state: SyncOperation.State) throws {
        try db.cachedStatement(sql: "UPDATE flatland_sync_operations SET state = ? WHERE sequence = ?")
            .execute(arguments: [state.rawValue, sequence])
    }

    /// Applies `event` to the operation at `sequence` (``OperationLifecycle``), in the caller's
    /// transaction: the new state, or its removal. Returns the operation as it is now (nil when
    /// it left the queue or was not there). A ``OperationLifecycle/Event/send`` of an operation
    /// already attempted records that it may have been applied.
    @discardableResult
    static func apply(_ event: OperationLifecycle.Event, _ db: Database, sequence: Int64) throws -> SyncOperation? {
        guard let current = try operation(db, sequence: sequence) else { return nil }
        return try apply(event, db, current: current)
    }

    /// ``apply(_:_:sequence:)`` to `current`, the operation as the caller read it in this same
    /// transaction (a batch reads its run in one statement; reading each again parsed it twice).
    /// `sentRow`, when given, is kept as the data it is sent with (``setSentRow(_:sequence:_:)``)
    /// by the same statement.
    @discardableResult
    static func apply(
        _ event: OperationLifecycle.Event, _ db: Database, current: SyncOperation, sentRow: JSONObject? = nil
    ) throws -> SyncOperation? {
        let sequence = current.sequence
        guard let next = try OperationLifecycle.next(current.state, on: event) else {
            try remove(db, sequence: sequence)
            return nil
        }
        var maybeApplied = current.mayHaveBeenApplied
        switch event {
        case .send where current.state == .attempted, .answerLost, .refused(serverError: true), .held:
            maybeApplied = true
        case .released:
            maybeApplied = false
        default:
            break
        }
        var updated = current
        if let sentRow {
            try db.cachedStatement(
                sql: "UPDATE flatland_sync_operations SET state = ?, maybe_applied = ?, sent_row = ? WHERE sequence = ?"
            ).execute(arguments: [next.rawValue, maybeApplied ? 1 : 0, bytes(sentRow), sequence])
            updated.sentRow = sentRow
        } else {
            try db.cachedStatement(
                sql: "UPDATE flatland_sync_operations SET state = ?, maybe_applied = ? WHERE sequence = ?"
            ).execute(arguments: [next.rawValue, maybeApplied ? 1 : 0, sequence])
        }
        updated.state = next
        updated.mayHaveBeenApplied = maybeApplied
        return updated
    }

    /// Keeps the data a write is sent with: what it carries when sent again after a lost
    /// answer, what its own 409 or 412 is compared with, and what a lookup after a lost answer
    /// looks for, whatever the local row became since.
    static func setSentRow(_ db: Database, sequence: Int64, _ row: JSONObject) throws {
        try db.cachedStatement(sql: "UPDATE flatland_sync_operations SET sent_row = ? WHERE sequence = ?")
            .execute(arguments: [bytes(row), sequence])
    }

    static func setVersion(_ db: Database, sequence: Int64, _ version: String?) throws {
        try db.cachedStatement(sql: "UPDATE flatland_sync_operations SET version = ? WHERE sequence = ?")
            .execute(arguments: [version, sequence])
    }

    /// Records a refused attempt: failed, with the server's answer (``OperationLifecycle/Event/refused(serverError:)``).
    static func recordFailure(
        _ db: Database, sequence: Int64, status: Int?, serverItem: JSONObject?, rawBody: [UInt8], error: String,
        state: SyncOperation.State = .failed
    ) throws {
        let serverError = (status ?? 0) >= 500
        try db.cachedStatement(
            sql: """
                UPDATE flatland_sync_operations
                SET state = ?, status = ?, server_item = ?, raw_body = ?, error = ?,
                    maybe_applied = maybe_applied OR ?
                WHERE sequence = ?
                """
        ).execute(
            arguments: [state.rawValue, status, bytes(serverItem), Data(rawBody), error, serverError ? 1 : 0, sequence])
    }

    // MARK: Tokens and tables

    static func token(_ db: Database, table: String, queryID: String) throws -> String? {
        try String.fetchOne(
            db.cachedStatement(sql: "SELECT token FROM flatland_sync_tokens WHERE table_name = ? AND query_id = ?"),
            arguments: [table, queryID])
    }

    static func setToken(_ db: Database, table: String, queryID: String, token: String) throws {
        try db.cachedStatement(
            sql: "INSERT OR REPLACE INTO flatland_sync_tokens (table_name, query_id, token) VALUES (?, ?, ?)"
        ).execute(arguments: [table, queryID, token])
    }

    static func purge(_ db: Database, table: String, queryID: String?) throws {
        if let queryID {
            try db.execute(
                sql: "DELETE FROM flatland_sync_tokens WHERE table_name = ? AND query_id = ?",
                arguments: [table, queryID])
        } else {
            try db.execute(sql: "DELETE FROM flatland_sync_tokens WHERE table_name = ?", arguments: [table])
            try db.execute(sql: "DELETE FROM flatland_sync_operations WHERE table_name = ?", arguments: [table])
        }
    }

    static func serverAssignsIDs(_ db: Database, table: String) throws -> Bool {
        try Bool.fetchOne(
            db, sql: "SELECT server_ids FROM flatland_sync_tables WHERE table_name = ?", arguments: [table]) ?? false
    }

    static func setServerAssignsIDs(_ db: Database, table: String) throws {
        try db.execute(
            sql: "INSERT OR REPLACE INTO flatland_sync_tables (table_name, server_ids) VALUES (?, 1)",
            arguments: [table])
    }
}
