import FlatlandJSON
import Foundation
import Testing

@testable import FlatlandServer

/// What the official servers do and real clients count on: paging per protocol (Datasync's
/// `nextLink` query string, Node's `Link` header), conditional requests, the media type, and
/// system property names that no row can hold twice. On SQLite and PostgreSQL.
@Suite struct TableCompatibilityTests {
    struct Client {
        let api: TableAPI
        var version: String?

        func send(
            _ method: String, _ path: String, _ body: String = "", headers: [String: String] = [:]
        ) async -> SampleAPI.Reply {
            var headers = headers
            if let version { headers["zumo-api-version"] = version }
            var query: [String: String] = [:]
            var route = path
            var rawQuery: String?
            if let q = path.firstIndex(of: "?") {
                route = String(path[..<q])
                rawQuery = String(path[path.index(after: q)...])
                for pair in path[path.index(after: q)...].split(separator: "&") {
                    let kv = pair.split(separator: "=", maxSplits: 1).map(String.init)
                    query[kv[0].removingPercentEncoding ?? kv[0]] = (kv.count > 1 ? kv[1] : "").removingPercentEncoding
                }
            }
            return await api.respond(
                method: method, path: route, query: query, rawQuery: rawQuery, headers: headers, body: Array(body.utf8),
                baseURL: "https://tables.example")
                ?? SampleAPI.Reply(status: -1)
        }

        func with(_ version: String?) -> Client { Client(api: api, version: version) }
    }

    private func client(
        _ kind: TestStorage, _ version: String? = "3.0.0", pageSize: Int? = nil, maxTop: Int? = nil,
        protocols: Set<TableWire.Version> = [.v2, .v3]
    ) async throws -> Client {
        let table = TableDefinition(name: "todoitem")
        let storage = try await kind.make([table])
        return Client(
            api: TableAPI(
                storage: storage,
                configuration: .init(tables: [table], protocols: protocols, pageSize: pageSize, maxTop: maxTop)),
            version: version)
    }

    private func json(_ reply: SampleAPI.Reply) throws -> JSONValue { try JSONValue(parsing: reply.body) }
    private func header(_ reply: SampleAPI.Reply, _ name: String) -> String? {
        reply.headers.first { $0.0 == name }?.1
    }
    /// A v3 `nextLink` of this query string, as the server writes it.
    private func v3Link(_ query: String) -> JSONValue {
        .string(TableAPI.v3NextLinkIsQueryString ? query : "https://tables.example/tables/todoitem?" + query)
    }
    /// The path a v3 `nextLink` leads to.
    private func path(ofV3Link link: String) -> String {
        link.hasPrefix("https://") ? String(link.dropFirst("https://tables.example".count)) : "/tables/todoitem?" + link
    }

    private func ids(_ value: JSONValue?) -> [String] {
        guard case .array(let items)? = value else { return [] }
        return items.compactMap { $0["id"]?.stringValue }
    }

