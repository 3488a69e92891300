import FlatlandJSON
import Foundation
import GRDB
import Testing

@testable import FlatlandServer

/// The table server's storage: system properties, versions, soft delete, queries; on SQLite and
/// on PostgreSQL (see ``TestStorage``).
@Suite struct TableStorageTests {
    /// A storage on a fake clock that stands still unless moved, so that ticks are visible.
    final class Clock: @unchecked Sendable {
        let lock = NSLock()
        var micros: Int64 = 1_700_000_000_000_000
        func now() -> Int64 { lock.withLock { micros } }
        func advance(_ by: Int64) { lock.withLock { micros += by } }
    }

    private func storage(_ clock: Clock = Clock(), path: String? = nil) async throws -> SQLiteTableStorage {
        let storage = try SQLiteTableStorage(path: path, now: { clock.now() })
        try await storage.prepare([TableDefinition(name: "todoitem")])
        return storage
    }

    /// A fresh storage of `kind`; SQLite on `clock`, PostgreSQL on the database's.
    private func storage(_ kind: TestStorage, _ clock: Clock = Clock()) async throws -> any TableStorage {
        try await kind.make(now: { clock.now() })
    }

    private func fields(_ text: String) throws -> JSONObject {
        guard case .object(let o) = try JSONValue(parsing: text) else {
            throw TableStorageError(code: .storage, message: "")
        }
        return o
    }

