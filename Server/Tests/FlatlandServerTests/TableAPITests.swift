import FlatlandJSON
import Foundation
import Testing

@testable import FlatlandServer

/// The `/tables` routes, called directly (the HTTP plumbing is tested with the server), on
/// SQLite and on PostgreSQL (see ``TestStorage``).
@Suite struct TableAPITests {
    struct Client {
        let api: TableAPI
        var version: String? = "2.0.0"

        func send(
            _ method: String, _ path: String, _ body: String = "", headers: [String: String] = [:]
        ) async -> SampleAPI.Reply {
            var headers = headers
            if let version { headers["zumo-api-version"] = version }
            var query: [String: String] = [:]
            var route = path
            if let q = path.firstIndex(of: "?") {
                route = String(path[..<q])
                for pair in path[path.index(after: q)...].split(separator: "&") {
                    let kv = pair.split(separator: "=", maxSplits: 1).map(String.init)
                    query[kv[0].removingPercentEncoding ?? kv[0]] = (kv.count > 1 ? kv[1] : "").removingPercentEncoding
                }
            }
            return await api.respond(
                method: method, path: route, query: query, headers: headers, body: Array(body.utf8),
                baseURL: "http://127.0.0.1:1")
                ?? SampleAPI.Reply(status: -1)
        }
    }

    private func client(
        _ kind: TestStorage, _ version: String? = "2.0.0", protocols: Set<TableWire.Version> = [.v2, .v3],
        softDelete: Bool = true
    ) async throws -> Client {
        let table = TableDefinition(name: "todoitem", softDelete: softDelete)
        let storage = try await kind.make([table])
        return Client(
            api: TableAPI(storage: storage, configuration: .init(tables: [table], protocols: protocols)),
            version: version)
    }

    private func json(_ reply: SampleAPI.Reply) throws -> JSONValue { try JSONValue(parsing: reply.body) }
    private func header(_ reply: SampleAPI.Reply, _ name: String) -> String? {
        reply.headers.first { $0.0 == name }?.1
    }

    @Test(arguments: TestStorage.all)
    func theProtocolVersionIsCheckedAndAMissingOneIsV1OnlyWhenServed(_ kind: TestStorage) async throws {
        let none = try await client(kind, nil)
        let r = await none.send("GET", "/tables/todoitem")
        #expect(r.status == 400)
        #expect(String(decoding: r.body, as: UTF8.self).contains("ZUMO-API-VERSION"))
        #expect(await (try client(kind, "1.0.0")).send("GET", "/tables/todoitem").status == 400)
        #expect(await (try client(kind, "2.0.7")).send("GET", "/tables/todoitem").status == 200)
        #expect(await (try client(kind, "3.0.0")).send("GET", "/tables/todoitem").status == 200)
        #expect(await (try client(kind, nil, protocols: [.v1, .v2])).send("GET", "/tables/todoitem").status == 200)
        #expect(await (try client(kind, "3.0.0", protocols: [.v2])).send("GET", "/tables/todoitem").status == 400)
        #expect(await none.send("GET", "/tables/todoitem?ZUMO-API-VERSION=2.0.0").status == 200)
    }