    private func fill(_ c: Client, _ count: Int) async {
        for i in 0..<count {
            _ = await c.send("POST", "/tables/todoitem", #"{"id":"r\#(String(format: "%03d", i))","n":\#(i)}"#)
        }
    }

    // MARK: Paging

    @Test(arguments: TestStorage.all)
    func v3PagesBy100WithANextLinkThatIsTheRequestsOwnQueryString(_ kind: TestStorage) async throws {
        let c = try await client(kind)
        await fill(c, 250)
        let first = await c.send("GET", "/tables/todoitem?$filter=n%20ge%2010&$count=true&$orderby=n")
        let body = try json(first)
        #expect(ids(body["items"]).count == 100)
        #expect(body["count"] == .number(JSONNumber(240)))
        // Datasync's form: the options as they came, $skip appended; the client puts it on the
        // table's URL (new UriBuilder(endpoint) { Query = nextLink }).
        #expect(body["nextLink"] == v3Link("$filter=n%20ge%2010&$count=true&$orderby=n&$skip=100"))
        var seen = ids(body["items"])
        var next = body["nextLink"]?.stringValue
        while let query = next {
            let page = try json(await c.send("GET", path(ofV3Link: query)))
            seen += ids(page["items"])
            next = page["nextLink"]?.stringValue
        }
        #expect(seen == (10..<250).map { "r" + String(format: "%03d", $0) })
        // Both members always present, null when absent.
        let plain = String(decoding: await c.send("GET", "/tables/todoitem?$top=1").body, as: UTF8.self)
        #expect(plain.hasSuffix(#"],"count":null,"nextLink":null}"#))
    }

    @Test(arguments: TestStorage.all)
    func v3TopAboveThePageGetsOnePageAndTheRestOfTheTopInTheLink(_ kind: TestStorage) async throws {
        let c = try await client(kind)
        await fill(c, 250)
        let first = try json(await c.send("GET", "/tables/todoitem?$top=150&$orderby=n"))
        #expect(ids(first["items"]).count == 100)
        #expect(first["nextLink"] == v3Link("$orderby=n&$skip=100&$top=50"))
        let second = try json(await c.send("GET", "/tables/todoitem?$orderby=n&$skip=100&$top=50"))
        #expect(ids(second["items"]).count == 50)
        #expect(second["nextLink"] == .null)
        let small = try json(await c.send("GET", "/tables/todoitem?$top=20&$skip=5"))
        #expect(ids(small["items"]).count == 20)
        #expect(small["nextLink"] == .null)
        #expect(await c.send("GET", "/tables/todoitem?$top=128000").status == 200)
        #expect(await c.send("GET", "/tables/todoitem?$top=128001").status == 400)
    }

    @Test(arguments: TestStorage.all)
    func v2PagesBy50WithAnAbsoluteLinkOnTheServersAddressAndAtMost1000(_ kind: TestStorage) async throws {
        let c = try await client(kind, "2.0.0")
        await fill(c, 120)
        let first = await c.send("GET", "/tables/todoitem?$orderby=n&$top=1000")
        #expect(ids(try json(first)).count == 50)
        #expect(
            header(first, "Link") == "<https://tables.example/tables/todoitem?$orderby=n&$skip=50&$top=950>; rel=next")
        var seen = ids(try json(first))
        var link = header(first, "Link")
        while let value = link {
            let url = String(value.dropFirst().prefix { $0 != ">" })
            let page = await c.send("GET", String(url.dropFirst("https://tables.example".count)))
            seen += ids(try json(page))
            link = header(page, "Link")
        }
        #expect(seen == (0..<120).map { "r" + String(format: "%03d", $0) })
        #expect(await c.send("GET", "/tables/todoitem?$top=1001").status == 400)
        // The request's own bytes that a URL cannot hold never reach the header as they are.
        let hostile = await c.send("GET", "/tables/todoitem?x=%3E;rel=evil,%3Chttp://e>&$orderby=n")
        let hostileLink = try #require(header(hostile, "Link"))
        #expect(hostileLink.filter { $0 == ">" }.count == 1 && hostileLink.filter { $0 == "<" }.count == 1)
    }

    @Test(arguments: TestStorage.all)
    func thePageSizeAndMaximumApplyToEveryProtocolWhenSet(_ kind: TestStorage) async throws {
        let c = try await client(kind, pageSize: 7, maxTop: 20)
        await fill(c, 10)
        for version in ["2.0.0", "3.0.0"] {
            let reply = await c.with(version).send("GET", "/tables/todoitem?$orderby=n")
            let body = try json(reply)
            #expect(ids(version == "3.0.0" ? body["items"] : body).count == 7)
            #expect(await c.with(version).send("GET", "/tables/todoitem?$top=21").status == 400)
        }
    }

    @Test(
        arguments: [
            ("https://api.example.com", "https://api.example.com"),
            ("http://10.0.0.1:8080/app/", "http://10.0.0.1:8080/app"), ("ftp://x", nil), ("https://", nil),
            ("https://a.example/?x=1", nil), ("https://a.example/#top", nil), ("https://u@a.example", nil),
            ("https://a.example/<x>", nil), ("api.example.com", nil),
        ] as [(String, String?)])
    func aPublicURLIsAnHTTPAddressWithoutQueryFragmentOrUser(_ input: (String, String?)) {
        #expect(TableServing.publicURL(input.0) == input.1, "\(input.0)")
    }

