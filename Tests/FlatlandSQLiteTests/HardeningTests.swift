import Flatland
import FlatlandFixtures
import FlatlandJSON
import FlatlandSQLite
import Foundation
import GRDB
import Testing

@Suite("SQLite text with NUL")
struct NULTextTests {
    /// Three ids that agree up to a NUL, an index value and a task name with NUL in them.
    static let users =
        #"{"offset":0,"total":3,"data":[{"uuid":"u-a\u0000b","firstname":"B","email":"a\u0000b@x"},{"uuid":"u-a\u0000c","firstname":"C","email":"a\u0000c@x"},{"uuid":"u-a","firstname":"A","email":"a@x"}]}"#

    static func fill(_ store: Store) throws {
        try store.ingest(bytes(users), endpoint: "/users?tag=x\u{0}y&offset=0&count=3", taskID: "t\u{0}1")
    }

    @Test func idsIndexValuesAndCollectionItemsWithNULRoundTripThroughAFile() throws {
        let path = Scratch.path()
        defer { Scratch.remove(path) }
        let memory = try fillMemoryAndFile(path, Self.fill)
        #expect(memory.allIDs() == ["u-a", "u-a\u{0}b", "u-a\u{0}c"])
        let persistence = try SQLitePersistence(path: path)
        let reopened = Store(registry: try registry(), persistence: persistence)
        #expect(fingerprint(reopened) == fingerprint(memory))
        #expect(reopened.allIDs() == ["u-a", "u-a\u{0}b", "u-a\u{0}c"])
        #expect(reopened.entity(EntityID<SeedUser>("u-a\u{0}c"))?.firstname == "C")
        #expect(reopened.entity(EntityID<SeedUser>("u-a"))?.firstname == "A")
        #expect(
            try reopened.entities(where: \SeedUser.email, equals: "a\u{0}c@x").map(\.id.rawValue) == ["u-a\u{0}c"])
        let endpoint = try #require(reopened.collections(kind: .endpoint).first)
        #expect(endpoint.items == ["u-a\u{0}b", "u-a\u{0}c", "u-a"])
        #expect(reopened.collection(displayIdentifier: "t\u{0}1")?.items == ["u-a\u{0}b", "u-a\u{0}c", "u-a"])
        #expect(reopened.collection(displayIdentifier: "t") == nil)
        #expect(try persistence.loadRecords(prefix: "u").map(\.id) == ["u-a", "u-a\u{0}b", "u-a\u{0}c"])
        // Removing one removes that one only.
        try reopened.remove(["u-a\u{0}b"])
        #expect(reopened.allIDs() == ["u-a", "u-a\u{0}c"])
        // Metadata keys too.
        try persistence.setMetadata([1], forKey: "k\u{0}1")
        try persistence.setMetadata([2], forKey: "k\u{0}2")
        #expect(try persistence.metadata(forKey: "k\u{0}1") == [1])
        #expect(try persistence.metadata(forKey: "k") == nil)
        #expect(reopened.lastPersistenceError == nil)
    }
}

