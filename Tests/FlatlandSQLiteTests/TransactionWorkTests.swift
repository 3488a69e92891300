import Dispatch
import Flatland
import FlatlandFixtures
import FlatlandJSON
import FlatlandSQLite
import Foundation
import GRDB
import Testing

/// A value work closures hand back to the test.
final class Shared<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    var current: Value {
        get { lock.withLock { value } }
        set { lock.withLock { value = newValue } }
    }
}

/// Rows of a layer above the store, written in the same transaction as a commit.
@Suite("Work alongside a commit")
struct TransactionWorkTests {
    struct Refused: Error, Equatable {}

    static let createQueue = "CREATE TABLE IF NOT EXISTS queue (entity TEXT NOT NULL, operation TEXT NOT NULL)"

    /// Work that queues an operation for each id.
    static func queueing(_ ids: [String], failing: Bool = false) -> SQLiteTransactionWork {
        SQLiteTransactionWork { db in
            try db.execute(sql: createQueue)
            for id in ids { try db.execute(sql: "INSERT INTO queue VALUES (?, 'put')", arguments: [id]) }
            if failing { throw Refused() }
        }
    }

    /// The queue's entities, read inside a commit of nothing.
    static func queue(_ store: Store) throws -> [String] {
        let found = Shared<[String]>([])
        try store.commit(
            StoreChange(),
            alongside: SQLiteTransactionWork { db in
                try db.execute(sql: createQueue)
                found.current = try String.fetchAll(db, sql: "SELECT entity FROM queue ORDER BY rowid")
            })
        return found.current
    }

    static func store(_ path: String) throws -> Store {
        Store(registry: try registry(), persistence: try SQLitePersistence(path: path))
    }

    @Test func extraRowsAreCommittedWithTheEntities() async throws {
        let path = Scratch.path()
        defer { Scratch.remove(path) }
        do {
            let store = try Self.store(path)
            var observed = store.changes().makeAsyncIterator()
            var change = StoreChange()
            change.upsert(SeedUser(id: EntityID("u-1")))
            change.upsert(id: "x-1", fields: ["a": 1])
            let changes = try store.commit(change, alongside: Self.queueing(["u-1", "x-1"]))
            #expect(changes.inserted == ["u-1", "x-1"])
            #expect(try #require(await observed.next()) == changes)
            #expect(try Self.queue(store) == ["u-1", "x-1"])
            // An ingest's commit can carry work too (the store's internal entry point is the
            // same commit); a work-only commit changes no entity and is not announced.
            try store.commit(StoreChange(), alongside: Self.queueing(["u-2"]))
            #expect(store.allIDs() == ["u-1", "x-1"])
            (store.persistence as? SQLitePersistence)?.close()
        }
        // Both are in the file.
        let reopened = try Self.store(path)
        #expect(reopened.allIDs() == ["u-1", "x-1"])
        #expect(reopened.record(id: "x-1")?.fields["a"] == .number(JSONNumber(1)))
        #expect(try Self.queue(reopened) == ["u-1", "x-1", "u-2"])
    }

