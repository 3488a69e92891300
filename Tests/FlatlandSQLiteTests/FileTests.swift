import Flatland
import FlatlandFixtures
import FlatlandJSON
import FlatlandSQLite
import Foundation
import GRDB
import Testing

@Suite("SQLite files")
struct FileTests {
    @Test func eachUserAndEnvironmentHasItsOwnFile() throws {
        let directory = Scratch.newDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let ann = SQLiteStoreLocation(directory: directory, user: "u-ann", environment: "production")
        let bob = SQLiteStoreLocation(directory: directory, user: "u-bob", environment: "production")
        let annDev = SQLiteStoreLocation(directory: directory, user: "u-ann", environment: "development")
        // Names that would collide if joined naively stay apart.
        let tricky = SQLiteStoreLocation(directory: directory, user: "ann-production", environment: "u")
        #expect(Set([ann.path, bob.path, annDev.path, tricky.path]).count == 4)
        let a = Store(persistence: try SQLitePersistence(location: ann))
        let b = Store(persistence: try SQLitePersistence(location: bob))
        let c = Store(persistence: try SQLitePersistence(location: annDev))
        try a.ingest(bytes(#"{"uuid":"x-1","who":"ann"}"#))
        try b.ingest(bytes(#"{"uuid":"x-2","who":"bob"}"#))
        #expect(a.allIDs() == ["x-1"])
        #expect(b.allIDs() == ["x-2"])
        #expect(c.count == 0)
        #expect(FileManager.default.fileExists(atPath: ann.path))
        #expect(FileManager.default.fileExists(atPath: bob.path))
    }

    @Test func aFileIsOpenedOncePerProcess() throws {
        let path = Scratch.path()
        defer { Scratch.remove(path) }
        let first = try SQLitePersistence(path: path)
        let error = #expect(throws: SQLiteStoreError.self) { _ = try SQLitePersistence(path: path) }
        #expect(error?.code == .alreadyOpen)
        // Another spelling of the same path is the same file.
        let other = (path as NSString).deletingLastPathComponent + "/./" + (path as NSString).lastPathComponent
        #expect(throws: SQLiteStoreError.self) { _ = try SQLitePersistence(path: other) }
        first.close()
        let again = try SQLitePersistence(path: path)
        again.close()
    }

    @Test func wipingASessionRemovesTheFileAndItsCompanions() throws {
        let directory = Scratch.newDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let ann = SQLiteStoreLocation(directory: directory, user: "ann", environment: "prod")
        let bob = SQLiteStoreLocation(directory: directory, user: "bob", environment: "prod")
        let annPersistence = try SQLitePersistence(location: ann)
        let bobStore = Store(persistence: try SQLitePersistence(location: bob))
        try Store(persistence: annPersistence).ingest(bytes(#"{"uuid":"x-1"}"#))
        try bobStore.ingest(bytes(#"{"uuid":"x-2"}"#))
        #expect(FileManager.default.fileExists(atPath: ann.path + "-wal"))
        // An open store is not removed from under its user.
        let error = #expect(throws: SQLiteStoreError.self) { try SQLitePersistence.removeFiles(at: ann) }
        #expect(error?.code == .alreadyOpen)
        try annPersistence.destroy()
        for suffix in ["", "-wal", "-shm"] {
            #expect(!FileManager.default.fileExists(atPath: ann.path + suffix))
        }
        #expect(bobStore.allIDs() == ["x-2"])
        // Logging in again starts empty.
        let fresh = Store(persistence: try SQLitePersistence(location: ann))
        #expect(fresh.count == 0)
    }

    static func contents(_ path: String) -> Data? { FileManager.default.contents(atPath: path) }

    @Test func aFileThatIsNotADatabaseIsRefusedAndLeftAlone() throws {
        let path = Scratch.path()
        defer { Scratch.remove(path) }
        let text = Data(String(repeating: "these are not the bytes of a database\n", count: 200).utf8)
        try text.write(to: URL(fileURLWithPath: path))
        let error = #expect(throws: SQLiteStoreError.self) { _ = try SQLitePersistence(path: path) }
        #expect(error?.code == .notADatabase)
        #expect(error?.description.contains(path) == true)
        #expect(Self.contents(path) == text)
        // And it is not left marked as open.
        #expect(throws: SQLiteStoreError.self) { _ = try SQLitePersistence(path: path) }
    }

    @Test func anotherApplicationsDatabaseIsRefusedAndLeftAlone() throws {
        let path = Scratch.path()
        defer { Scratch.remove(path) }
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
            try db.execute(sql: "INSERT INTO notes (text) VALUES ('keep me')")
        }
        try queue.close()
        let before = Self.contents(path)
        let error = #expect(throws: SQLiteStoreError.self) { _ = try SQLitePersistence(path: path) }
        #expect(error?.code == .notFlatland)
        #expect(Self.contents(path) == before)
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
    }

    @Test func aCorruptFileIsRefusedAndLeftAlone() throws {
        let path = try PersistenceTests.makeFile(users: 50)
        defer { Scratch.remove(path) }
        // Closing checkpointed the log into the file: what is damaged below is all there is.
        #expect((Self.contents(path + "-wal") ?? Data()).isEmpty)
        // Damage the schema page after the header.
        var damaged = try #require(Self.contents(path))
        for i in 100..<min(damaged.count, 4096) { damaged[i] = 0xA5 }
        try damaged.write(to: URL(fileURLWithPath: path))
        let error = #expect(throws: SQLiteStoreError.self) { _ = try SQLitePersistence(path: path) }
        #expect(error?.code == .corrupt)
        #expect(Self.contents(path) == damaged)
    }

    @Test func aFileFromANewerFlatlandIsRefused() throws {
        let path = try PersistenceTests.makeFile(users: 1)
        defer { Scratch.remove(path) }
        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA user_version = 99") }
        try queue.close()
        let error = #expect(throws: SQLiteStoreError.self) { _ = try SQLitePersistence(path: path) }
        #expect(error?.code == .newerSchema)
    }

    /// The schema of version 1, as a Flatland of that version wrote it.
    static let version1 = """
        CREATE TABLE entities (
            rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, type TEXT NOT NULL,
            class_version INTEGER NOT NULL, data_version REAL, present TEXT NOT NULL, fields BLOB NOT NULL);
        CREATE TABLE entity_index (
            id TEXT NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (id, name)) WITHOUT ROWID;
        CREATE INDEX entity_index_lookup ON entity_index (name, value);
        CREATE TABLE collections (
            seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, display TEXT NOT NULL, kind TEXT NOT NULL,
            total INTEGER, length INTEGER NOT NULL, touched INTEGER NOT NULL);
        CREATE INDEX collections_display ON collections (display, touched);
        CREATE TABLE collection_items (
            seq INTEGER NOT NULL, position INTEGER NOT NULL, item TEXT NOT NULL,
            PRIMARY KEY (seq, position)) WITHOUT ROWID;
        CREATE TABLE metadata (key TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID;
        CREATE TABLE flatland_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL);
        INSERT INTO flatland_migrations VALUES (1, 'v1-entities-collections-metadata', '2026-01-01T00:00:00Z');
        PRAGMA application_id = 1179402580;
        PRAGMA user_version = 1;
        """

    @Test func anOlderSchemaIsMigratedAndOldRecordsAreUpgraded() throws {
        let path = Scratch.path()
        defer { Scratch.remove(path) }
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            try db.execute(sql: Self.version1)
            for (id, years) in [("pf-1", "30"), ("pf-2", "41"), ("pf-3", "52")] {
                try db.execute(
                    sql: """
                        INSERT INTO entities (id, type, class_version, data_version, present, fields)
                        VALUES (?, 'pf', 1, NULL, '["name","years"]', ?)
                        """,
                    arguments: [id, Data(#"{"name":"P \#(id)","years":"\#(years)"}"#.utf8)])
            }
            try db.execute(
                sql: """
                    INSERT INTO entities (id, type, class_version, data_version, present, fields)
                    VALUES ('x-1', 'x', 1, 2.0, '["a"]', '{"a":1}')
                    """)
        }
        try queue.close()

        let persistence = try SQLitePersistence(path: path)
        #expect(
            persistence.appliedMigrations == [
                "v2-index-by-type-and-counts", "v3-collection-items-blob", "v4-record-fields-encoded",
            ])
        #expect(try persistence.schemaVersion() == 4)
        let store = Store(registry: try registry(), persistence: persistence)
        // The new table was filled from the old rows.
        #expect(store.countsByPrefix == ["pf": 3, "x": 1])
        // Loading an old record runs the type's migration.
        let one = try #require(store.record(EntityID<Profile>("pf-1")))
        #expect(one.entity(as: Profile.self)?.age == 30)
        #expect(one.classVersion == 2)
        #expect(store.record(id: "x-1")?.dataVersion == 2)
        // All at once, on request: every outdated record is rewritten at the current version.
        #expect(try store.upgradeRecords() == 3)
        #expect(try store.upgradeRecords() == 0)
        persistence.close()

        let check = try DatabaseQueue(path: path)
        let versions = try check.read { db in
            try Int.fetchAll(db, sql: "SELECT class_version FROM entities WHERE type = 'pf'")
        }
        let fields = try check.read { db in
            try Data.fetchOne(db, sql: "SELECT fields FROM entities WHERE id = 'pf-2'")
        }
        try check.close()
        #expect(versions == [2, 2, 2])
        // Rewritten in the record encoding: 0xF1, then tokens (kind, and for a key, string or
        // number its length and bytes): {"name":"P pf-2","age":41}.
        let encoded: [UInt8] =
            [0xF1, 0, 4, 4] + Array("name".utf8) + [5, 6] + Array("P pf-2".utf8) + [4, 3] + Array("age".utf8)
            + [6, 2] + Array("41".utf8) + [1]
        #expect(fields.map { [UInt8]($0) } == encoded)
    }
}
