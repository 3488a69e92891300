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

    static func create(_ db: Database) throws {
        for statement in schema + [LocalID.schema] { try db.execute(sql: statement) }
        // The idempotency key of each operation's request; a file written before keys existed
        // gains the column, and a key for each operation it holds.
        if try !db.columns(in: "flatland_sync_operations").contains(where: { $0.name == "key" }) {
            try db.execute(sql: "ALTER TABLE flatland_sync_operations ADD COLUMN key TEXT")
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
        case sequence, tableName, itemID, kind, state, version, item, changes, status, serverItem, rawBody, error, key

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
            }
        }
    }

    static let columns = Column.allCases.map(\.name).joined(separator: ", ")

    /// An operation from a row that selected ``columns``.
    static func operation(_ row: Row) -> SyncOperation {
        func object(_ bytes: Data?) -> JSONObject? {
            guard let bytes, case .object(let o)? = try? JSONValue(parsing: Array(bytes)) else { return nil }
            return o
        }
        func value<Value: DatabaseValueConvertible>(_ column: Column) -> Value { row[column.rawValue] }
        func optional<Value: DatabaseValueConvertible>(_ column: Column) -> Value? { row[column.rawValue] }
        return SyncOperation(
            sequence: value(.sequence), table: value(.tableName), itemID: value(.itemID),
            kind: SyncOperation.Kind(rawValue: value(.kind)) ?? .update,
            state: SyncOperation.State(rawValue: value(.state)) ?? .pending, version: optional(.version),
            item: object(optional(.item)), changes: value(.changes), status: optional(.status),
            serverItem: object(optional(.serverItem)), rawBody: (optional(.rawBody) as Data?).map { Array($0) },
            error: optional(.error), key: optional(.key) ?? "")
    }

    /// Every operation, in queue order; only `table`'s when given.
    static func operations(_ db: Database, table: String? = nil) throws -> [SyncOperation] {
        if let table {
            return try Row.fetchAll(
                db.cachedStatement(
                    sql: "SELECT \(columns) FROM flatland_sync_operations WHERE table_name = ? ORDER BY sequence"),
                arguments: [table]
            ).map(operation)
        }
        return try Row.fetchAll(db, sql: "SELECT \(columns) FROM flatland_sync_operations ORDER BY sequence")
            .map(operation)
    }

    /// The operation with this sequence number.
    static func operation(_ db: Database, sequence: Int64) throws -> SyncOperation? {
        try Row.fetchOne(
            db.cachedStatement(sql: "SELECT \(columns) FROM flatland_sync_operations WHERE sequence = ?"),
            arguments: [sequence]
        ).map(operation)
    }

    /// The operations with these sequence numbers that are still queued, in queue order: one
    /// statement over their range.
    static func operations(_ db: Database, sequences: [Int64]) throws -> [SyncOperation] {
        guard let low = sequences.min(), let high = sequences.max() else { return [] }
        let wanted = Set(sequences)
        let statement = try db.cachedStatement(
            sql: "SELECT \(columns) FROM flatland_sync_operations WHERE sequence BETWEEN ? AND ? ORDER BY sequence")
        return try Row.fetchAll(statement, arguments: [low, high]).compactMap { row in
            wanted.contains(row["sequence"]) ? operation(row) : nil
        }
    }

    /// The operations of one row, in queue order.
    static func operations(_ db: Database, table: String, itemID: String) throws -> [SyncOperation] {
        try Row.fetchAll(
            db.cachedStatement(
                sql:
                    "SELECT \(columns) FROM flatland_sync_operations WHERE table_name = ? AND item_id = ? ORDER BY sequence"
            ),
            arguments: [table, itemID]
        ).map(operation)
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
                db, sql: "SELECT DISTINCT item_id FROM flatland_sync_operations WHERE table_name = ?",
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

    static func remove(_ db: Database, sequence: Int64) throws {
        try db.cachedStatement(sql: "DELETE FROM flatland_sync_operations WHERE sequence = ?")
            .execute(arguments: [sequence])
    }

    /// Collapses a new change into the operation at `sequence`: its kind, version and item may
    /// change, it counts one change more, and it is pending again.
    static func collapse(
        _ db: Database, sequence: Int64, kind: SyncOperation.Kind, version: String?, item: JSONObject?
    ) throws {
        try db.execute(
            sql: """
                UPDATE flatland_sync_operations
                SET kind = ?, version = ?, item = ?, changes = changes + 1
                WHERE sequence = ?
                """,
            arguments: [kind.rawValue, version, bytes(item), sequence])
    }

    static func setState(_ db: Database, sequence: Int64, _ state: SyncOperation.State) throws {
        try db.cachedStatement(sql: "UPDATE flatland_sync_operations SET state = ? WHERE sequence = ?")
            .execute(arguments: [state.rawValue, sequence])
    }

    static func setVersion(_ db: Database, sequence: Int64, _ version: String?) throws {
        try db.execute(
            sql: "UPDATE flatland_sync_operations SET version = ? WHERE sequence = ?", arguments: [version, sequence])
    }

    static func recordFailure(
        _ db: Database, sequence: Int64, status: Int?, serverItem: JSONObject?, rawBody: [UInt8], error: String
    ) throws {
        try db.execute(
            sql: """
                UPDATE flatland_sync_operations
                SET state = 'failed', status = ?, server_item = ?, raw_body = ?, error = ?
                WHERE sequence = ?
                """,
            arguments: [status, bytes(serverItem), Data(rawBody), error, sequence])
    }

    // MARK: Tokens and tables

    static func token(_ db: Database, table: String, queryID: String) throws -> String? {
        try String.fetchOne(
            db, sql: "SELECT token FROM flatland_sync_tokens WHERE table_name = ? AND query_id = ?",
            arguments: [table, queryID])
    }

    static func setToken(_ db: Database, table: String, queryID: String, token: String) throws {
        try db.execute(
            sql: "INSERT OR REPLACE INTO flatland_sync_tokens (table_name, query_id, token) VALUES (?, ?, ?)",
            arguments: [table, queryID, token])
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
