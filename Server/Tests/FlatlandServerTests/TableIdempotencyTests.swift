import FlatlandJSON
import Foundation
import Testing

@testable import FlatlandServer

/// Idempotency keys, `$capabilities` and `$batch`, through the `/tables` routes called directly.
@Suite struct TableIdempotencyTests {
    struct Client {
        let api: TableAPI
        var token: String?

        func send(
            _ method: String, _ path: String, _ body: String = "", key: String? = nil, ifMatch: String? = nil,
            version: String = "2.0.0"
        ) async -> SampleAPI.Reply {
            var headers = ["zumo-api-version": version]
            if let key { headers["idempotency-key"] = key }
            if let ifMatch { headers["if-match"] = ifMatch }
            if let token { headers["authorization"] = "Bearer \(token)" }
            return await api.respond(
                method: method, path: path, query: [:], headers: headers, body: Array(body.utf8),
                baseURL: "http://127.0.0.1:1",
                authenticate: { token in
                    switch token {
                    case "ada-token": .user("ada")
                    case "bob-token": .user("bob")
                    default: .invalid
                    }
                }) ?? SampleAPI.Reply(status: -1)
        }

        func with(token: String?) -> Client { Client(api: api, token: token) }
    }

    private func client(
        _ kind: TestStorage = .sqlite, ttl: Duration = .seconds(60), access: TableAccess = .anonymous,
        maxBatch: Int = 1000, clock: TableStorageTests.Clock? = nil
    ) async throws -> Client {
        let table = TableDefinition(name: "todoitem", access: access)
        var now: (@Sendable () -> Int64)?
        if let clock { now = { clock.now() } }
        let storage = try await kind.make([table], now: now)
        var configuration = TableAPI.Configuration(tables: [table], idempotencyTTL: ttl)
        configuration.maxBatchOperations = maxBatch
        return Client(api: TableAPI(storage: storage, configuration: configuration))
    }

    private func json(_ reply: SampleAPI.Reply) throws -> JSONValue { try JSONValue(parsing: reply.body) }
    private func header(_ reply: SampleAPI.Reply, _ name: String) -> String? {
        reply.headers.first { $0.0 == name }?.1
    }
    private func version(_ reply: SampleAPI.Reply) throws -> Int64? {
        try json(reply)["version"]?.stringValue.flatMap(TableRow.version(from:))
    }

