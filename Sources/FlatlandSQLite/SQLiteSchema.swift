import Flatland
import Foundation
import GRDB

/// The schema of a Flatland SQLite file: named migrations, applied in order, each recorded in
/// `flatland_migrations`; `PRAGMA user_version` is the schema version (the number applied) and
/// `PRAGMA application_id` marks the file as Flatland's.
enum SQLiteSchema {
    /// `FLAT` in ASCII: the application id of every Flatland store file.
    static let applicationID: Int32 = 0x464C_4154

    /// One step of the schema.
    struct Migration: Sendable {
        let name: String
        let sql: String
        /// Work on the rows, run before `sql` (in the same transaction).
        var rows: (@Sendable (Database) throws -> Void)? = nil
    }

    /// Every migration, oldest first; the schema version is their count.
    static let migrations: [Migration] = [
        Migration(
            name: "v1-entities-collections-metadata",
            sql: """
                CREATE TABLE entities (
                    rowid INTEGER PRIMARY KEY,
                    id TEXT NOT NULL UNIQUE,
                    type TEXT NOT NULL,
                    class_version INTEGER NOT NULL,
                    data_version REAL,
                    present TEXT NOT NULL,
                    fields BLOB NOT NULL
                );
                CREATE TABLE entity_index (
                    id TEXT NOT NULL,
                    name TEXT NOT NULL,
                    value TEXT NOT NULL,
                    PRIMARY KEY (id, name)
                ) WITHOUT ROWID;
                CREATE INDEX entity_index_lookup ON entity_index (name, value);
                CREATE TABLE collections (
                    seq INTEGER PRIMARY KEY,
                    id TEXT NOT NULL UNIQUE,
                    display TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    total INTEGER,
                    length INTEGER NOT NULL,
                    touched INTEGER NOT NULL
                );
                CREATE INDEX collections_display ON collections (display, touched);
                CREATE TABLE collection_items (
                    seq INTEGER NOT NULL,
                    position INTEGER NOT NULL,
                    item TEXT NOT NULL,
                    PRIMARY KEY (seq, position)
                ) WITHOUT ROWID;
                CREATE TABLE metadata (key TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID;
                """),
        Migration(
            name: "v2-index-by-type-and-counts",
            sql: """
                CREATE INDEX entities_by_type ON entities (type, class_version);
                CREATE INDEX collections_touched ON collections (touched);
                CREATE TABLE type_counts (type TEXT PRIMARY KEY, count INTEGER NOT NULL) WITHOUT ROWID;
                INSERT INTO type_counts (type, count) SELECT type, count(*) FROM entities GROUP BY type;
                """),
        // A collection's positions in one blob (`CollectionItemsBlob`) instead of a row each:
        // a large page, or a paginated endpoint rewritten page after page, wrote every position
        // as a row. Collections written before keep their rows (items NULL) and are read from
        // them until they are written again.
        Migration(
            name: "v3-collection-items-blob",
            sql: "ALTER TABLE collections ADD COLUMN items BLOB;"),
        // Records' fields in Flatland's compact encoding (`StoredFields`) instead of JSON text:
        // every row is rewritten here, typed or not (the encoding holds any JSON object), and
        // the present keys, a JSON array the fields already spell, are dropped.
        Migration(
            name: "v4-record-fields-encoded",
            sql: "ALTER TABLE entities DROP COLUMN present;",
            rows: encodeFields),
    ]

    /// Rewrites every record's JSON fields in the compact encoding, a slice of rows at a time.
    /// A record whose fields are not a JSON object fails the migration as corrupt (and so leaves
    /// the file as it was).
    static func encodeFields(_ db: Database) throws {
        let select = try RawStatement(
            db, sql: "SELECT rowid, id, fields FROM entities WHERE rowid > ? ORDER BY rowid LIMIT 512")
        let update = try RawStatement(db, sql: "UPDATE entities SET fields = ? WHERE rowid = ?")
        var after: Int64 = 0
        var done = 0
        while true {
            select.bind([after])
            var rows: [(rowid: Int64, id: String, fields: [UInt8])] = []
            while try select.next() { rows.append((select.int64(0), select.text(1), select.bytes(2))) }
            select.reset()
            guard let last = rows.last else { return }
            after = last.rowid
            for row in rows {
                let encoded: [UInt8]
                do { encoded = try StoredFields.encode(json: row.fields) } catch {
                    throw DatabaseError(
                        resultCode: .SQLITE_CORRUPT,
                        message: "record \(row.id): its fields are not a JSON object (\(error))")
                }
                update.reset()
                update.bind(1, blob: encoded)
                update.bind(2, Int(row.rowid))
                try update.run()
                done += 1
                SQLitePersistence.migrationObserver?(done)
            }
        }
    }

    /// The schema version this build writes.
    static var version: Int { migrations.count }

    /// Checks, without writing, that the file at `path` is empty, new, or a Flatland store this
    /// build can open; SQLite opens it by `openPath` (a URI, for an immutable open) when given.
    static func inspect(path: String, openPath: String? = nil) throws(SQLiteStoreError) {
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? nil
        guard let size, size > 0 else { return }
        var configuration = Configuration()
        configuration.readonly = true
        configuration.label = "Flatland.inspect"
        try SQLiteStoreError.wrap(path: path) {
            let queue = try DatabaseQueue(path: openPath ?? path, configuration: configuration)
            defer { try? queue.close() }
            try queue.read { db in try check(db, path: path) }
        }
    }

    /// Throws unless `db` is empty or a Flatland store of a known schema version.
    static func check(_ db: Database, path: String) throws {
        let applicationID = try Int32.fetchOne(db, sql: "PRAGMA application_id") ?? 0
        let tables = try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master") ?? 0
        if applicationID != Self.applicationID {
            guard applicationID == 0, tables == 0 else {
                throw SQLiteStoreError(
                    .notFlatland, path: path,
                    message: "a SQLite database, but not a Flatland store; the file was left as it is")
            }
            return
        }
        let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        if version > Self.version {
            throw SQLiteStoreError(
                .newerSchema, path: path,
                message:
                    "schema version \(version) is newer than this Flatland's (\(Self.version)); the file was left as it is"
            )
        }
    }

    /// Throws unless `db` is a Flatland store of the current schema version: what a read-only
    /// open needs, since it cannot migrate.
    static func checkCurrent(_ db: Database, path: String) throws {
        try check(db, path: path)
        let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        guard version == Self.version else {
            throw SQLiteStoreError(
                .readOnly, path: path,
                message:
                    "schema version \(version) is older than this Flatland's (\(Self.version)) and a read-only open cannot upgrade it; open it once read-write"
            )
        }
    }

    /// Brings `db` to the current schema; returns the names of the migrations applied.
    @discardableResult
    static func migrate(_ db: Database, path: String) throws -> [String] {
        try check(db, path: path)
        let current = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        guard current < version else { return [] }
        if current == 0 {
            try db.execute(sql: "PRAGMA application_id = \(applicationID)")
        }
        try db.execute(
            sql: """
                CREATE TABLE IF NOT EXISTS flatland_migrations (
                    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)
                """)
        var applied: [String] = []
        for (index, migration) in migrations.enumerated().dropFirst(current) {
            try migration.rows?(db)
            try db.execute(sql: migration.sql)
            try db.execute(
                sql: "INSERT INTO flatland_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                arguments: [index + 1, migration.name, ISO8601DateFormatter().string(from: Date())])
            applied.append(migration.name)
        }
        try db.execute(sql: "PRAGMA user_version = \(version)")
        return applied
    }
}
