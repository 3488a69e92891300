import Flatland
import FlatlandJSON
import FlatlandSQLite
import GRDB
import GRDBSQLite
import Testing

/// The store file's page cache is bounded, whatever the file's size: a long run of small commits
/// (an offline pull writes one page of rows per commit) must not end up holding the whole file
/// in memory, and a big batch's larger cache is given back after its commit.
@Suite("The page cache stays bounded")
struct PageCacheTests {
    /// The page cache the tests give (small, so a small file outgrows it).
    static let options = SQLitePersistence.Options(pageCacheBytes: 256 << 10)
    /// The bound the writer's cache must stay under: the configured 256 KiB, plus SQLite's own
    /// bookkeeping per page.
    static let bound: Int32 = 320 << 10

    /// The writer connection's page cache: its configured size and the bytes it holds, read
    /// inside a commit of nothing.
    static func writerCache(_ store: Store) throws -> (size: Int, used: Int32) {
        let found = Shared<(Int, Int32)>((0, 0))
        try store.commit(
            StoreChange(),
            alongside: SQLiteTransactionWork { db in
                let size = try Int.fetchOne(db, sql: "PRAGMA cache_size") ?? 0
                var used: Int32 = 0
                var highwater: Int32 = 0
                sqlite3_db_status(db.sqliteConnection, SQLITE_DBSTATUS_CACHE_USED, &used, &highwater, 0)
                found.current = (size, used)
            })
        return found.current
    }

    /// Untyped records of about one kilobyte each, `count` of them from `start`.
    static func change(from start: Int, count: Int) -> StoreChange {
        let text = String(repeating: "x", count: 1000)
        var change = StoreChange()
        for i in start..<(start + count) {
            change.upsert(id: "r-\(i)", fields: ["text": .string(text), "n": .number(JSONNumber(i))])
        }
        return change
    }

    @Test func manySmallCommitsDoNotCacheTheWholeFile() throws {
        let path = Scratch.path()
        defer { Scratch.remove(path) }
        let store = Store(
            registry: try registry(), persistence: try SQLitePersistence(path: path, options: Self.options))
        // About 2.5 MB of rows, ten times the cache, in commits of 50.
        for page in 0..<50 { try store.commit(Self.change(from: page * 50, count: 50)) }
        let cache = try Self.writerCache(store)
        #expect(cache.size == -256)
        #expect(cache.used > 0)
        #expect(cache.used < Self.bound, "the writer caches \(cache.used) bytes")
        #expect(store.count(prefix: "r") == 2500)
    }

    @Test func aBigBatchGivesItsCacheBack() throws {
        let path = Scratch.path()
        defer { Scratch.remove(path) }
        let store = Store(
            registry: try registry(), persistence: try SQLitePersistence(path: path, options: Self.options))
        try store.commit(Self.change(from: 0, count: 2500))
        let cache = try Self.writerCache(store)
        #expect(cache.size == -256)
        #expect(cache.used < Self.bound, "the writer caches \(cache.used) bytes")
        #expect(store.count(prefix: "r") == 2500)
    }
}