    @Test(arguments: TestStorage.all)
    func insertSetsEverySystemProperty(_ kind: TestStorage) async throws {
        let s = try await storage(kind)
        let row = try await s.insert("todoitem", id: "a", fields: try fields(#"{"text":"milk","complete":false}"#))
        #expect(row.createdAt == row.updatedAt)
        #expect(row.version == 1)
        #expect(!row.deleted)
        #expect(try await s.row("todoitem", id: "a") == row)
        guard kind == .sqlite else {
            // The database's clock: now, to the microsecond.
            #expect(abs(row.updatedAt - SQLiteTableStorage.wallClock()) < 60_000_000)
            #expect(
                JSONValue.object(row.json(.v3)).jsonString()
                    == #"{"id":"a","text":"milk","complete":false,"updatedAt":"\#(TableRow.dateString(row.updatedAt))","version":"AAAAAAAAAAE=","deleted":false}"#
            )
            return
        }
        #expect(
            JSONValue.object(row.json(.v2)).jsonString()
                == #"{"id":"a","text":"milk","complete":false,"createdAt":"2023-11-14T22:13:20.000000Z","updatedAt":"2023-11-14T22:13:20.000000Z","version":"AAAAAAAAAAE=","deleted":false}"#
        )
        #expect(
            JSONValue.object(row.json(.v3)).jsonString()
                == #"{"id":"a","text":"milk","complete":false,"updatedAt":"2023-11-14T22:13:20.000000Z","version":"AAAAAAAAAAE=","deleted":false}"#
        )
    }

    @Test(arguments: TestStorage.all)
    func everyWriteGetsANewVersionAndALaterUpdatedAtEvenWhenTheClockStandsStill(_ kind: TestStorage) async throws {
        let s = try await storage(kind)
        var last = try await s.insert("todoitem", id: "a", fields: try fields(#"{"n":0}"#))
        for n in 1...20 {
            let row = try await s.update(
                "todoitem", id: "a", fields: try fields(#"{"n":\#(n)}"#), replace: false, expectedVersion: nil,
                allowDeleted: true)
            #expect(row.updatedAt > last.updatedAt)
            #expect(row.version != last.version)
            #expect(row.createdAt == last.createdAt)
            last = row
        }
    }

    @Test(arguments: TestStorage.all)
    func patchMergesAndPutReplaces(_ kind: TestStorage) async throws {
        let s = try await storage(kind)
        _ = try await s.insert("todoitem", id: "a", fields: try fields(#"{"text":"milk","complete":false}"#))
        let merged = try await s.update(
            "todoitem", id: "a", fields: try fields(#"{"complete":true,"due":null}"#), replace: false,
            expectedVersion: nil, allowDeleted: true)
        #expect(JSONValue.object(merged.fields).jsonString() == #"{"text":"milk","complete":true,"due":null}"#)
        let replaced = try await s.update(
            "todoitem", id: "a", fields: try fields(#"{"text":"bread"}"#), replace: true, expectedVersion: nil,
            allowDeleted: true)
        #expect(JSONValue.object(replaced.fields).jsonString() == #"{"text":"bread"}"#)
    }

    @Test(arguments: TestStorage.all)
    func aStaleVersionIsRefusedWithTheCurrentRowAndChangesNothing(_ kind: TestStorage) async throws {
        let s = try await storage(kind)
        let first = try await s.insert("todoitem", id: "a", fields: try fields(#"{"text":"milk"}"#))
        let second = try await s.update(
            "todoitem", id: "a", fields: try fields(#"{"text":"oat milk"}"#), replace: false,
            expectedVersion: first.version, allowDeleted: true)
        await #expect {
            _ = try await s.update(
                "todoitem", id: "a", fields: try fields(#"{"text":"soy"}"#), replace: false,
                expectedVersion: first.version, allowDeleted: true)
        } throws: { error in
            let e = error as? TableStorageError
            return e?.code == .versionMismatch && e?.current == second
        }
        await #expect(throws: TableStorageError.self) {
            _ = try await s.delete("todoitem", id: "a", soft: true, expectedVersion: first.version)
        }
        #expect(try await s.row("todoitem", id: "a") == second)
    }

    @Test(arguments: TestStorage.all)
    func insertingAnIdThatExistsGivesTheExistingRow(_ kind: TestStorage) async throws {
        let s = try await storage(kind)
        let first = try await s.insert("todoitem", id: "a", fields: try fields(#"{"text":"milk"}"#))
        await #expect {
            _ = try await s.insert("todoitem", id: "a", fields: try fields(#"{"text":"other"}"#))
        } throws: { error in
            (error as? TableStorageError)?.code == .exists && (error as? TableStorageError)?.current == first
        }
    }

    @Test(arguments: TestStorage.all)
    func softDeleteBumpsUpdatedAtAndHidesTheRowUnlessAskedFor(_ kind: TestStorage) async throws {
        let s = try await storage(kind)
        let row = try await s.insert("todoitem", id: "a", fields: try fields(#"{"text":"milk"}"#))
        _ = try await s.insert("todoitem", id: "b", fields: try fields(#"{"text":"bread"}"#))
        let deleted = try await s.delete("todoitem", id: "a", soft: true, expectedVersion: row.version)
        #expect(deleted.deleted)
        #expect(deleted.updatedAt > row.updatedAt)
        let visible = try await s.query("todoitem", TableRowQuery(top: 50), wire: .v2)
        #expect(visible.rows.map(\.id) == ["b"])
        let all = try await s.query("todoitem", TableRowQuery(top: 50, includeDeleted: true), wire: .v2)
        #expect(all.rows.map(\.id) == ["a", "b"])
        await #expect {
            _ = try await s.delete("todoitem", id: "a", soft: true, expectedVersion: nil)
        } throws: { ($0 as? TableStorageError)?.code == .deleted }
        await #expect {
            _ = try await s.update(
                "todoitem", id: "a", fields: try fields("{}"), replace: false, expectedVersion: nil, allowDeleted: false
            )
        } throws: { ($0 as? TableStorageError)?.code == .deleted }
        let back = try await s.undelete("todoitem", id: "a", expectedVersion: deleted.version)
        #expect(!back.deleted)
        #expect(back.updatedAt > deleted.updatedAt)
    }

    @Test(arguments: TestStorage.all)
    func hardDeleteRemovesTheRow(_ kind: TestStorage) async throws {
        let s = try await storage(kind)
        _ = try await s.insert("todoitem", id: "a", fields: try fields(#"{"text":"milk"}"#))
        _ = try await s.delete("todoitem", id: "a", soft: false, expectedVersion: nil)
        #expect(try await s.row("todoitem", id: "a") == nil)
        await #expect(throws: TableStorageError.self) {
            _ = try await s.delete("todoitem", id: "a", soft: false, expectedVersion: nil)
        }
    }

    @Test(arguments: TestStorage.all)
    func queriesFilterOrderAndPageUnderEachProtocolsNames(_ kind: TestStorage) async throws {
        let clock = Clock()
        let s = try await storage(kind, clock)
        for i in 0..<120 {
            clock.advance(1000)
            _ = try await s.insert(
                "todoitem", id: String(format: "id%03d", i), fields: try fields(#"{"n":\#(i),"even":\#(i % 2 == 0)}"#))
        }
        var query = TableRowQuery(
            filter: try ODataFilter.parse("even eq true and n ge 10"), top: 50, includeCount: true)
        query.orderBy = [(field: "n", descending: true)]
        let first = try await s.query("todoitem", query, wire: .v2)
        #expect(first.count == 55)
        #expect(first.rows.count == 50)
        #expect(first.rows.first?.id == "id118")
        query.skip = 50
        let second = try await s.query("todoitem", query, wire: .v2)
        #expect(second.rows.map(\.id) == ["id018", "id016", "id014", "id012", "id010"])

        let token = first.rows[10].updatedAt
        let v1 = TableWire(version: .v1, systemProperties: [.updatedAt])
        var byUpdatedAt = TableRowQuery(
            filter: try ODataFilter.parse(
                "__updatedAt ge datetimeoffset'\(TableRow.dateString(token))'"), top: 1000)
        byUpdatedAt.orderBy = [(field: "__updatedAt", descending: false)]
        let later = try await s.query("todoitem", byUpdatedAt, wire: v1)
        #expect(later.rows.first?.updatedAt == token)
        let n = try #require(try first.rows[10].fields["n"]?.numberValue?.int64())
        #expect(later.rows.count == 120 - Int(n))
    }

    @Test(arguments: TestStorage.all)
    func aDateComparedWithTextIsABadQuery(_ kind: TestStorage) async throws {
        let s = try await storage(kind)
        await #expect {
            _ = try await s.query(
                "todoitem", TableRowQuery(filter: try ODataFilter.parse("updatedAt eq 'yesterday'"), top: 5), wire: .v2)
        } throws: { ($0 as? TableStorageError)?.code == .badQuery }
    }

    @Test func versionsRoundTripThroughTheirText() {
        for v: Int64 in [0, 1, 255, 256, 1 << 40, .max] {
            #expect(TableRow.version(from: TableRow.versionString(v)) == v)
        }
        #expect(TableRow.version(from: "not base64") == nil)
        #expect(TableRow.version(from: "AAAA") == nil)
        #expect(TableRow.versionString(1) == "AAAAAAAAAAE=")
    }

    @Test func rowsSurviveAReopenOfTheFile() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("tables-\(UUID().uuidString).sqlite")
            .path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let clock = Clock()
        do {
            let s = try await storage(clock, path: path)
            _ = try await s.insert("todoitem", id: "a", fields: try fields(#"{"text":"milk"}"#))
        }
        let s = try await storage(clock, path: path)
        let row = try #require(try await s.row("todoitem", id: "a"))
        #expect(row.fields["text"] == .string("milk"))
        let next = try await s.insert("todoitem", id: "b", fields: try fields("{}"))
        #expect(next.version == 2)
        #expect(next.updatedAt > row.updatedAt)
    }

    @Test(arguments: TestStorage.all)
    func anOwnerSeesOnlyTheirRowsAndAnotherOwnersIdIsTakenWithoutTheRow(_ kind: TestStorage) async throws {
        let s = try await storage(kind)
        let mine = try await s.insert("todoitem", id: "a", fields: try fields(#"{"text":"mine"}"#), owner: "u1")
        _ = try await s.insert("todoitem", id: "b", fields: try fields("{}"), owner: "u2")
        _ = try await s.insert("todoitem", id: "c", fields: try fields("{}"))
        #expect(try await s.row("todoitem", id: "a", owner: "u1") == mine)
        #expect(try await s.row("todoitem", id: "a", owner: "u2") == nil)
        #expect(try await s.row("todoitem", id: "c", owner: "u1") == nil)
        #expect(try await s.row("todoitem", id: "a") == mine)
        await #expect {
            _ = try await s.insert("todoitem", id: "a", fields: try fields("{}"), owner: "u2")
        } throws: {
            ($0 as? TableStorageError)?.code == .exists && ($0 as? TableStorageError)?.current == nil
        }
        for write in 0..<3 {
            await #expect {
                switch write {
                case 0:
                    _ = try await s.update(
                        "todoitem", id: "a", fields: try fields("{}"), replace: true, expectedVersion: nil,
                        allowDeleted: true, owner: "u2")
                case 1: _ = try await s.delete("todoitem", id: "a", soft: true, expectedVersion: nil, owner: "u2")
                default: _ = try await s.undelete("todoitem", id: "a", expectedVersion: nil, owner: "u2")
                }
            } throws: { ($0 as? TableStorageError)?.code == .notFound }
        }
        #expect(try await s.row("todoitem", id: "a") == mine)
        var query = TableRowQuery(top: 50, includeDeleted: true, includeCount: true)
        query.owner = "u1"
        let result = try await s.query("todoitem", query, wire: .v2)
        #expect(result.rows.map(\.id) == ["a"])
        #expect(result.count == 1)
        query.owner = nil
        #expect(try await s.query("todoitem", query, wire: .v2).rows.map(\.id) == ["a", "b", "c"])
    }

    @Test func aFileFromBeforeOwnersGainsTheColumnAndKeepsItsRows() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("tables-\(UUID().uuidString).sqlite")
            .path
        defer { try? FileManager.default.removeItem(atPath: path) }
        do {
            // The schema as it was before per-user tables.
            let queue = try DatabaseQueue(path: path)
            try await queue.write { db in
                try db.execute(
                    sql: """
                        CREATE TABLE flatland_table_clock (
                            id INTEGER PRIMARY KEY CHECK (id = 1), updated_at INTEGER NOT NULL, version INTEGER NOT NULL);
                        INSERT INTO flatland_table_clock VALUES (1, 5, 1);
                        CREATE TABLE "tbl_todoitem" (
                            id TEXT PRIMARY KEY NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
                            version INTEGER NOT NULL, deleted INTEGER NOT NULL, data TEXT NOT NULL);
                        INSERT INTO "tbl_todoitem" VALUES ('old', 5, 5, 1, 0, '{"text":"kept"}');
                        """)
            }
        }
        let s = try await storage(path: path)
        #expect(try await s.row("todoitem", id: "old")?.fields["text"] == .string("kept"))
        #expect(try await s.row("todoitem", id: "old", owner: "u1") == nil)
        let new = try await s.insert("todoitem", id: "new", fields: try fields("{}"), owner: "u1")
        #expect(try await s.row("todoitem", id: "new", owner: "u1") == new)
        // Opening it again changes nothing.
        let again = try await storage(path: path)
        #expect(try await again.row("todoitem", id: "new", owner: "u1") == new)
    }
}

/// ``TableStorage/apply(_:)`` with many writes: one transaction, each write on its own in it.
@Suite struct TableStorageBatchTests {
    private func fields(_ text: String) throws -> JSONObject {
        guard case .object(let o) = try JSONValue(parsing: text) else {
            throw TableStorageError(code: .storage, message: "")
        }
        return o
    }

    private func key(_ key: String, path: String, status: Int = 201) -> TableIdempotency {
        TableIdempotency(scope: "", key: key, method: "POST", path: path, status: status, ttl: 60_000_000)
    }

    @Test(arguments: TestStorage.all)
    func eachWriteOfABatchStandsOrFailsOnItsOwnInOrder(_ kind: TestStorage) async throws {
        let s = try await kind.make()
        let a = try await s.insert("todoitem", id: "a", fields: try fields(#"{"text":"milk"}"#))
        let results = await s.apply([
            TableWrite(table: "todoitem", id: "b", kind: .insert(fields: try fields(#"{"text":"bread"}"#))),
            TableWrite(
                table: "todoitem", id: "a",
                kind: .update(fields: try fields(#"{"text":"stale"}"#), replace: false, allowDeleted: false),
                expectedVersion: a.version + 100),
            TableWrite(table: "todoitem", id: "a", kind: .insert(fields: try fields("{}"))),
            TableWrite(
                table: "todoitem", id: "a",
                kind: .update(fields: try fields(#"{"done":true}"#), replace: false, allowDeleted: false),
                expectedVersion: a.version),
            TableWrite(table: "todoitem", id: "b", kind: .delete(soft: true)),
            TableWrite(
                table: "todoitem", id: "c", kind: .insert(fields: try fields("{}")),
                idempotency: key("k1", path: "/tables/todoitem")),
            // The same key again in the same batch: answered from the first.
            TableWrite(
                table: "todoitem", id: "d", kind: .insert(fields: try fields("{}")),
                idempotency: key("k1", path: "/tables/todoitem")),
            TableWrite(
                table: "todoitem", id: "missing",
                kind: .update(fields: try fields("{}"), replace: false, allowDeleted: false),
                idempotency: key("k2", path: "/tables/todoitem/missing", status: 200)),
        ])
        #expect(results.count == 8)
        func code(_ index: Int) -> TableStorageError.Code? {
            if case .failure(let error) = results[index] { return error.code }
            return nil
        }
        #expect(code(1) == .versionMismatch)
        #expect(code(2) == .exists)
        #expect(code(6) == .replayed)
        #expect(code(7) == .notFound)
        let ok = [0, 3, 4, 5].compactMap { try? results[$0].get() }
        #expect(ok.count == 4)
        // In order: every success after the one before it.
        #expect(ok.map(\.version) == ok.map(\.version).sorted())
        #expect(Set(ok.map(\.version)).count == 4)
        if kind == .sqlite {
            // A refused write did not even move the clock: the successes' versions follow on.
            #expect(ok.map(\.version) == (1...4).map { a.version + $0 })
        }
        if case .failure(let error) = results[6] { #expect(error.replay?.row.id == "c") }

        let stored = try #require(try await s.row("todoitem", id: "a"))
        #expect(stored.fields["text"] == .string("milk"))
        #expect(stored.fields["done"] == .bool(true))
        #expect(try await s.row("todoitem", id: "b")?.deleted == true)
        #expect(try await s.row("todoitem", id: "c") != nil)
        #expect(try await s.row("todoitem", id: "d") == nil)
        // A refused write recorded nothing under its key: the key is free for the next write.
        let free = await s.apply([
            TableWrite(
                table: "todoitem", id: "e", kind: .insert(fields: try fields("{}")),
                idempotency: key("k2", path: "/tables/todoitem"))
        ])
        #expect((try? free.first?.get())?.id == "e")
    }

    @Test(arguments: TestStorage.all)
    func aRunOfInsertsAnswersEachAsItWouldAlone(_ kind: TestStorage) async throws {
        let s = try await kind.make()
        let taken = try await s.insert("todoitem", id: "taken", fields: try fields(#"{"text":"there"}"#))
        let used = try await s.apply(
            TableWrite(
                table: "todoitem", id: "first", kind: .insert(fields: try fields("{}")),
                idempotency: key("used", path: "/tables/todoitem")))
        func insert(_ id: String, _ text: String, key k: String? = nil, owner: String? = nil) throws -> TableWrite {
            TableWrite(
                table: "todoitem", id: id, kind: .insert(fields: try fields(#"{"text":"\#(text)"}"#)), owner: owner,
                idempotency: k.map { key($0, path: "/tables/todoitem") })
        }
        let results = await s.apply([
            try insert("x1", "one", key: "kx1"),
            try insert("x2", "two"),
            try insert("taken", "again"),
            try insert("x1", "twice"),
            try insert("x3", "three", key: "used"),
            try insert("x4", "four", key: "kx4", owner: "u1"),
        ])
        #expect(results.count == 6)
        let x1 = try results[0].get()
        let x2 = try results[1].get()
        let x4 = try results[5].get()
        #expect(x1.fields["text"] == .string("one") && x2.fields["text"] == .string("two"))
        // Each its own tick: later rows, later times and versions.
        #expect(x1.updatedAt > used.updatedAt && x2.updatedAt > x1.updatedAt && x4.updatedAt > x2.updatedAt)
        #expect(x1.version > used.version && x2.version > x1.version && x4.version > x2.version)
        func failure(_ index: Int) -> TableStorageError? {
            if case .failure(let error) = results[index] { return error }
            return nil
        }
        #expect(failure(2)?.code == .exists && failure(2)?.current == taken)
        #expect(failure(3)?.code == .exists && failure(3)?.current == x1)
        #expect(failure(4)?.code == .replayed && failure(4)?.replay?.row == used)
        #expect(try await s.row("todoitem", id: "x1", owner: nil) == x1)
        #expect(try await s.row("todoitem", id: "x4", owner: "u1") == x4)
        #expect(try await s.row("todoitem", id: "x3", owner: nil) == nil)
        #expect(try await s.row("todoitem", id: "taken", owner: nil) == taken)
        // The keys of the run are remembered: a replay is answered from them.
        let replay = await s.apply([try insert("x9", "nine", key: "kx1"), try insert("x8", "eight", key: "kx4")])
        #expect(replay.compactMap { try? $0.get() }.isEmpty)
        if case .failure(let error) = replay[0] { #expect(error.replay?.row == x1) }
        if case .failure(let error) = replay[1] { #expect(error.replay?.row == x4) }
    }

    @Test(arguments: TestStorage.all)
    func aBatchOfNoWritesAnswersNothing(_ kind: TestStorage) async throws {
        let s = try await kind.make()
        #expect(await s.apply([]).isEmpty)
    }

    /// The list route's rows, written by the storage (SQLite: straight from the stored text),
    /// are byte for byte the rows read as values and written out, for every protocol, with and
    /// without a field selection and a count.
    @Test(arguments: TestStorage.all)
    func encodedRowsAreTheRowsWrittenOut(_ kind: TestStorage) async throws {
        let s = try await kind.make()
        let bodies = [
            #"{"text":"a\"b\\c\n\u0001 é 😀","complete":true,"priority":-1.5e3}"#,
            #"{}"#,
            #"{"nested":{"a":[1,{"b":null}],"$ref":"x"},"empty":[],"e":{}}"#,
            #"{"big":123456789012345678901234567890,"f":false}"#,
        ]
        for (i, body) in bodies.enumerated() {
            guard case .object(let fields) = try JSONValue(parsing: body) else { throw CancellationError() }
            _ = try await s.insert("todoitem", id: "r\(i)", fields: fields, owner: nil, idempotency: nil)
        }
        _ = try await s.delete("todoitem", id: "r1", soft: true, expectedVersion: nil, owner: nil, idempotency: nil)
        let v1 = TableWire(version: .v1, systemProperties: [.version, .deleted])
        for wire in [v1, .v2, .v3] {
            for select in [nil, ["id", "text", "updatedAt", "nested"]] as [[String]?] {
                var query = TableRowQuery(top: 10)
                query.includeDeleted = true
                query.includeCount = true
                query.orderBy = [("id", false)]
                let encoded = try await s.encodedQuery("todoitem", query, wire: wire, select: select)
                let (rows, count) = try await s.query("todoitem", query, wire: wire)
                #expect(rows.count == bodies.count)
                #expect(count == bodies.count)
                #expect(encoded.count == count)
                let written = encoded.rows.map { String(decoding: $0, as: UTF8.self) }
                let expected = rows.map { JSONValue.object($0.json(wire, select: select)).jsonString() }
                #expect(written == expected, "\(wire.version) \(select ?? [])")
            }
        }
    }
}
