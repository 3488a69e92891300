import FlatlandJSON
import Foundation
import Testing

@testable import FlatlandServer

/// What only PostgreSQL does: several server instances on one database, the migration run by
/// instances starting at once, its URLs, and the same answers as SQLite to every filter.
@Suite("Tables on PostgreSQL: many instances, one database")
struct PostgresTableStorageTests {
    static let v2 = ["ZUMO-API-VERSION": "2.0.0"]
    static let postgres = TestStorage.all.contains(.postgres)

    @Test(.enabled(if: postgres, "FLATLAND_NO_POSTGRES=1"))
    func aPullsPageReadsTheUpdatedAtIndexInOrderWithoutSortingTheTable() async throws {
        let storage = try #require(try await TestStorage.postgres.make() as? PostgresTableStorage)
        var writes: [TableWrite] = []
        for i in 0..<2000 {
            writes.append(
                TableWrite(table: "todoitem", id: "r\(i)", kind: .insert(fields: ["n": .number(JSONNumber(i))])))
        }
        for result in await storage.apply(writes) { _ = try result.get() }
        // A pull's page: rows from the token on, in updatedAt order, one more than the page.
        for (field, descending) in [("updatedAt", false), ("updatedAt", true), ("id", false)] {
            var query = TableRowQuery(top: 51, includeDeleted: true)
            query.filter = try ODataFilter.parse("updatedAt ge datetimeoffset'1970-01-01T00:00:00Z'")
            query.orderBy = [(field, descending)]
            let plan = try await storage.plan("todoitem", query, wire: .v2)
            // No sort of the whole table (an incremental sort of rows with the same updatedAt,
            // for the id that breaks ties, is no such sort).
            let fullSort = plan.split(separator: "\n").contains {
                $0.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "->  ", with: "").hasPrefix("Sort  (")
            }
            #expect(!fullSort, "\(field) \(descending ? "desc" : "asc"):\n\(plan)")
            #expect(plan.contains("Index"), "\(field) \(descending ? "desc" : "asc"):\n\(plan)")
        }
    }

    @Test(.enabled(if: postgres, "FLATLAND_NO_POSTGRES=1"))
    func twoInstancesAnswerAlikeAndConflictingPatchesGiveOne200AndOne412() async throws {
        // Both servers on the same schema of the same database.
        let configuration = try SampleServer.Configuration(population: .init(users: 1), tables: TableServing())
            .on(.postgres)
        try await withServer(configuration) { _, a in
            try await withServer(configuration) { _, b in
                #expect(a != b)
                let created = try await request(
                    port: a, "POST", "/tables/todoitem", body: #"{"id":"r","text":"first","n":0}"#, headers: Self.v2)
                #expect(created.status == 201)
                let throughA = try await request(port: a, "GET", "/tables/todoitem/r", headers: Self.v2)
                let throughB = try await request(port: b, "GET", "/tables/todoitem/r", headers: Self.v2)
                #expect(throughB.status == 200)
                #expect(throughA.body == throughB.body)
                #expect(throughB.body == created.body)
                #expect(throughA.headers["etag"] != nil && throughA.headers["etag"] == throughB.headers["etag"])

                for round in 1...20 {
                    let current = try await request(port: b, "GET", "/tables/todoitem/r", headers: Self.v2)
                    let etag = try #require(current.headers["etag"])
                    let headers = Self.v2.merging(["If-Match": etag]) { $1 }
                    async let fromA = request(
                        port: a, "PATCH", "/tables/todoitem/r", body: #"{"text":"a\#(round)","n":\#(round)}"#,
                        headers: headers)
                    async let fromB = request(
                        port: b, "PATCH", "/tables/todoitem/r", body: #"{"text":"b\#(round)","n":\#(round)}"#,
                        headers: headers)
                    let (ra, rb) = try await (fromA, fromB)
                    #expect([ra.status, rb.status].sorted() == [200, 412], "round \(round)")
                    let (won, lost) = ra.status == 200 ? (ra, rb) : (rb, ra)
                    // The loser is told the winner's row; both instances now serve exactly it.
                    #expect(lost.json == won.json, "round \(round)")
                    #expect(lost.headers["etag"] == won.headers["etag"])
                    for port in [a, b] {
                        let now = try await request(port: port, "GET", "/tables/todoitem/r", headers: Self.v2)
                        #expect(now.body == won.body, "round \(round)")
                        #expect(now.headers["etag"] == won.headers["etag"])
                    }
                    #expect(won.json?["n"] == .number(JSONNumber(Int64(round))))
                }

                // Rows written through each are listed alike by both, in updatedAt order.
                for (i, port) in [a, b, a, b].enumerated() {
                    let reply = try await request(
                        port: port, "POST", "/tables/todoitem", body: #"{"id":"x\#(i)"}"#, headers: Self.v2)
                    #expect(reply.status == 201)
                }
                let path = "/tables/todoitem?$orderby=updatedAt&$inlinecount=allpages"
                let listA = try await request(port: a, "GET", path, headers: Self.v2)
                let listB = try await request(port: b, "GET", path, headers: Self.v2)
                #expect(listA.body == listB.body)
                #expect(
                    listA.json?["results"]?.items.compactMap { $0["id"]?.stringValue } == ["r", "x0", "x1", "x2", "x3"])
            }
        }
    }

    @Test(.enabled(if: postgres, "FLATLAND_NO_POSTGRES=1"))
    func updatedAtAndVersionsIncreaseAcrossInstances() async throws {
        let url = TestStorage.url(try TestStorage.postgresURL(), schema: TestStorage.freshSchema())
        let tables = [TableDefinition(name: "todoitem")]
        let one = try PostgresTableStorage(url: url)
        let two = try PostgresTableStorage(url: url)
        try await one.prepare(tables)
        try await two.prepare(tables)
        let rows = try await withThrowingTaskGroup(of: TableRow.self) { group in
            for i in 0..<40 {
                group.addTask {
                    try await (i % 2 == 0 ? one : two).insert("todoitem", id: "r\(i)", fields: JSONObject())
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(rows.map(\.updatedAt)).count == 40)
        #expect(Set(rows.map(\.version)).count == 40)
        // Sorted by version, the rows are sorted by updatedAt too: the clock ticks in commit order.
        let byVersion = rows.sorted { $0.version < $1.version }
        #expect(byVersion.map(\.updatedAt) == byVersion.map(\.updatedAt).sorted())
    }

    @Test(.enabled(if: postgres, "FLATLAND_NO_POSTGRES=1"))
    func theMigrationRunsTwiceAndAtOnce() async throws {
        let url = TestStorage.url(try TestStorage.postgresURL(), schema: TestStorage.freshSchema())
        let tables = [TableDefinition(name: "todoitem"), TableDefinition(name: "diary-2", access: .perUser)]
        // Four instances starting at once on a new schema.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask { try await PostgresTableStorage(url: url).prepare(tables) }
            }
            try await group.waitForAll()
        }
        let storage = try PostgresTableStorage(url: url)
        try await storage.prepare(tables)
        let row = try await storage.insert(
            "diary-2", id: "d", fields: JSONObject(), owner: "u1", idempotency: nil)
        // Again, with one more table: the rows stay, the new table is there.
        try await storage.prepare(tables + [TableDefinition(name: "notes")])
        #expect(try await storage.row("diary-2", id: "d", owner: "u1") == row)
        #expect(try await storage.row("diary-2", id: "d", owner: "u2") == nil)
        let note = try await storage.insert("notes", id: "n", fields: JSONObject())
        #expect(note.version > row.version)
    }

    @Test(
        arguments: [
            ("postgres://me@db.example:6543/app?schema=s1", "db.example", 6543, "me", nil, "app", "s1"),
            ("postgresql://me:p%40ss@127.0.0.1/app", "127.0.0.1", 5432, "me", "p@ss", "app", "public"),
            ("POSTGRES://a%20b@[::1]:7/d%20x?sslmode=disable", "::1", 7, "a b", nil, "d x", "public"),
        ] as [(String, String, Int, String, String?, String, String)])
    func urlsAreRead(_ input: (String, String, Int, String, String?, String, String)) throws {
        let location = try PostgresLocation(url: input.0)
        #expect(location.host == input.1)
        #expect(location.port == input.2)
        #expect(location.user == input.3)
        #expect(location.password == input.4)
        #expect(location.database == input.5)
        #expect(location.schema == input.6)
        #expect(!location.display.contains("ss"))
    }

    @Test func theStorageOptionPicksPostgresOnlyForItsURLs() {
        #expect(TableServing.Storage("postgres://u@h/d") == .postgres(url: "postgres://u@h/d"))
        #expect(TableServing.Storage("postgresql://u@h/d") == .postgres(url: "postgresql://u@h/d"))
        #expect(TableServing.Storage("postgres.sqlite") == .sqlite(path: "postgres.sqlite"))
        #expect(TableServing.Storage("./postgres://x") == .sqlite(path: "./postgres://x"))
        var serving = TableServing(databasePath: "a.sqlite")
        #expect(serving.storage == .sqlite(path: "a.sqlite"))
        serving.storage = .postgres(url: "postgres://u@h/d")
        #expect(serving.databasePath == nil)
        serving.databasePath = "b.sqlite"
        #expect(serving.storage == .sqlite(path: "b.sqlite"))
    }

    @Test func aBadURLOrAnUnreachableDatabaseIsAClearErrorAtStart() async throws {
        for (url, code) in [
            ("postgres://127.0.0.1/db", TableServingError.Code.badDatabaseURL),
            ("postgres://me@127.0.0.1:1/db", .databaseFailed),
        ] {
            let server = SampleServer(
                configuration: .init(population: .init(users: 1), tables: TableServing(storage: .postgres(url: url))))
            await #expect {
                _ = try await server.start()
            } throws: { error in
                (error as? TableServingError)?.code == code
            }
        }
    }
}