    @Test(arguments: TestStorage.all) func aReplayedWriteIsAnsweredWithItsFirstAnswerAndAppliedOnce(
        _ storage: TestStorage
    ) async throws {
        let c = try await client(storage)
        let inserted = await c.send("POST", "/tables/todoitem", #"{"id":"a","text":"1"}"#, key: "k-insert")
        #expect(inserted.status == 201 && header(inserted, "Idempotent-Replayed") == nil)
        let insertReplay = await c.send("POST", "/tables/todoitem", #"{"id":"a","text":"1"}"#, key: "k-insert")
        #expect(insertReplay.status == 201)
        #expect(header(insertReplay, "Idempotent-Replayed") == "true")
        #expect(try json(insertReplay) == json(inserted))
        #expect(header(insertReplay, "ETag") == header(inserted, "ETag"))

        let tag = try #require(header(inserted, "ETag"))
        let updated = await c.send("PATCH", "/tables/todoitem/a", #"{"text":"2"}"#, key: "k-update", ifMatch: tag)
        #expect(updated.status == 200)
        let updateReplay = await c.send("PATCH", "/tables/todoitem/a", #"{"text":"2"}"#, key: "k-update", ifMatch: tag)
        // Not a 412 (its own write made the If-Match stale): the first answer, the version bumped once.
        #expect(updateReplay.status == 200 && header(updateReplay, "Idempotent-Replayed") == "true")
        #expect(try json(updateReplay) == json(updated))
        let now = await c.send("GET", "/tables/todoitem/a")
        #expect(try version(now) == version(updated))
        #expect(try version(updated) == (try version(inserted)).map { $0 + 1 })

        let deleted = await c.send("DELETE", "/tables/todoitem/a", key: "k-delete")
        #expect(deleted.status == 200)
        let deleteReplay = await c.send("DELETE", "/tables/todoitem/a", key: "k-delete")
        #expect(deleteReplay.status == 200 && header(deleteReplay, "Idempotent-Replayed") == "true")
        #expect(try json(deleteReplay) == json(deleted))
        // Without the key, the same delete is a new request: the row is gone now.
        #expect(await c.send("DELETE", "/tables/todoitem/a").status == 404)
        // The replay answers what was first answered, whatever the row is now (v3: 204).
        let v3 = await c.send("POST", "/tables/todoitem", #"{"id":"b"}"#, key: "k3", version: "3.0.0")
        let v3Delete = await c.send("DELETE", "/tables/todoitem/b", key: "k3-delete", version: "3.0.0")
        #expect(v3.status == 201 && v3Delete.status == 204)
        let v3Replay = await c.send("DELETE", "/tables/todoitem/b", key: "k3-delete", version: "3.0.0")
        #expect(v3Replay.status == 204 && header(v3Replay, "Idempotent-Replayed") == "true")
    }

    @Test(arguments: TestStorage.all) func aKeyUsedForAnotherMethodOrPathIsA422(_ storage: TestStorage) async throws {
        let c = try await client(storage)
        _ = await c.send("POST", "/tables/todoitem", #"{"id":"a"}"#, key: "k")
        _ = await c.send("POST", "/tables/todoitem", #"{"id":"b"}"#)
        let otherPath = await c.send("PATCH", "/tables/todoitem/b", #"{"text":"x"}"#, key: "k")
        #expect(otherPath.status == 422)
        #expect(try json(otherPath)["error"]?.stringValue?.contains("POST /tables/todoitem") == true)
        #expect(await c.send("DELETE", "/tables/todoitem/a", key: "k").status == 422)
        // Nothing was written by the refused requests.
        #expect(try json(await c.send("GET", "/tables/todoitem/b"))["text"] == nil)
        #expect(await c.send("GET", "/tables/todoitem/a").status == 200)
        // A bad key is a 400.
        #expect(await c.send("POST", "/tables/todoitem", #"{"id":"c"}"#, key: "").status == 400)
    }

    @Test(arguments: TestStorage.all) func aFailedWriteIsNotRememberedAndKeysBelongToTheirCaller(_ storage: TestStorage)
        async throws
    {
        let c = try await client(storage, access: .authenticated)
        let ada = c.with(token: "ada-token")
        let bob = c.with(token: "bob-token")
        _ = await ada.send("POST", "/tables/todoitem", #"{"id":"a"}"#)
        let stale = await ada.send(
            "PATCH", "/tables/todoitem/a", #"{"text":"x"}"#, key: "k", ifMatch: "\"AAAAAAAAAAA=\"")
        #expect(stale.status == 412)
        let fresh = await ada.send("PATCH", "/tables/todoitem/a", #"{"text":"x"}"#, key: "k")
        #expect(fresh.status == 200 && header(fresh, "Idempotent-Replayed") == nil)
        // Another user's key of the same text is another key.
        let bobs = await bob.send("PATCH", "/tables/todoitem/a", #"{"text":"y"}"#, key: "k")
        #expect(bobs.status == 200 && header(bobs, "Idempotent-Replayed") == nil)
    }

    @Test func anExpiredKeyIsForgotten() async throws {
        let clock = TableStorageTests.Clock()
        let c = try await client(ttl: .seconds(10), clock: clock)
        #expect(await c.send("POST", "/tables/todoitem", #"{"id":"a"}"#, key: "k").status == 201)
        clock.advance(9_999_999)
        #expect(await c.send("POST", "/tables/todoitem", #"{"id":"a"}"#, key: "k").status == 201)
        clock.advance(1)
        // Past its time the key answers nothing: the insert runs again, and meets the row.
        #expect(await c.send("POST", "/tables/todoitem", #"{"id":"a"}"#, key: "k").status == 409)
    }

    @Test func capabilitiesSayTheBatchLimitAndTheKeysLifetime() async throws {
        let c = try await client(ttl: .seconds(90), maxBatch: 7)
        let reply = await c.send("GET", "/tables/$capabilities")
        #expect(reply.status == 200)
        let value = try json(reply)
        #expect(value["batch"]?["maxOperations"] == .number(7))
        #expect(value["idempotency"]?["ttlSeconds"] == .number(90))
        #expect(await c.send("POST", "/tables/$capabilities").status == 405)
    }

    private func batch(_ operations: [String]) -> String {
        #"{"operations":["# + operations.joined(separator: ",") + "]}"
    }

    private func results(_ reply: SampleAPI.Reply) throws -> [JSONValue] {
        guard case .array(let items)? = try json(reply)["results"] else { return [] }
        return items
    }

    @Test(arguments: TestStorage.all) func aBatchAppliesEachOperationOnItsOwnInOrderAndAConflictFailsOnlyItself(
        _ storage: TestStorage
    ) async throws {
        let c = try await client(storage)
        let base = await c.send("POST", "/tables/todoitem", #"{"id":"k","text":"base"}"#)
        _ = await c.send("PATCH", "/tables/todoitem/k", #"{"text":"theirs"}"#)
        let stale = try #require(header(base, "ETag"))
        let body = batch([
            #"{"key":"1","method":"POST","table":"todoitem","body":{"id":"n1","text":"one"}}"#,
            #"{"key":"2","method":"PATCH","table":"todoitem","id":"k","body":{"text":"mine"},"ifMatch":\#(JSONValue.string(stale).jsonString())}"#,
            #"{"key":"3","method":"POST","table":"todoitem","body":{"id":"n2","text":"two"}}"#,
            #"{"key":"4","method":"DELETE","table":"todoitem","id":"n1"}"#,
            #"{"key":"5","method":"PATCH","table":"todoitem","id":"nope","body":{}}"#,
        ])
        let reply = await c.send("POST", "/tables/$batch", body)
        #expect(reply.status == 200)
        let items = try results(reply)
        #expect(items.map { $0["key"] } == ["1", "2", "3", "4", "5"].map { .string($0) })
        #expect(items.map { $0["status"] } == [201, 412, 201, 200, 404].map { .number(JSONNumber($0)) })
        // The conflict's item is the server's row; every row answer carries its ETag.
        #expect(items[1]["item"]?["text"] == "theirs")
        #expect(items[0]["etag"]?.stringValue == items[0]["item"]?["version"]?.stringValue.map { "\"\($0)\"" })
        #expect(items[4]["error"]?.stringValue != nil)
        #expect(try json(await c.send("GET", "/tables/todoitem/k"))["text"] == "theirs")
        #expect(await c.send("GET", "/tables/todoitem/n2").status == 200)
        #expect(await c.send("GET", "/tables/todoitem/n1").status == 404)

        // The same batch again: each applied operation answered from its key, nothing applied twice.
        let before = try json(await c.send("GET", "/tables/todoitem/n2"))
        let again = try results(await c.send("POST", "/tables/$batch", body))
        #expect(again.map { $0["status"] } == items.map { $0["status"] })
        #expect(again.map { $0["replayed"] } == [true, nil, true, true, nil])
        #expect(again[0]["item"] == items[0]["item"])
        #expect(try json(await c.send("GET", "/tables/todoitem/n2")) == before)
        // A batch's operation and a single request with its key are one request.
        let single = await c.send("POST", "/tables/todoitem", #"{"id":"n2","text":"two"}"#, key: "3")
        #expect(single.status == 201 && header(single, "Idempotent-Replayed") == "true")
    }

    @Test func aBatchOverTheLimitOrMalformedIsRefusedWholeAndAppliesNothing() async throws {
        let c = try await client(maxBatch: 3)
        let insert = { (i: Int) in #"{"key":"k\#(i)","method":"POST","table":"todoitem","body":{"id":"r\#(i)"}}"# }
        let tooMany = await c.send("POST", "/tables/$batch", batch((0..<4).map(insert)))
        #expect(tooMany.status == 413)
        let malformed = await c.send(
            "POST", "/tables/$batch", batch([insert(0), #"{"key":"x","method":"GET","table":"todoitem"}"#]))
        #expect(malformed.status == 400)
        #expect(try json(malformed)["error"]?.stringValue?.contains("operation 1") == true)
        for bad in ["[]", "{}", #"{"operations":[1]}"#, batch([#"{"method":"PATCH","table":"todoitem","body":{}}"#])] {
            #expect(await c.send("POST", "/tables/$batch", bad).status == 400, "\(bad)")
        }
        let list = try json(await c.send("GET", "/tables/todoitem"))
        #expect(list == .array([]))
        #expect(await c.send("POST", "/tables/$batch", batch((0..<3).map(insert))).status == 200)
    }

    @Test(arguments: TestStorage.all) func theNewRoutesTakeTheTablesAuthRules(_ storage: TestStorage) async throws {
        let c = try await client(storage, access: .perUser)
        let ada = c.with(token: "ada-token")
        _ = await ada.send("POST", "/tables/todoitem", #"{"id":"a","text":"ada's"}"#)
        let update = batch([#"{"key":"u","method":"PATCH","table":"todoitem","id":"a","body":{"text":"changed"}}"#])
        for route in ["$capabilities", "$batch"] {
            let method = route == "$batch" ? "POST" : "GET"
            #expect(await c.send(method, "/tables/\(route)", update).status == 401, "no token, \(route)")
            #expect(await c.with(token: "nope").send(method, "/tables/\(route)", update).status == 401, "\(route)")
        }
        #expect(await c.with(token: "bob-token").send("GET", "/tables/$capabilities").status == 200)
        let bobs = try results(await c.with(token: "bob-token").send("POST", "/tables/$batch", update))
        #expect(bobs.first?["status"] == .number(404))
        #expect(try json(await ada.send("GET", "/tables/todoitem/a"))["text"] == "ada's")
        let adas = try results(await ada.send("POST", "/tables/$batch", update))
        #expect(adas.first?["status"] == .number(200))
        #expect(try json(await ada.send("GET", "/tables/todoitem/a"))["text"] == "changed")
    }
}