    /// Work that throws rolls the whole commit back: no entity, no row, no change set.
    @Test func failingWorkRollsBackTheEntities() async throws {
        let path = Scratch.path()
        defer { Scratch.remove(path) }
        let store = try Self.store(path)
        try store.ingest(bytes(#"{"uuid":"u-1","firstname":"Ann"}"#), endpoint: "/me")
        let before = store.snapshot()
        var observed = store.changes().makeAsyncIterator()
        var change = StoreChange()
        change.upsert(SeedUser(id: EntityID("u-2")))
        change.remove("u-1")
        let error = #expect(throws: StoreWriteError.self) {
            try store.commit(change, alongside: Self.queueing(["u-2"], failing: true))
        }
        #expect(error?.code == .transactionWork)
        #expect(error?.underlying as? Refused == Refused())
        #expect(store.allIDs() == ["u-1"])
        #expect(store.record(id: "u-1")?.fields["firstname"] == .string("Ann"))
        #expect(store.collection(displayIdentifier: "/me")?.items == ["u-1"])
        #expect(store.allIDs() == before.allIDs())
        #expect(try Self.queue(store).isEmpty)
        // Nothing was announced: the next change set is the next commit's.
        try store.upsert(SeedUser(id: EntityID("u-3")))
        #expect(try #require(await observed.next()).inserted == ["u-3"])
        // Work of another kind is refused before anything is written.
        let other = #expect(throws: StoreWriteError.self) { try store.commit(change, alongside: OtherWork()) }
        #expect(other?.code == .unsupportedWork)
        #expect(store.allIDs() == ["u-1", "u-3"])
        // Work that writes to its own store fails instead of waiting for itself.
        let inner = Shared<StoreWriteError.Code?>(nil)
        let holder = Shared<Store?>(store)
        try store.commit(
            StoreChange(),
            alongside: SQLiteTransactionWork { _ in
                do { try holder.current?.remove(["u-1"]) } catch let error as StoreWriteError {
                    inner.current = error.code
                }
            })
        holder.current = nil
        #expect(inner.current == .writeInsideCommit)
        #expect(store.contains("u-1"))
    }

    struct OtherWork: StoreTransactionWork {}

    /// While a commit's work runs, readers of the store are not held up: they read the store as
    /// it was, and see the commit once it is done (a record they loaded meanwhile and the commit
    /// removed is not left in the cache).
    @Test func readersAreNotBlockedWhileACommitRuns() throws {
        let path = Scratch.path()
        defer { Scratch.remove(path) }
        let store = try Self.store(path)
        try store.ingest(bytes(#"[{"uuid":"u-1","firstname":"Ann"},{"uuid":"u-9"}]"#), endpoint: "/me")
        let inside = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let read = DispatchSemaphore(value: 0)
        let committed = DispatchSemaphore(value: 0)
        let seen = Shared<[String]>([])
        DispatchQueue.global().async {
            var change = StoreChange()
            change.upsert(id: "u-2", fields: ["firstname": "Bo"])
            change.remove("u-9")
            _ = try? store.commit(
                change,
                alongside: SQLiteTransactionWork { _ in
                    inside.signal()
                    _ = release.wait(timeout: .now() + 30)
                })
            committed.signal()
        }
        #expect(inside.wait(timeout: .now() + 30) == .success)
        DispatchQueue.global().async {
            // A reader on another thread, while the work is waiting.
            seen.current =
                store.allIDs() + [store.record(id: "u-1")?.fields["firstname"]?.stringValue ?? "?"]
                + (store.record(id: "u-9") != nil ? ["u-9 read"] : [])
            read.signal()
        }
        let unblocked = read.wait(timeout: .now() + 30)
        release.signal()
        #expect(unblocked == .success, "a reader waited for a commit's work")
        #expect(seen.current == ["u-1", "u-9", "Ann", "u-9 read"])
        #expect(committed.wait(timeout: .now() + 30) == .success)
        #expect(store.allIDs() == ["u-1", "u-2"])
        #expect(!store.contains("u-9"))
        #expect(store.record(id: "u-9") == nil)
    }

    /// A store file that cannot be written: the ingest fails with the persistence code and the
    /// SQLite error beneath, and the file keeps what it had.
    @Test func aFailedWriteIsAPersistenceError() throws {
        let path = Scratch.path()
        defer { Scratch.remove(path) }
        let persistence = try SQLitePersistence(path: path)
        let store = Store(registry: try registry(), persistence: persistence)
        try store.ingest(bytes(#"{"uuid":"u-1"}"#))
        persistence.close()
        let error = #expect(throws: IngestError.self) { try store.ingest(bytes(#"{"uuid":"u-2"}"#)) }
        #expect(error?.code == .persistence)
        let underlying = try #require(error?.underlying as? SQLiteStoreError)
        #expect(underlying.code == .closed)
        let removal = #expect(throws: StoreWriteError.self) { try store.remove(["u-1"]) }
        #expect(removal?.code == .persistence)
        #expect((removal?.underlying as? SQLiteStoreError)?.code == .closed)
        let reopened = try Self.store(path)
        #expect(reopened.allIDs() == ["u-1"])
    }

    // MARK: Crashes

    /// Runs `FlatlandCrashHelper alongside` and kills it with SIGKILL once it printed a line
    /// `until` accepts; returns the last batch it reported committed.
    static func killAlongside(path: String, arguments: [String], until: (String) -> Bool) throws -> Int {
        try CrashTests.killChild(["alongside", "--store", path, "--items", "50"] + arguments, until: until)
    }

    /// After a kill, every batch left its entities and its rows, or neither.
    static func checkBothOrNeither(path: String, reported: Int) throws -> Int {
        let store = try Self.store(path)
        let counter = try #require(store.record(id: "cn-counter"))
        let n = try #require(Int(counter.fields["n"]?.numberValue?.description ?? ""))
        #expect(n >= reported)
        let rows = Shared<[Int: Int]>([:])
        try store.commit(
            StoreChange(),
            alongside: SQLiteTransactionWork { db in
                var counts: [Int: Int] = [:]
                for row in try Row.fetchAll(db, sql: "SELECT batch, count(*) AS n FROM alongside GROUP BY batch") {
                    counts[row["batch"]] = row["n"]
                }
                rows.current = counts
            })
        #expect(rows.current == Dictionary(uniqueKeysWithValues: (0...n).map { ($0, 50) }))
        #expect(store.count(prefix: "it") == (n + 1) * 50)
        #expect(!store.contains("it-\(n + 1)-0"))
        return n
    }

    /// Killed while the work of batch 6 is inside its transaction (its rows written, the
    /// entities' too): neither is in the file, and batches 0 to 5 are there whole.
    @Test func aKillInsideTheWorkLeavesNeither() throws {
        let path = Scratch.path()
        defer { Scratch.remove(path) }
        let reported = try Self.killAlongside(path: path, arguments: ["--hang-at", "6"]) { $0 == "inside 6" }
        #expect(reported == 5)
        let n = try Self.checkBothOrNeither(path: path, reported: reported)
        #expect(n == 5)
    }

    /// Killed at a random point of a stream of commits: each batch whole or absent.
    @Test func aKillMidStreamLeavesBothOrNeither() throws {
        let path = Scratch.path()
        defer { Scratch.remove(path) }
        let reported = try Self.killAlongside(path: path, arguments: []) { $0 == "committed 30" }
        let n = try Self.checkBothOrNeither(path: path, reported: reported)
        #expect(n <= reported + 1)
    }
}