/// Every filter of the filter tests, and orders over mixed values, answer the same rows on
/// PostgreSQL as on SQLite.
@Suite("Filters: the same rows on both storages")
struct StorageParityTests {
    static let rows = [
        ("a", #"{"text":"apple pie","complete":true,"priority":1,"tag":"B"}"#),
        ("b", #"{"text":"Banana","complete":false,"priority":2.5,"tag":"a"}"#),
        ("c", #"{"text":"it's cherry","complete":false,"tag":10}"#),
        ("d", #"{"text":"","complete":true,"priority":null,"tag":"é"}"#),
        ("e", #"{"text":"Zed","priority":-3,"tag":true}"#),
    ]

    static let filters = [
        "complete eq true", "complete", "not complete", "priority gt 1", "priority eq null", "priority ne null",
        "priority ne 1", "startswith(text,'apple')", "startswith(text,'APPLE')", "endswith(text,'pie')",
        "endswith(text,'')", "substringof('an',text)", "contains(tolower(text),'banana')", "text eq 'it''s cherry'",
        "updatedAt ge datetimeoffset'1970-01-01T00:00:02Z'", "id eq 'a' or id eq 'c'", "not (id eq 'a' or id eq 'c')",
        "priority ge 2.5", "priority lt 2.5", "priority le 2.5", "complete eq false and text ne 'Banana'",
        "toupper(text) eq 'BANANA'", "text gt 'Zed'", "text lt 'a'", "tag eq 'a'", "tag gt 'B'", "tag eq 10",
        "deleted eq false", "id ge 'c'", "version ge 3", "'b' lt text", "missing eq null", "not (missing eq 'x')",
    ]

    static let orders = ["text", "text desc", "priority", "priority desc", "tag", "tag desc", "complete,text"]

    func storages() async throws -> [any TableStorage] {
        var storages: [any TableStorage] = []
        for kind in TestStorage.all {
            let storage = try await kind.make()
            for (id, text) in Self.rows {
                guard case .object(let fields) = try JSONValue(parsing: text) else { continue }
                _ = try await storage.insert("todoitem", id: id, fields: fields)
            }
            storages.append(storage)
        }
        return storages
    }

    @Test func everyFilterAndOrderSelectsTheSameRows() async throws {
        let storages = try await storages()
        try #require(storages.count == TestStorage.all.count)
        func ids(_ storage: any TableStorage, filter: String?, order: String?) async throws -> [String] {
            var query = TableRowQuery(filter: try filter.map(ODataFilter.parse), top: 50, includeDeleted: true)
            query.orderBy = (order ?? "").split(separator: ",").map { term in
                let words = term.split(separator: " ")
                return (String(words[0]), words.count > 1)
            }
            return try await storage.query("todoitem", query, wire: .v2).rows.map(\.id)
        }
        for filter in Self.filters {
            let answers = try await storages.asyncMap { try await ids($0, filter: filter, order: nil) }
            #expect(Set(answers.map { $0.joined(separator: ",") }).count == 1, "\(filter): \(answers)")
        }
        for order in Self.orders {
            let answers = try await storages.asyncMap { try await ids($0, filter: nil, order: order) }
            #expect(Set(answers.map { $0.joined(separator: ",") }).count == 1, "$orderby=\(order): \(answers)")
        }
    }

    /// A name that is not a field name (OData's identifiers) never reaches the SQL: it is the
    /// client's mistake (a 400), the same on both storages.
    @Test(arguments: TestStorage.all)
    func aFieldNameIsBoundNeverSplicedIntoTheSQL(_ kind: TestStorage) async throws {
        let storage = try await kind.make()
        guard case .object(let fields) = try JSONValue(parsing: #"{"it_s":2,"a\"b":1}"#) else { return }
        _ = try await storage.insert("todoitem", id: "q", fields: fields)
        var query = TableRowQuery(top: 5)
        query.orderBy = [(field: "it_s", descending: false)]
        #expect(try await storage.query("todoitem", query, wire: .v2).rows.map(\.id) == ["q"])
        for name in ["x') OR 1=1 --", "it's", "a\"b", "text\""] {
            query.orderBy = [(field: name, descending: true)]
            await #expect {
                try await storage.query("todoitem", query, wire: .v2)
            } throws: { error in
                (error as? TableStorageError)?.code == .badQuery
            }
        }
    }
}

extension Array {
    /// `transform` of each element, in order, one after the other.
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var out: [T] = []
        for element in self { out.append(try await transform(element)) }
        return out
    }
}
