import FlatlandJSON
import Foundation
import Testing

@testable import FlatlandServer

/// A listing's query options from a client that gets them wrong, or means harm: a 4xx that says
/// what is wrong, never a 5xx, and never a word of SQL or of the database in the answer. And
/// `$select` gives exactly the members it names.
@Suite struct TableQueryErrorTests {
    static func api(_ kind: TestStorage) async throws -> TableAPITests.Client {
        let table = TableDefinition(name: "movies")
        let storage = try await kind.make([table])
        let client = TableAPITests.Client(
            api: TableAPI(storage: storage, configuration: .init(tables: [table], protocols: [.v2, .v3])),
            version: "3.0.0")
        for k in 0..<12 {
            let body = #"{"id":"m\#(k)","title":"T\#(k)","year":\#(1990 + k),"text":"it's \#(k)","n":\#(k)}"#
            #expect(await client.send("POST", "/tables/movies", body).status == 201)
        }
        return client
    }

    static func encoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text
    }

    /// Words that only SQL, or a database's own message, would put in an answer.
    static let leaks = [
        "select ", " from ", " where ", "order by", "json_extract", "jsonb", "collate", "sqlite", "postgres",
        "sqlstate", "syntax error", "tbl_", "near \"", "cast(", "::", "stack overflow", "expression tree",
        "database failed",
    ]

    /// Bad query strings: the hole-5 attacks, and a spread of malformed options.
    static let badQueries: [String] = {
        var queries = [
            "$orderby=" + encoded("text\""), "$orderby=" + encoded("text'"), "$orderby=" + encoded("a b c"),
            "$orderby=" + encoded("title fizz"), "$orderby=" + encoded("t\u{0}x"), "$orderby=" + encoded("$.x"),
            "$orderby=" + encoded("\"x\" desc"), "$orderby=" + encoded("ti-tle"),
            "$select=" + encoded("year rating"), "$select=" + encoded("a\"b"), "$select=" + encoded("x,\"y"),
            "$skip=-1", "$skip=NaN", "$top=-1", "$top=NaN", "$top=100000000",
        ]
        let filters = [
            "(year - 1900) ge 100", "title eq 'open", "title eq \"x\"", "year eq 1; DROP TABLE movies",
            "year eq 1) OR (1=1", "json_extract(data, '$.x') eq 1", "frob(x) eq 1", "title eq 'a' xor 1",
            "year div 0 eq 'x' add 1", "updatedAt eq 'yesterday'", "year(1) eq 2", "'a' mul 'b' eq 1", "title gt null",
            "cast(x,Edm.Int32) eq 1", "a eq 2000-13-45", "a eq 99:99", "((((((((((((((((((((((((((((((((((a eq 1",
            String(repeating: "not ", count: 200) + "a", String(repeating: "-", count: 200) + "a eq 1",
            (0..<60).map { "a\($0)" }.joined(separator: " add ") + " eq 1", "substring(title, 'x') eq 'y'",
            "concat(title) eq 'x'", "title eq 'x' or", "and", "eq eq eq", "a in ()", "a in (1,", "\u{0}",
            "title eq '\u{0}'", "now() add 1 eq 2", "updatedAt sub 1 eq 2", "x eq 1e999", "x eq 1e-999m",
            "length(1) eq 1 and -now() eq 1",
        ]
        queries += filters.map { "$filter=" + encoded($0) }
        return queries
    }()

    @Test(arguments: TestStorage.all)
    func badQueriesAreA4xxThatSaysWhatAndHoldsNoSQL(_ kind: TestStorage) async throws {
        let client = try await Self.api(kind)
        for query in Self.badQueries {
            let reply = await client.send("GET", "/tables/movies?" + query)
            let body = String(decoding: reply.body, as: UTF8.self)
            #expect((400..<500).contains(reply.status), "\(query): \(reply.status) \(body)")
            // (A word the query itself holds may come back in the answer, quoted.)
            let asked = (query.removingPercentEncoding ?? query).lowercased()
            let lower = body.lowercased()
            for word in Self.leaks where lower.contains(word) && !asked.contains(word) {
                Issue.record("\(query): the answer holds '\(word)': \(body)")
            }
            let option = String(query.prefix { $0 != "=" })
            if ["$filter", "$orderby", "$select"].contains(option) {
                #expect(body.contains(option), "\(query): the answer does not say which option: \(body)")
            }
        }
    }

    /// Hole 5: `$orderby=text"` was a 500 holding the SQL statement.
    @Test(arguments: TestStorage.all)
    func anOrderByOnANameThatIsNoFieldIsA400(_ kind: TestStorage) async throws {
        let client = try await Self.api(kind)
        let reply = await client.send("GET", "/tables/movies?$orderby=" + Self.encoded("text\""))
        #expect(reply.status == 400)
        #expect(String(decoding: reply.body, as: UTF8.self).contains("$orderby"))
    }

    /// Hole 5: a `$filter` of 90 `or` terms was a 500 ("parser stack overflow"). Hundreds of
    /// terms get their answer.
    @Test(arguments: TestStorage.all, [90, 400, 2000])
    func aLongFilterGetsItsAnswer(_ kind: TestStorage, terms: Int) async throws {
        let client = try await Self.api(kind)
        let filter = (0..<terms).map { "year eq \(1990 + $0 * 2)" }.joined(separator: " or ")
        let reply = await client.send("GET", "/tables/movies?$count=true&$filter=" + Self.encoded(filter))
        #expect(reply.status == 200, "\(String(decoding: reply.body, as: UTF8.self).prefix(300))")
        let page = try JSONValue(parsing: reply.body)
        #expect(page["count"]?.jsonString() == "6")
        let mixed = (0..<terms).map { $0 % 2 == 0 ? "(n ne \($0) and year gt 1)" : "title eq 'x\($0)'" }
            .joined(separator: " or ")
        #expect(await client.send("GET", "/tables/movies?$filter=" + Self.encoded(mixed)).status == 200)
    }

    @Test(arguments: TestStorage.all)
    func selectGivesExactlyTheMembersNamed(_ kind: TestStorage) async throws {
        let client = try await Self.api(kind)
        for selection in [
            ["title"], ["id", "year"], ["updatedAt", "version", "deleted"], ["id"], ["year", "missing"],
        ] {
            let reply = await client.send(
                "GET", "/tables/movies?$top=3&$skip=2&$select=" + selection.joined(separator: ","))
            #expect(reply.status == 200)
            guard case .object(let page) = try JSONValue(parsing: reply.body), case .array(let items)? = page["items"]
            else {
                Issue.record("not a page: \(String(decoding: reply.body, as: UTF8.self))")
                continue
            }
            #expect(items.count == 3)
            for case .object(let item) in items {
                #expect(Set(item.members.map(\.key)) == Set(selection).subtracting(["missing"]), "\(selection)")
            }
        }
    }
}