    // MARK: Conditional requests

    @Test(arguments: TestStorage.all)
    func ifMatchOnAReadIsA412WhenTheVersionDiffers(_ kind: TestStorage) async throws {
        let c = try await client(kind)
        let created = await c.send("POST", "/tables/todoitem", #"{"id":"a","text":"x"}"#)
        let tag = try #require(header(created, "ETag"))
        #expect(await c.send("GET", "/tables/todoitem/a", headers: ["if-match": tag]).status == 200)
        #expect(await c.send("GET", "/tables/todoitem/a", headers: ["if-match": "*"]).status == 200)
        let stale = await c.send("GET", "/tables/todoitem/a", headers: ["if-match": "\"AAAAAAAPQj8=\""])
        #expect(stale.status == 412)
        #expect(try json(stale)["text"] == .string("x"))
        #expect(header(stale, "ETag") == tag)
    }

    @Test(arguments: TestStorage.all, ["PUT", "PATCH", "DELETE"])
    func ifNoneMatchOnAWriteToAnExistingRowIsA412AndChangesNothing(_ kind: TestStorage, _ method: String)
        async throws
    {
        let c = try await client(kind)
        let created = await c.send("POST", "/tables/todoitem", #"{"id":"a","text":"x"}"#)
        let tag = try #require(header(created, "ETag"))
        for condition in ["*", tag, "\"AAAAAAAPQj8=\", \(tag)"] {
            let reply = await c.send(
                method, "/tables/todoitem/a", #"{"text":"y"}"#, headers: ["if-none-match": condition])
            #expect(reply.status == 412, "If-None-Match: \(condition)")
            #expect(try json(reply)["text"] == .string("x"))
        }
        let row = try json(await c.send("GET", "/tables/todoitem/a"))
        #expect(row["text"] == .string("x"))
        #expect(row["version"]?.stringValue.map { "\"\($0)\"" } == tag)
        // Another version does not match: the write goes through.
        let other = await c.send(
            method, "/tables/todoitem/a", #"{"text":"y"}"#, headers: ["if-none-match": "\"AAAAAAAPQj8=\""])
        #expect(other.status == (method == "DELETE" ? 204 : 200))
    }

    @Test(arguments: TestStorage.all)
    func aBodyThatIsNotJSONIsA415(_ kind: TestStorage) async throws {
        let c = try await client(kind)
        _ = await c.send("POST", "/tables/todoitem", #"{"id":"a","text":"x"}"#)
        for (method, path) in [
            ("POST", "/tables/todoitem"), ("PUT", "/tables/todoitem/a"), ("PATCH", "/tables/todoitem/a"),
        ] {
            let reply = await c.send(method, path, "text=y", headers: ["content-type": "text/plain"])
            #expect(reply.status == 415, "\(method)")
        }
        #expect(try json(await c.send("GET", "/tables/todoitem/a"))["text"] == .string("x"))
        let merge = await c.send(
            "PATCH", "/tables/todoitem/a", #"{"text":"z"}"#,
            headers: ["content-type": "application/merge-patch+json; charset=utf-8"])
        #expect(merge.status == 200)
        // The media type is read before its parameters, without the blanks around it, in any case.
        for type in [
            "Application/JSON", " application/json ; charset=utf-8", "\tapplication/vnd.api+json", "text/json", ";",
        ] {
            let reply = await c.send("PATCH", "/tables/todoitem/a", #"{"text":"w"}"#, headers: ["content-type": type])
            #expect(reply.status == 200, "\(type)")
        }
        for type in ["text/plain ;charset=utf-8", "application/jsonx", "application/ json"] {
            let reply = await c.send("PATCH", "/tables/todoitem/a", #"{"text":"v"}"#, headers: ["content-type": type])
            #expect(reply.status == 415, "\(type)")
        }
    }

    @Test(arguments: TestStorage.all)
    func aV3PutWithIncludeDeletedAndDeletedFalseUndeletes(_ kind: TestStorage) async throws {
        let c = try await client(kind)
        _ = await c.send("POST", "/tables/todoitem", #"{"id":"a","text":"x"}"#)
        #expect(await c.send("DELETE", "/tables/todoitem/a").status == 204)
        #expect(await c.send("PUT", "/tables/todoitem/a", #"{"id":"a","text":"y","deleted":false}"#).status == 410)
        let put = await c.send(
            "PUT", "/tables/todoitem/a?__includedeleted=true", #"{"id":"a","text":"y","deleted":false}"#)
        #expect(put.status == 200)
        #expect(try json(put)["deleted"] == .bool(false))
        let row = try json(await c.send("GET", "/tables/todoitem/a"))
        #expect(row["text"] == .string("y") && row["deleted"] == .bool(false))
    }

    @Test(arguments: TestStorage.all)
    func v1RefusesUnderscoreNamesInBodies(_ kind: TestStorage) async throws {
        let c = try await client(kind, nil, protocols: [.v1, .v2])
        for name in ["__createdAt", "__updatedAt", "__deleted", "__other"] {
            let reply = await c.send("POST", "/tables/todoitem", #"{"id":"a","\#(name)":"x"}"#)
            #expect(reply.status == 400, "\(name)")
        }
        #expect(await c.send("GET", "/tables/todoitem/a").status == 404)
    }

    // MARK: No member twice (hole 7)

    @Test(arguments: TestStorage.all)
    func noRowHoldsASystemPropertyNameSoNoAnswerGivesANameTwice(_ kind: TestStorage) async throws {
        let c = try await client(kind, "3.0.0", protocols: [.v1, .v2, .v3])
        // v3 has no createdAt, v2 no __ names: each was stored as a field before.
        _ = await c.send("POST", "/tables/todoitem", #"{"id":"a","createdAt":"1999-01-01T00:00:00Z"}"#)
        _ = await c.with("2.0.0").send("POST", "/tables/todoitem", #"{"id":"b","__createdAt":"x","__version":"y"}"#)
        for version: String? in [nil, "2.0.0", "3.0.0"] {
            for id in ["a", "b"] {
                let reply = await c.with(version).send("GET", "/tables/todoitem/\(id)?__systemproperties=*")
                guard case .object(let object) = try json(reply) else {
                    Issue.record("not an object")
                    continue
                }
                #expect(Set(object.keys).count == object.keys.count, "\(version ?? "v1") \(id): \(object.keys)")
                #expect(!object.keys.contains("__createdAt") || version == nil)
            }
            let list = String(decoding: await c.with(version).send("GET", "/tables/todoitem").body, as: UTF8.self)
            #expect(list.components(separatedBy: "createdAt").count <= 3)
        }
    }

    @Test(arguments: TestStorage.all, ["2.0.0", "3.0.0"])
    func aRowReadThenWrittenBackWholeIsAccepted(_ kind: TestStorage, _ version: String) async throws {
        let c = try await client(kind, version)
        // Written by a client of each other protocol, with its own names for the system
        // properties: none of them may come back beside the server's.
        _ = await c.with("3.0.0").send("POST", "/tables/todoitem", #"{"id":"a","text":"x","createdAt":"y"}"#)
        _ = await c.with("2.0.0").send("PATCH", "/tables/todoitem/a", #"{"__updatedAt":"z","__deleted":true}"#)
        let read = await c.send("GET", "/tables/todoitem/a")
        let method = version == "3.0.0" ? "PUT" : "PATCH"
        let written = await c.send(method, "/tables/todoitem/a", String(decoding: read.body, as: UTF8.self))
        #expect(written.status == 200)
        guard case .object(let object) = try json(written) else { return }
        #expect(Set(object.keys).count == object.keys.count)
        #expect(object["text"] == .string("x"))
    }
}