@Suite("SQLite damage and read errors")
struct CorruptionTests {
    /// A closed store of 3,000 users with padded fields: a file of many pages, nearly all of
    /// them the records' own.
    static func makeLargeFile() throws -> String {
        let path = Scratch.path()
        let persistence = try SQLitePersistence(path: path)
        let store = Store(registry: try registry(), persistence: persistence)
        let pad = String(repeating: "p", count: 400)
        let users = (0..<3000).map { #"{"uuid":"u-\#($0)","firstname":"F\#($0) \#(pad)","email":"user\#($0)@x"}"# }
        try store.ingest(
            bytes(#"{"offset":0,"total":3000,"data":["# + users.joined(separator: ",") + "]}"), endpoint: "/users")
        persistence.close()
        return path
    }

    /// Overwrites 4 KiB in the middle of the file (page aligned); returns the page count.
    @discardableResult
    static func damageMiddle(_ path: String) throws -> Int {
        var data = try #require(FileManager.default.contents(atPath: path))
        let pages = data.count / 4096
        let start = pages / 2 * 4096
        // Fixed noise: the same damage every run.
        for i in start..<start + 4096 { data[i] = UInt8(truncatingIfNeeded: i &* 2_654_435_761 >> 7) }
        try data.write(to: URL(fileURLWithPath: path))
        return pages
    }

    @Test func aSoundFileVerifies() throws {
        let path = try Self.makeLargeFile()
        defer { Scratch.remove(path) }
        let persistence = try SQLitePersistence(path: path)
        let report = try persistence.verify()
        #expect(report.isOK, "\(report)")
        #expect(report.problems.isEmpty)
        #expect(try persistence.verify(quick: true).isOK)
        try report.check()
    }

    @Test func fourKiBOverwrittenInTheMiddleFailsVerifyAndEveryReadThrowsTyped() throws {
        let path = try Self.makeLargeFile()
        defer { Scratch.remove(path) }
        let pages = try Self.damageMiddle(path)
        #expect(pages > 300)
        let persistence = try SQLitePersistence(path: path)
        let report = try persistence.verify()
        #expect(!report.isOK)
        #expect(report.description.contains("corrupt"))
        #expect(!(try persistence.verify(quick: true).isOK))
        let checked = #expect(throws: SQLiteStoreError.self) { try report.check() }
        #expect(checked?.code == .corrupt)
        // Reading everything through the persistence: the damage is met, and thrown typed.
        let error = #expect(throws: SQLiteStoreError.self) {
            let ids = try persistence.ids(prefix: nil)
            _ = try persistence.loadRecords(ids: ids)
            _ = try persistence.loadRecords(prefix: "u")
            _ = try persistence.collections(kind: nil)
        }
        #expect(error?.code == .corrupt)
        #expect(error?.sqliteCode.map { $0 & 0xFF } == 11)  // SQLITE_CORRUPT
        #expect(error?.path == path)
        // Through the store, a read that fails reads as absent and is remembered.
        let store = Store(registry: try registry(), persistence: persistence)
        _ = store.ids(prefix: "u").compactMap { store.record(id: $0) }
        _ = store.collections
        let remembered = try #require(store.lastPersistenceError as? SQLiteStoreError)
        #expect(remembered.code == .corrupt)
    }

    @Test func codesCompareAndDescribe() {
        let error = SQLiteStoreError(.full, path: "/x.sqlite", message: "the disk is full", sqliteCode: 13)
        #expect(error.code == .full)
        #expect(error.code != .ioError)
        #expect("\(error.code)" == "full")
        #expect(error.description == "/x.sqlite: the disk is full")
    }
}

@Suite("SQLite read-only opens and failed creates")
struct ReadOnlyTests {
    @Test func aReadOnlyOpenReadsAndNeverWrites() throws {
        let path = try PersistenceTests.makeFile(users: 20)
        defer { Scratch.remove(path) }
        let before = FileManager.default.contents(atPath: path)
        let persistence = try SQLitePersistence(path: path, options: .init(mode: .readOnly))
        let store = Store(registry: try registry(), persistence: persistence)
        #expect(store.count == 21)
        #expect(store.entity(EntityID<SeedUser>("u-3"))?.firstname == "F3")
        #expect(store.snapshot().count == 21)
        #expect(try persistence.verify().isOK)
        // Writes are refused by SQLite's read-only open, typed.
        let write = #expect(throws: SQLiteStoreError.self) {
            try persistence.setMetadata([1], forKey: "k")
        }
        #expect(write?.code == .readOnly)
        #expect(throws: (any Error).self) { try store.ingest(bytes(#"{"uuid":"u-99"}"#)) }
        #expect(store.count == 21)
        persistence.close()
        #expect(FileManager.default.contents(atPath: path) == before)
    }

    @Test func aReadOnlyOpenCreatesNothing() throws {
        let path = Scratch.path()
        let error = #expect(throws: SQLiteStoreError.self) {
            _ = try SQLitePersistence(path: path, options: .init(mode: .readOnly))
        }
        #expect(error?.code == .cannotOpen)
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func aReadOnlyOpenDoesNotUpgradeAnOlderSchema() throws {
        let path = Scratch.path()
        defer { Scratch.remove(path) }
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in try db.execute(sql: FileTests.version1) }
        try queue.close()
        let error = #expect(throws: SQLiteStoreError.self) {
            _ = try SQLitePersistence(path: path, options: .init(mode: .readOnly))
        }
        #expect(error?.code == .readOnly)
        // It opens (and upgrades) read-write.
        #expect(
            try SQLitePersistence(path: path).appliedMigrations == [
                "v2-index-by-type-and-counts", "v3-collection-items-blob", "v4-record-fields-encoded",
            ])
    }

    @Test func aCreateThatCannotWorkLeavesNoFile() throws {
        // A path under a regular file: SQLite cannot create it (ENOTDIR). This proves the error is
        // typed and nothing is made; the full-disk case, where SQLite does create the file and
        // then fails, is tested through the CLI with a file size limit (StoreCLITests).
        let file = Scratch.path(".txt")
        defer { Scratch.remove(file) }
        try Data("x".utf8).write(to: URL(fileURLWithPath: file))
        let path = file + "/store.sqlite"
        let error = #expect(throws: SQLiteStoreError.self) { _ = try SQLitePersistence(path: path) }
        #expect(error?.code == .cannotOpen)
        #expect(FileManager.default.contents(atPath: file) == Data("x".utf8))
    }
}

@Suite("SQLite session storage")
struct SessionStorageTests {
    @Test func eachPairHasItsOwnFileInsideTheDirectory() throws {
        let directory = Scratch.newDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let storage = SQLitePersistence.sessionStorage(in: directory)
        let pairs = [
            ("ada", "prod"), ("grace", "prod"), ("ada", "dev"), ("../grace", "prod"), ("ada/../../x", "prod"),
            ("Ada", "prod"), (".", ".."), (String(repeating: "é", count: 300), "prod"),
            (String(repeating: "é", count: 300) + "x", "prod"),
        ]
        let paths = pairs.map { storage.location(user: $0.0, environment: $0.1).path }
        #expect(Set(paths).count == pairs.count)
        for path in paths {
            #expect((path as NSString).deletingLastPathComponent == directory)
            #expect((path as NSString).lastPathComponent.utf8.count <= SQLiteStoreLocation.maximumFileNameLength)
        }
        // The long names are real files.
        var persistences: [any StorePersistence] = []
        for (user, environment) in pairs {
            persistences.append(try storage.makePersistence(user: user, environment: environment))
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).count >= pairs.count)
        for (persistence, pair) in zip(persistences, pairs) {
            try storage.destroyPersistence(persistence, user: pair.0, environment: pair.1)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }

    @Test func destroyingRefusesAnotherPairsPersistence() throws {
        let directory = Scratch.newDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let storage = SQLitePersistence.sessionStorage(in: directory)
        let ada = try storage.makePersistence(user: "ada", environment: "prod")
        #expect(throws: SQLiteStoreError.self) {
            try storage.destroyPersistence(ada, user: "grace", environment: "prod")
        }
        #expect(FileManager.default.fileExists(atPath: storage.location(user: "ada", environment: "prod").path))
        storage.closePersistence(ada)
        // Closed, it opens again with what it held.
        let again = try storage.makePersistence(user: "ada", environment: "prod")
        try storage.destroyPersistence(again, user: "ada", environment: "prod")
    }
}
