import GRDB
import Testing

@testable import FlatlandServer

/// The table server's `$filter` parser and its translation to SQL, run against real rows.
@Suite struct ODataFilterTests {
    @Test(arguments: [
        "(updatedAt ge datetimeoffset'1970-01-01T00:00:00.0000000+00:00')",
        "((String eq 'world') and (updatedAt ge datetimeoffset'2001-02-01T00:00:00.0000000+00:00'))",
        "(updatedAt gt cast(2024-08-23T20:22:54.291Z,Edm.DateTimeOffset))",
        "(__updatedAt ge datetimeoffset'1970-01-01T00:00:00.000Z')",
        "not(complete) and startswith(text,'a') or endswith(text,'b') or substringof('c',text) or contains(text,'d')",
        "complete eq true and priority le 3.5 and priority ne null and tolower(text) eq 'x'",
        "updatedAt ge datetime'2024-01-01T00:00:00'",
        "text eq 'it''s'",
        "n eq -12 or n gt 1e3 or n lt 2.5d or n eq 7L",
    ])
    func parsesWhatTheClientsSend(filter: String) throws {
        _ = try ODataFilter.parse(filter)
    }

    @Test func structure() throws {
        #expect(
            try ODataFilter.parse("a eq 1 or b eq 2 and not c")
                == .or(
                    .compare(.member("a"), .eq, .number("1", isInteger: true)),
                    .and(.compare(.member("b"), .eq, .number("2", isInteger: true)), .not(.truth(.member("c"))))))
        #expect(try ODataFilter.parse("substringof('x',text)") == .test(.contains, .member("text"), .string("x")))
        #expect(
            try ODataFilter.parse("updatedAt gt cast(1970-01-01T00:00:01.5Z,Edm.DateTimeOffset)")
                == .compare(.member("updatedAt"), .gt, .date(microseconds: 1_500_000)))
        #expect(
            try ODataFilter.parse("x eq datetimeoffset'1970-01-01T01:00:00+01:00'")
                == .compare(.member("x"), .eq, .date(microseconds: 0)))
    }

    @Test(arguments: [
        ("", 0), ("a eq", 4), ("a eq 'open", 5), ("(a eq 1", 7), ("a eq 1)", 6), ("frobnicate(a) eq 1", 0),
        ("a eq datetimeoffset'yesterday'", 5), ("a eq 1 xor b eq 2", 7), ("a.b eq 1", 0), ("a eq 1e", 5),
        ("a eq 99999999999999999999", 5), ("cast(x,Edm.String) eq 1", 7), ("(a eq 1) eq 2", 9),
    ])
    func refusesWithAPosition(filter: String, offset: Int) {
        #expect {
            try ODataFilter.parse(filter)
        } throws: { error in
            (error as? ODataFilterError)?.offset == offset
        }
    }

    @Test func deepNestingIsRefusedNotACrash() {
        let deep = String(repeating: "(", count: 10_000) + "a eq 1" + String(repeating: ")", count: 10_000)
        #expect(throws: ODataFilterError.self) { try ODataFilter.parse(deep) }
        let nots = String(repeating: "not ", count: 10_000) + "a"
        #expect(throws: ODataFilterError.self) { try ODataFilter.parse(nots) }
    }

    // MARK: Against rows

    struct Columns: TableColumns {
        var dialect: SQLDialect { .sqlite }
        func column(_ member: String) -> (sql: SQLFragment, kind: ColumnKind)? {
            switch member {
            case "id": (SQLFragment("id"), .text)
            case "updatedAt": (SQLFragment("updated_at"), .date)
            case "deleted": (SQLFragment("deleted"), .bool)
            default: (dialect.jsonField(member), .json)
            }
        }
    }

    private func matching(_ filter: String) throws -> [String] {
        let db = try DatabaseQueue()
        return try db.write { db in
            try db.execute(
                sql:
                    "CREATE TABLE t (id TEXT PRIMARY KEY, updated_at INTEGER NOT NULL, deleted INTEGER NOT NULL, data TEXT NOT NULL)"
            )
            let rows: [(String, Int64, Int, String)] = [
                ("a", 1_000_000, 0, #"{"text":"apple pie","complete":true,"priority":1}"#),
                ("b", 2_000_000, 0, #"{"text":"Banana","complete":false,"priority":2.5}"#),
                ("c", 3_000_000, 1, #"{"text":"it's cherry","complete":false}"#),
                ("d", 4_000_000, 0, #"{"text":"","complete":true,"priority":null}"#),
            ]
            for row in rows {
                try db.execute(
                    sql: "INSERT INTO t VALUES (?, ?, ?, ?)", arguments: [row.0, row.1, row.2, row.3])
            }
            let condition = try ODataFilter.parse(filter).sql(Columns())
            let arguments = StatementArguments(
                condition.arguments.map { argument -> (any DatabaseValueConvertible)? in
                    switch argument {
                    case .text(let s): s
                    case .integer(let i): i
                    case .real(let d): d
                    case .bool(let b): b ? 1 : 0
                    case .null: nil
                    }
                })
            return try String.fetchAll(
                db, sql: "SELECT id FROM t WHERE " + condition.sql + " ORDER BY id", arguments: arguments)
        }
    }

    @Test(arguments: [
        ("complete eq true", ["a", "d"]),
        ("complete", ["a", "d"]),
        ("not complete", ["b", "c"]),
        ("priority gt 1", ["b"]),
        ("priority eq null", ["c", "d"]),
        ("priority ne null", ["a", "b"]),
        ("priority ne 1", ["b", "c", "d"]),
        ("startswith(text,'apple')", ["a"]),
        ("startswith(text,'APPLE')", []),
        ("endswith(text,'pie')", ["a"]),
        ("endswith(text,'')", ["a", "b", "c", "d"]),
        ("substringof('an',text)", ["b"]),
        ("contains(tolower(text),'banana')", ["b"]),
        ("text eq 'it''s cherry'", ["c"]),
        ("updatedAt ge datetimeoffset'1970-01-01T00:00:02.0000000+00:00'", ["b", "c", "d"]),
        ("updatedAt gt cast(1970-01-01T00:00:02.000Z,Edm.DateTimeOffset)", ["c", "d"]),
        ("(updatedAt ge datetimeoffset'1970-01-01T00:00:02Z') and (deleted eq false)", ["b", "d"]),
        ("id eq 'a' or id eq 'c'", ["a", "c"]),
        ("not (id eq 'a' or id eq 'c')", ["b", "d"]),
        ("priority ge 2.5", ["b"]),
        ("priority lt 2.5", ["a"]),
        ("priority le 2.5", ["a", "b"]),
        ("complete eq false and text ne 'Banana'", ["c"]),
        ("toupper(text) eq 'BANANA'", ["b"]),
        ("updatedAt lt datetimeoffset'1970-01-01T00:00:02Z'", ["a"]),
        ("updatedAt le datetimeoffset'1970-01-01T00:00:02Z'", ["a", "b"]),
        ("updatedAt eq datetimeoffset'1970-01-01T00:00:02Z'", ["b"]),
        ("updatedAt ne datetimeoffset'1970-01-01T00:00:02Z'", ["a", "c", "d"]),
        ("updatedAt gt datetime'1970-01-01T00:00:03'", ["d"]),
        ("startswith(tolower(text),'ban') and (complete eq false or priority eq null)", ["b"]),
    ])
    func selectsTheRightRows(filter: String, expected: [String]) throws {
        #expect(try matching(filter) == expected)
    }

    @Test func comparingADateWithSomethingElseIsAClearError() throws {
        #expect(throws: FilterTranslationError.self) { try ODataFilter.parse("updatedAt eq 'x'").sql(Columns()) }
        #expect(throws: FilterTranslationError.self) { try ODataFilter.parse("text gt null").sql(Columns()) }
    }
}
