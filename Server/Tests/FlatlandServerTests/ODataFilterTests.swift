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
                == .or([
                    .compare(.member("a", at: 0), .eq, .literal(.integer(1), at: 5), at: 2),
                    .and([
                        .compare(.member("b", at: 10), .eq, .literal(.integer(2), at: 15), at: 12),
                        .not(.member("c", at: 25), at: 21),
                    ]),
                ]))
        #expect(
            try ODataFilter.parse("substringof('x',text)")
                == .call(.contains, [.member("text", at: 16), .literal(.string("x"), at: 12)], at: 0))
        #expect(
            try ODataFilter.parse("updatedAt gt cast(1970-01-01T00:00:01.5Z,Edm.DateTimeOffset)")
                == .compare(
                    .member("updatedAt", at: 0), .gt, .literal(.dateTimeOffset(microseconds: 1_500_000), at: 13), at: 10
                ))
        #expect(
            try ODataFilter.parse("x eq datetimeoffset'1970-01-01T01:00:00+01:00'")
                == .compare(.member("x", at: 0), .eq, .literal(.dateTimeOffset(microseconds: 0), at: 5), at: 2))
        // Arithmetic binds tighter than comparison, mul tighter than add, left to right.
        #expect(
            try ODataFilter.parse("a add b mul 2 sub 1 eq 3")
                == .compare(
                    .arithmetic(
                        .arithmetic(
                            .member("a", at: 0), .add,
                            .arithmetic(.member("b", at: 6), .mul, .literal(.integer(2), at: 12), at: 8), at: 2),
                        .sub, .literal(.integer(1), at: 18), at: 14),
                    .eq, .literal(.integer(3), at: 23), at: 20))
    }

    @Test(arguments: [
        ("a eq 2000-01-01", ODataLiteral.date("2000-01-01")),
        ("a eq cast(2000-01-01,Edm.Date)", .date("2000-01-01")),
        ("a eq 07:14", .timeOfDay("07:14:00")),
        ("a eq cast(07:14:00.5000,Edm.TimeOfDay)", .timeOfDay("07:14:00.5")),
        ("a eq 2000-01-01T00:00:00Z", .dateTimeOffset(microseconds: 946_684_800_000_000)),
        ("a eq datetime'2000-01-01T00:00:00'", .dateTimeOffset(microseconds: 946_684_800_000_000)),
        ("a eq cast(2000-01-01,Edm.DateTimeOffset)", .dateTimeOffset(microseconds: 946_684_800_000_000)),
        ("a eq 0F8FAD5B-D9CB-469F-A165-70867728950E", .guid("0f8fad5b-d9cb-469f-a165-70867728950e")),
        ("a eq guid'0f8fad5b-d9cb-469f-a165-70867728950e'", .guid("0f8fad5b-d9cb-469f-a165-70867728950e")),
        ("a eq 2.5m", .decimal("2.5")),
        ("a eq 2m", .decimal("2")),
        ("a eq 1000.5", .decimal("1000.5")),
        ("a eq 1e3", .double(1000)),
        ("a eq 2.5d", .double(2.5)),
        ("a eq 2.5f", .double(2.5)),
        ("a eq 7L", .integer(7)),
        ("a eq -12", .integer(-12)),
        ("a eq null", .null),
        ("a eq 'it''s'", .string("it's")),
    ])
    func readsEveryKindOfLiteral(filter: String, literal: ODataLiteral) throws {
        guard case .compare(_, .eq, .literal(let read, _), _) = try ODataFilter.parse(filter) else {
            Issue.record("\(filter) is not a comparison with a literal")
            return
        }
        #expect(read == literal)
    }

    @Test func longChainsStayFlat() throws {
        let terms = (0..<1000).map { "id eq '\($0)'" }
        guard case .or(let read) = try ODataFilter.parse(terms.joined(separator: " or ")) else {
            Issue.record("not an or")
            return
        }
        #expect(read.count == 1000)
    }

    @Test(arguments: [
        ("", 0, "ends"), ("a eq", 4, "ends"), ("a eq 'open", 5, "not closed"), ("(a eq 1", 7, "')'"),
        ("a eq 1)", 6, "unexpected"), ("frobnicate(a) eq 1", 0, "frobnicate"),
        ("a eq datetimeoffset'yesterday'", 20, "yesterday"), ("a eq 1 xor b eq 2", 7, "xor"), ("a.b eq 1", 0, "a.b"),
        ("a eq 1e", 5, "exponent"), ("a eq 99999999999999999999", 5, "range"),
        ("cast(x,Edm.Int32) eq 1", 7, "Edm.Int32"),
        ("(a eq 1) eq 2", 9, "'eq'"), ("(year - 1900) ge 100", 6, "'-'"), ("year + 1 eq 2", 5, "'+'"),
        ("a == 1", 2, "'='"), ("geo.distance(p, geography'POINT(-97 38)') lt 0.2", 0, "geo.distance"),
        ("length(a, b) eq 1", 0, "length takes 1"), ("substring(a) eq 'x'", 0, "substring takes 2 or 3"),
        ("a in 1", 5, "'('"), ("a eq 2000-13-01", 5, "2000-13-01"), ("a eq 25:00:00", 7, "unexpected"),
        ("a eq 12x", 5, "12x"), ("now(1) eq 1", 0, "now takes 0"),
    ])
    func refusesWithAPosition(filter: String, offset: Int, saying: String) {
        #expect {
            try ODataFilter.parse(filter)
        } throws: { error in
            guard let error = error as? ODataFilterError else { return false }
            return error.offset == offset && error.message.contains(saying)
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
            let condition = try FilterTranslator(columns: Columns()).condition(try ODataFilter.parse(filter))
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

    @Test(arguments: [
        ("updatedAt eq 'x'", 10, "a date can only be compared with a date"),
        ("text gt null", 5, "null can only be compared with eq or ne"),
        ("'a' add 1 eq 2", 4, "add needs a number"),
        ("year(1) eq 1", 0, "year needs a date"),
        ("updatedAt eq 1", 10, "a date can only be compared with a date"),
        ("updatedAt eq 07:00:00", 10, "a date can only be compared with a date"),
        ("priority", 0, ""),
        ("'x'", 0, "a condition was expected"),
        ("1 add 2", 0, "a condition was expected"),
        ("-'x' eq 1", 0, "- needs a number"),
    ])
    func aFilterThatCannotBeRunIsAClearError(filter: String, offset: Int, saying: String) throws {
        let parsed = try ODataFilter.parse(filter)
        if saying.isEmpty {
            _ = try FilterTranslator(columns: Columns()).condition(parsed)
            return
        }
        #expect {
            try FilterTranslator(columns: Columns()).condition(parsed)
        } throws: { error in
            guard let error = error as? ODataFilterError else { return false }
            return error.offset == offset && error.message.contains(saying)
        }
    }
}
