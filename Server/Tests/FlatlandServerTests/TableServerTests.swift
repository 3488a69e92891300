import FlatlandJSON
import FlatlandServer
import Foundation
import Testing

/// The table routes served over loopback, beside the seed's API.
@Suite("Tables served over loopback")
struct TableServerTests {
    private let v2 = ["ZUMO-API-VERSION": "2.0.0"]

    @Test(arguments: TestStorage.all)
    func insertReadPageAndFilterOverHTTP(_ kind: TestStorage) async throws {
        try await withServer(on: kind) { _, port in
            let created = try await request(
                port: port, "POST", "/tables/todoitem", body: #"{"id":"a","text":"milk"}"#, headers: v2)
            #expect(created.status == 201)
            let etag = try #require(created.headers["etag"])
            #expect(created.headers["location"] == "http://127.0.0.1:\(port)/tables/todoitem/a")
            let version = try #require(created.json?["version"]?.stringValue)
            #expect(etag == "\"\(version)\"")
            let updatedAt = try #require(created.json?["updatedAt"]?.stringValue)

            // A stale If-Match: 412 with the current row.
            _ = try await request(
                port: port, "PATCH", "/tables/todoitem/a", body: #"{"text":"oat milk"}"#,
                headers: v2.merging(["If-Match": etag]) { $1 })
            let stale = try await request(
                port: port, "PATCH", "/tables/todoitem/a", body: #"{"text":"soy"}"#,
                headers: v2.merging(["If-Match": etag]) { $1 })
            #expect(stale.status == 412)
            #expect(stale.json?["text"] == .string("oat milk"))

            // A date filter with an offset's + as %2B and spaces as %20, as the .NET client sends it.
            let since = updatedAt.replacingOccurrences(of: "Z", with: "")
            let filter = "(updatedAt%20ge%20datetimeoffset'\(since)%2B00:00')"
            let filtered = try await request(
                port: port, "GET",
                "/tables/todoitem?$filter=\(filter)&$orderby=updatedAt&$skip=0&$top=50&__includeDeleted=true",
                headers: v2)
            #expect(filtered.status == 200)
            guard case .array(let rows)? = filtered.json else {
                Issue.record("not an array: \(String(decoding: filtered.body, as: UTF8.self))")
                return
            }
            #expect(rows.compactMap { $0["id"]?.stringValue } == ["a"])
        }
    }

    @Test(arguments: TestStorage.all)
    func aFullPageLinksToTheNextWithAnAbsoluteURLOnThisServer(_ kind: TestStorage) async throws {
        try await withServer(on: kind) { _, port in
            for i in 0..<55 {
                _ = try await request(port: port, "POST", "/tables/todoitem", body: #"{"id":"r\#(i)"}"#, headers: v2)
            }
            let first = try await request(port: port, "GET", "/tables/todoitem?$orderby=id", headers: v2)
            let link = try #require(first.headers["link"])
            #expect(link.hasPrefix("<http://127.0.0.1:\(port)/tables/todoitem?"))
            #expect(link.hasSuffix(">; rel=next"))
            let next = String(link.dropFirst("<http://127.0.0.1:\(port)".count).prefix { $0 != ">" })
            let second = try await request(port: port, "GET", next, headers: v2)
            guard case .array(let rest)? = second.json, case .array(let page)? = first.json else {
                Issue.record("not arrays")
                return
            }
            #expect(page.count + rest.count == 55)
            #expect(second.headers["link"] == nil)

            let v3 = try await request(
                port: port, "GET", "/tables/todoitem?$count=true", headers: ["ZUMO-API-VERSION": "3.0.0"])
            #expect(v3.json?["count"] == .number(JSONNumber(55)))
            // v3 pages by 100: the 55 rows are one page, and nextLink is written as null.
            #expect(v3.json?["nextLink"] == .null)
            #expect(v3.json?["items"]?.items.count == 55)
        }
    }

    @Test(arguments: TestStorage.all)
    func theProtocolsServedAreChosenAtStart(_ kind: TestStorage) async throws {
        let tables = TableServing(tables: [TableDefinition(name: "notes")], protocols: [.v1, .v2])
        try await withServer(on: kind, .init(population: .init(users: 1), tables: tables)) { _, port in
            #expect(try await request(port: port, "GET", "/tables/notes").status == 200)
            #expect(try await request(port: port, "GET", "/tables/notes", headers: v2).status == 200)
            let v3 = try await request(port: port, "GET", "/tables/notes", headers: ["ZUMO-API-VERSION": "3.0.0"])
            #expect(v3.status == 400)
            #expect(try await request(port: port, "GET", "/tables/todoitem", headers: v2).status == 404)
        }
        try await withServer(on: kind) { _, port in
            let missing = try await request(port: port, "GET", "/tables/todoitem")
            #expect(missing.status == 400)
            #expect(String(decoding: missing.body, as: UTF8.self).contains("ZUMO-API-VERSION"))
        }
    }

    @Test func rowsKeptInAFileOutliveTheServer() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("tables-\(UUID().uuidString).sqlite")
            .path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let tables = TableServing(databasePath: path)
        try await withServer(.init(population: .init(users: 1), tables: tables)) { _, port in
            let created = try await request(
                port: port, "POST", "/tables/todoitem", body: #"{"id":"kept"}"#, headers: v2)
            #expect(created.status == 201)
        }
        try await withServer(.init(population: .init(users: 1), tables: tables)) { _, port in
            let kept = try await request(port: port, "GET", "/tables/todoitem/kept", headers: v2)
            #expect(kept.status == 200)
        }
    }

    /// Two servers on one SQLite file (a second instance, or one starting while the old one
    /// ends): concurrent writes through both wait for each other's lock, none answers 500.
    @Test func twoServersOnOneFileWriteConcurrentlyWithoutLockErrors() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("tables-\(UUID().uuidString).sqlite")
            .path
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        let tables = TableServing(databasePath: path)
        try await withServer(.init(population: .init(users: 1), tables: tables)) { _, first in
            try await withServer(.init(population: .init(users: 1), tables: tables)) { _, second in
                let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                    for i in 0..<120 {
                        group.addTask {
                            let reply = try await request(
                                port: i % 2 == 0 ? first : second, "POST", "/tables/todoitem",
                                body: #"{"id":"row-\#(i)","text":"\#(String(repeating: "x", count: 200))"}"#,
                                headers: v2)
                            return reply.status
                        }
                    }
                    return try await group.reduce(into: [Int: Int]()) { $0[$1, default: 0] += 1 }
                }
                #expect(statuses == [201: 120])
                let all = try await request(
                    port: first, "GET", "/tables/todoitem?$top=1000", headers: ["ZUMO-API-VERSION": "3.0.0"])
                #expect(all.json?["items"]?.items.count == 100)
                let count = try await request(
                    port: second, "GET", "/tables/todoitem?$top=0&$count=true", headers: ["ZUMO-API-VERSION": "3.0.0"])
                #expect(count.json?["count"] == .number(JSONNumber(120)))
            }
        }
    }