    @Test(arguments: TestStorage.all)
    func insertLookupUpdateDeleteInV2(_ kind: TestStorage) async throws {
        let c = try await client(kind)
        let created = await c.send("POST", "/tables/todoitem", #"{"text":"milk","complete":false}"#)
        #expect(created.status == 201)
        let row = try json(created)
        let id = try #require(row["id"]?.stringValue)
        #expect(id.utf8.count == 32 && id.allSatisfy { $0.isHexDigit && !$0.isUppercase })
        let version = try #require(row["version"]?.stringValue)
        #expect(header(created, "ETag") == "\"\(version)\"")
        #expect(row["createdAt"] != nil && row["updatedAt"] != nil && row["deleted"] == .bool(false))

        let fetched = await c.send("GET", "/tables/todoitem/\(id)")
        #expect(fetched.status == 200)
        #expect(try json(fetched) == row)

        let notModified = await c.send("GET", "/tables/todoitem/\(id)", headers: ["if-none-match": "\"\(version)\""])
        #expect(notModified.status == 304)
        #expect(notModified.body.isEmpty)

        let patched = await c.send(
            "PATCH", "/tables/todoitem/\(id)", #"{"complete":true}"#, headers: ["if-match": "\"\(version)\""])
        #expect(patched.status == 200)
        #expect(try json(patched)["text"] == .string("milk"))
        #expect(try json(patched)["complete"] == .bool(true))

        let stale = await c.send(
            "PATCH", "/tables/todoitem/\(id)", #"{"text":"soy"}"#, headers: ["if-match": "\"\(version)\""])
        #expect(stale.status == 412)
        #expect(try json(stale)["complete"] == .bool(true))
        #expect(header(stale, "ETag") == header(patched, "ETag"))

        let staleInBody = await c.send("PATCH", "/tables/todoitem/\(id)", #"{"text":"soy","version":"\#(version)"}"#)
        #expect(staleInBody.status == 409)
        #expect(try json(staleInBody)["text"] == .string("milk"))

        let again = await c.send("POST", "/tables/todoitem", #"{"id":"\#(id)","text":"dup"}"#)
        #expect(again.status == 409)
        #expect(try json(again)["text"] == .string("milk"))

        let deleted = await c.send("DELETE", "/tables/todoitem/\(id)")
        #expect(deleted.status == 200)
        #expect(try json(deleted)["deleted"] == .bool(true))
        #expect(await c.send("GET", "/tables/todoitem/\(id)").status == 404)
        #expect(await c.send("DELETE", "/tables/todoitem/\(id)").status == 404)
        #expect(await c.send("GET", "/tables/todoitem/\(id)?__includeDeleted=true").status == 200)
        let undeleted = await c.send("POST", "/tables/todoitem/\(id)", headers: ["if-match": header(deleted, "ETag")!])
        #expect(undeleted.status == 200)
        #expect(try json(undeleted)["deleted"] == .bool(false))
        #expect(await c.send("GET", "/tables/todoitem/nothing").status == 404)
        #expect(
            String(decoding: await c.send("GET", "/tables/todoitem/nothing").body, as: UTF8.self)
                == #"{"error":"The item does not exist"}"#)
    }

    @Test(arguments: TestStorage.all)
    func v3ReplacesWithPutAnswersDeleteWith204AndDeletedRowsWith410(_ kind: TestStorage) async throws {
        let c = try await client(kind, "3.0.0")
        let row = try json(await c.send("POST", "/tables/todoitem", #"{"id":"a","text":"milk","done":false}"#))
        #expect(row["createdAt"] == nil)
        let put = await c.send("PUT", "/tables/todoitem/a", #"{"id":"a","text":"bread"}"#)
        #expect(try json(put)["done"] == nil)
        #expect(await c.send("DELETE", "/tables/todoitem/a").status == 204)
        #expect(await c.send("GET", "/tables/todoitem/a").status == 410)
        #expect(await c.send("DELETE", "/tables/todoitem/a").status == 410)
        #expect(await c.send("PATCH", "/tables/todoitem/a", #"{"text":"x"}"#).status == 410)
    }

    @Test(arguments: TestStorage.all)
    func pagesFollowTheirNextLinksToEveryRowOnce(_ kind: TestStorage) async throws {
        for version in ["2.0.0", "3.0.0"] {
            let c = try await client(kind, version)
            for i in 0..<123 { _ = await c.send("POST", "/tables/todoitem", #"{"id":"r\#(i)","n":\#(i)}"#) }
            var seen: [String] = []
            var next: String? = "/tables/todoitem?$orderby=n"
            var pages = 0
            while let path = next {
                let reply = await c.send("GET", path)
                #expect(reply.status == 200)
                let body = try json(reply)
                let items: [JSONValue]
                if version == "3.0.0" {
                    guard case .array(let a)? = body["items"] else { Issue.record("no items"); return }
                    items = a
                    // Datasync's nextLink is a query string, for the table's own URL.
                    next = body["nextLink"]?.stringValue.map {
                        $0.hasPrefix("http") ? $0 : "/tables/todoitem?" + $0
                    }
                } else {
                    guard case .array(let a) = body else { Issue.record("not an array"); return }
                    items = a
                    next = header(reply, "Link").map { String($0.dropFirst().prefix { $0 != ">" }) }
                }
                next = next.map { $0.replacingOccurrences(of: "http://127.0.0.1:1", with: "") }
                seen += items.compactMap { $0["id"]?.stringValue }
                pages += 1
            }
            // Pages of 100 in v3 (Datasync's default), of 50 in v2 (the Node server's).
            #expect(pages == (version == "3.0.0" ? 2 : 3))
            #expect(seen == (0..<123).map { "r\($0)" })
        }
    }

    @Test(arguments: TestStorage.all)
    func topUpToTheMaximumIsAcceptedAndMoreIsA400(_ kind: TestStorage) async throws {
        let c = try await client(kind)
        for i in 0..<60 { _ = await c.send("POST", "/tables/todoitem", #"{"id":"r\#(i)"}"#) }
        // A $top above the page size gets a page and a link to the rest (as the Node server).
        let all = await c.send("GET", "/tables/todoitem?$top=1000&$inlinecount=allpages")
        #expect(try json(all)["count"] == .number(JSONNumber(60)))
        guard case .array(let rows)? = try json(all)["results"] else { Issue.record("no results"); return }
        #expect(rows.count == 50)
        #expect(header(all, "Link")?.contains("$skip=50&$top=950") == true)
        let rest = await c.send("GET", "/tables/todoitem?$top=950&$skip=50")
        guard case .array(let others) = try json(rest) else { Issue.record("not an array"); return }
        #expect(others.count == 10)
        #expect(header(rest, "Link") == nil)
        #expect(await c.send("GET", "/tables/todoitem?$top=1001").status == 400)
        #expect(await c.send("GET", "/tables/todoitem?$skip=-1").status == 400)
        #expect(await c.send("GET", "/tables/todoitem?$filter=frob(x)").status == 400)
        #expect(await c.send("GET", "/tables/todoitem?$filter=updatedAt%20eq%20'x'").status == 400)
    }

    @Test(
        arguments: TestStorage.all,
        [
            ("POST", "/tables/todoitem", "{\"text\":"), ("POST", "/tables/todoitem", "[1]"),
            ("POST", "/tables/todoitem", "{\"id\":5}"), ("POST", "/tables/todoitem", "{\"id\":\"a/b\"}"),
            ("POST", "/tables/todoitem", "{\"id\":\"a\\u0001\"}"), ("POST", "/tables/todoitem", "{\"a\":1,\"a\":2}"),
            ("PATCH", "/tables/todoitem/keep", "{\"id\":\"other\"}"), ("PATCH", "/tables/todoitem/keep", "nope"),
            ("GET", "/tables/nosuchtable", ""), ("GET", "/tables/todoitem/a%2Fb", ""),
            ("GET", "/tables/todoitem/a%01b", ""), ("DELETE", "/tables/todoitem/a%2Fb", ""),
            ("PUT", "/tables/todoitem/a%0Ab", "{}"), ("POST", "/tables/todoitem", ""),
            ("POST", "/tables/todoitem", "null"),
            ("PUT", "/tables/todoitem/keep", "{\"text\":"), ("PATCH", "/tables/todoitem/keep", "{\"id\":true}"),
            ("POST", "/tables/nosuchtable", "{}"), ("DELETE", "/tables/todoitem", ""),
            ("POST", "/tables/todoitem", "{\"id\":\"\(String(repeating: "x", count: 256))\"}"),
        ])
    func badInputIsA4xxAndChangesNothing(_ kind: TestStorage, _ input: (String, String, String)) async throws {
        let (method, path, body) = input
        let c = try await client(kind)
        let before = try json(await c.send("POST", "/tables/todoitem", #"{"id":"keep","text":"x"}"#))
        let reply = await c.send(method, path, body)
        #expect((400..<500).contains(reply.status))
        #expect(try json(reply)["error"]?.stringValue != nil)
        let after = try json(await c.send("GET", "/tables/todoitem?$inlinecount=allpages"))
        #expect(after["count"] == .number(JSONNumber(1)))
        #expect(try json(await c.send("GET", "/tables/todoitem/keep")) == before)
    }

    @Test(arguments: TestStorage.all)
    func invalidUTF8IsRefused(_ kind: TestStorage) async throws {
        let c = try await client(kind)
        let before = try json(await c.send("POST", "/tables/todoitem", #"{"id":"keep","text":"x"}"#))
        for (method, path) in [("POST", "/tables/todoitem"), ("PATCH", "/tables/todoitem/keep")] {
            let reply = await c.api.respond(
                method: method, path: path, query: [:], headers: ["zumo-api-version": "2.0.0"],
                body: Array(#"{"id":"keep","text":""#.utf8) + [0xFF, 0xFE] + Array(#""}"#.utf8), baseURL: "")
            #expect(reply?.status == 400)
            #expect(try reply.map(json)?["error"]?.stringValue != nil)
        }
        #expect(try json(await c.send("GET", "/tables/todoitem/keep")) == before)
        #expect(try json(await c.send("GET", "/tables/todoitem?$inlinecount=allpages"))["count"] == .number(1))
    }

    /// The `ETag` of a single-row answer, and the version its body carries (under `name`).
    private func tagAndVersion(_ reply: SampleAPI.Reply, _ name: String = "version") throws -> (String?, String?) {
        (header(reply, "ETag"), try json(reply)[name]?.stringValue.map { "\"\($0)\"" })
    }

    @Test(arguments: TestStorage.all)
    func everySingleRowAnswerCarriesItsVersionAsETag(_ kind: TestStorage) async throws {
        let c = try await client(kind)
        let created = await c.send("POST", "/tables/todoitem", #"{"id":"a","text":"x"}"#)
        let old = try #require(header(created, "ETag"))
        var answers = [created]
        answers.append(await c.send("GET", "/tables/todoitem/a"))
        answers.append(await c.send("PATCH", "/tables/todoitem/a", #"{"text":"y"}"#))
        answers.append(await c.send("PUT", "/tables/todoitem/a", #"{"text":"z"}"#))
        answers.append(await c.send("POST", "/tables/todoitem", #"{"id":"a"}"#))
        answers.append(await c.send("PATCH", "/tables/todoitem/a", #"{"text":"w"}"#, headers: ["if-match": old]))
        answers.append(
            await c.send("PATCH", "/tables/todoitem/a", #"{"text":"w","version":"\#(old.dropFirst().dropLast())"}"#))
        answers.append(await c.send("DELETE", "/tables/todoitem/a"))
        answers.append(await c.send("POST", "/tables/todoitem/a"))
        #expect(answers.map(\.status) == [201, 200, 200, 200, 409, 412, 409, 200, 200])
        for answer in answers {
            let (tag, version) = try tagAndVersion(answer)
            #expect(tag != nil && tag == version, "\(answer.status)")
        }
        // Each of the five writes changed the version; the refused ones answered the current one.
        #expect(Set(answers.compactMap { header($0, "ETag") }).count == 5)
        #expect(header(answers[5], "ETag") == header(answers[3], "ETag"))

        let v1 = try await client(kind, nil, protocols: [.v1])
        _ = await v1.send("POST", "/tables/todoitem", #"{"id":"b"}"#)
        let (tag, version) = try tagAndVersion(
            await v1.send("GET", "/tables/todoitem/b?__systemproperties=__version"), "__version")
        #expect(tag != nil && tag == version)
    }

    @Test(arguments: TestStorage.all)
    func softDeletedRowsAreLeftOutUnlessAskedForAndTheDeleteBumpsUpdatedAt(_ kind: TestStorage) async throws {
        for version in ["2.0.0", "3.0.0"] {
            let c = try await client(kind, version)
            let a = try json(await c.send("POST", "/tables/todoitem", #"{"id":"a"}"#))
            _ = await c.send("POST", "/tables/todoitem", #"{"id":"b"}"#)
            #expect(await c.send("DELETE", "/tables/todoitem/a").status == (version == "3.0.0" ? 204 : 200))
            let deleted = try json(await c.send("GET", "/tables/todoitem/a?__includeDeleted=true"))
            #expect(deleted["deleted"] == .bool(true))
            let before = try #require(a["updatedAt"]?.stringValue)
            let after = try #require(deleted["updatedAt"]?.stringValue)
            #expect(after > before)
            func ids(_ path: String) async throws -> [String] {
                let body = try json(await c.send("GET", path))
                let items = version == "3.0.0" ? body["items"] ?? .null : body
                return items.items.compactMap { $0["id"]?.stringValue }
            }
            #expect(try await ids("/tables/todoitem") == ["b"])
            #expect(try await ids("/tables/todoitem?__includeDeleted=false") == ["b"])
            #expect(try await ids("/tables/todoitem?__includeDeleted=true") == ["a", "b"])
            #expect(try await ids("/tables/todoitem?$filter=deleted%20eq%20true") == [])
            #expect(try await ids("/tables/todoitem?$filter=deleted%20eq%20true&__includeDeleted=true") == ["a"])
        }
    }

    @Test(arguments: TestStorage.all)
    func pagesAreTheProtocolsSizeAndLinkOnlyWhenFullAndMoreRemain(_ kind: TestStorage) async throws {
        for version in ["2.0.0", "3.0.0"] {
            // 50 rows in v2 (the Node server's page), 100 in v3 (Datasync's).
            let size = version == "3.0.0" ? 100 : 50
            let c = try await client(kind, version)
            func page(_ path: String) async throws -> (ids: [String], next: String?) {
                let reply = await c.send("GET", path)
                let body = try json(reply)
                if version == "3.0.0" {
                    return (
                        (body["items"] ?? .null).items.compactMap { $0["id"]?.stringValue },
                        body["nextLink"]?.stringValue
                    )
                }
                return (body.items.compactMap { $0["id"]?.stringValue }, header(reply, "Link"))
            }
            for i in 0..<size { _ = await c.send("POST", "/tables/todoitem", #"{"id":"r\#(i + 100)"}"#) }
            // Exactly one full page, nothing more: no link.
            let full = try await page("/tables/todoitem")
            #expect(full.ids.count == size)
            #expect(full.next == nil)
            _ = await c.send("POST", "/tables/todoitem", #"{"id":"r\#(size + 100)"}"#)
            let first = try await page("/tables/todoitem")
            #expect(first.ids.count == size)
            let next = try #require(first.next)
            #expect(next.contains("$skip=\(size)"))
            // A $top above the page: a page, and a link for what remains of the $top.
            let top = try await page("/tables/todoitem?$top=\(size + 1)")
            #expect(top.ids.count == size)
            #expect(top.next?.contains("$skip=\(size)&$top=1") == true)
            #expect(try await page("/tables/todoitem?$top=10").ids == (100..<110).map { "r\($0)" })
            // The last page, short: no link.
            let last = try await page("/tables/todoitem?$skip=\(size)")
            #expect(last.ids == ["r\(size + 100)"])
            #expect(last.next == nil)
        }
    }

    @Test(
        arguments: TestStorage.all,
        [
            ("frobnicate(text) eq 1", "offset 0"), ("text eq 'open", "offset 8"), ("a eq 1 xor b eq 2", "offset 7"),
            ("updatedAt eq 'x'", "in 'updatedAt eq 'x''"), ("n gt null", "in 'n gt null'"),
            (String(repeating: "(", count: 5000) + "a eq 1", "$filter"),
        ])
    func anUnsupportedFilterIsA400SayingWhatAndWhere(_ kind: TestStorage, _ input: (String, String)) async throws {
        let (filter, says) = input
        let c = try await client(kind)
        _ = await c.send("POST", "/tables/todoitem", #"{"id":"a"}"#)
        let encoded = try #require(filter.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
        let reply = await c.send("GET", "/tables/todoitem?$filter=\(encoded)")
        #expect(reply.status == 400)
        let message = try #require(try json(reply)["error"]?.stringValue)
        #expect(message.contains(says), "\(message)")
    }

    @Test(arguments: TestStorage.all)
    func anInsertWithoutAnIdOrWithANullOneGetsAServerId(_ kind: TestStorage) async throws {
        for version in ["2.0.0", "3.0.0"] {
            let c = try await client(kind, version)
            var ids: Set<String> = []
            for body in [#"{"text":"a"}"#, #"{"id":null,"text":"b"}"#] {
                let reply = await c.send("POST", "/tables/todoitem", body)
                #expect(reply.status == 201)
                let id = try #require(try json(reply)["id"]?.stringValue)
                #expect(id.utf8.count == 32 && id.allSatisfy { $0.isHexDigit && !$0.isUppercase })
                #expect(header(reply, "Location") == "http://127.0.0.1:1/tables/todoitem/\(id)")
                #expect(await c.send("GET", "/tables/todoitem/\(id)").status == 200)
                ids.insert(id)
            }
            #expect(ids.count == 2)
        }
    }

    @Test(arguments: TestStorage.all)
    func v1TakesTheVersionFromItsPrefixedNameAndRefusesOtherSystemProperties(_ kind: TestStorage) async throws {
        let c = try await client(kind, nil, protocols: [.v1])
        let created = await c.send("POST", "/tables/todoitem?__systemproperties=*", #"{"id":"a","text":"x"}"#)
        let version = try #require(try json(created)["__version"]?.stringValue)
        _ = await c.send("PATCH", "/tables/todoitem/a", #"{"text":"y"}"#)
        // v1 refuses the server's other system properties in a body (as Mobile Services did).
        let createdAt = await c.send(
            "PATCH", "/tables/todoitem/a", #"{"text":"z","__createdAt":"2000-01-01T00:00:00Z"}"#)
        #expect(createdAt.status == 400)
        let stale = await c.send(
            "PATCH", "/tables/todoitem/a?__systemproperties=__version", #"{"text":"z","__version":"\#(version)"}"#)
        #expect(stale.status == 409)
        #expect(try json(stale)["text"] == .string("y"))
        #expect(try json(stale)["__version"]?.stringValue != version)
        let row = try json(await c.send("GET", "/tables/todoitem/a?__systemproperties=*"))
        #expect(row["__createdAt"] == (try json(created))["__createdAt"])
        #expect(row["text"] == .string("y"))
    }

    @Test(arguments: TestStorage.all)
    func v1PrefixesSystemPropertiesAndReturnsOnlyThoseAskedFor(_ kind: TestStorage) async throws {
        let c = try await client(kind, nil, protocols: [.v1, .v2])
        let plain = try json(await c.send("POST", "/tables/todoitem", #"{"id":"a","text":"x"}"#))
        #expect(plain == .object(["id": "a", "text": "x"]))
        let asked = try json(await c.send("GET", "/tables/todoitem/a?__systemproperties=__updatedAt,__version"))
        #expect(asked["__updatedAt"] != nil && asked["__version"] != nil && asked["__createdAt"] == nil)
        let all = try json(await c.send("GET", "/tables/todoitem/a?__systemproperties=*"))
        #expect(all["__createdAt"] != nil && all["__deleted"] == .bool(false))
        #expect(await c.send("POST", "/tables/todoitem", #"{"id":"b","__frob":1}"#).status == 400)
    }

    @Test(arguments: TestStorage.all)
    func hardDeleteTablesRemoveTheRow(_ kind: TestStorage) async throws {
        let c = try await client(kind, softDelete: false)
        _ = await c.send("POST", "/tables/todoitem", #"{"id":"a"}"#)
        #expect(await c.send("DELETE", "/tables/todoitem/a").status == 200)
        #expect(await c.send("GET", "/tables/todoitem/a?__includeDeleted=true").status == 404)
    }
}