    @Test(arguments: TestStorage.all)
    func everyRefusalOverHTTPIsAJSONError(_ kind: TestStorage) async throws {
        try await withServer(on: kind, .init(tables: TableServing(maxBodyBytes: 32))) { _, port in
            let cases: [(method: String, path: String, body: String?, headers: [String: String], status: Int)] = [
                ("GET", "/tables/nosuch", nil, v2, 404),
                ("GET", "/tables/todoitem", nil, [:], 400),
                ("GET", "/tables/todoitem", nil, ["ZUMO-API-VERSION": "4.0.0"], 400),
                ("GET", "/tables/todoitem", nil, v2.merging(["Authorization": "Bearer nope"]) { $1 }, 401),
                ("DELETE", "/tables/todoitem", nil, v2, 405),
                ("POST", "/tables/todoitem", #"{"id":"a","text":"far too long for 32"}"#, v2, 413),
                ("POST", "/tables/todoitem", "{", v2, 400),
            ]
            for c in cases {
                let reply = try await request(port: port, c.method, c.path, body: c.body, headers: c.headers)
                #expect(reply.status == c.status, "\(c.method) \(c.path)")
                #expect(reply.headers["content-type"] == "application/json")
                #expect(reply.json?["error"]?.stringValue != nil, "\(String(decoding: reply.body, as: UTF8.self))")
            }
            let all = try await request(port: port, "GET", "/tables/todoitem?__includeDeleted=true", headers: v2)
            #expect(all.json?.items.isEmpty == true)
        }
    }
}
