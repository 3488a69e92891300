import FlatlandJSON
import Foundation
import GRDB
import Testing

@testable import FlatlandServer

/// The attacks on the table routes found from outside (issue 34's holes 2, 3, 8, 9), each as it
/// was made, on SQLite and PostgreSQL: none may make a query fail for others, grow the server
/// without bound, answer a repeated write twice, or apply half of a malformed batch.
@Suite struct TableHostileInputTests {
    typealias Client = TableCompatibilityTests.Client

    private func client(
        _ kind: TestStorage, _ version: String? = "3.0.0", configure: (inout TableAPI.Configuration) -> Void = { _ in }
    ) async throws -> Client {
        let table = TableDefinition(name: "todoitem")
        let storage = try await kind.make([table])
        var configuration = TableAPI.Configuration(tables: [table])
        configure(&configuration)
        return Client(api: TableAPI(storage: storage, configuration: configuration), version: version)
    }

    private func json(_ reply: SampleAPI.Reply) throws -> JSONValue { try JSONValue(parsing: reply.body) }
    private func header(_ reply: SampleAPI.Reply, _ name: String) -> String? {
        reply.headers.first { $0.0 == name }?.1
    }

    // MARK: Hole 2: NUL characters

    @Test(arguments: TestStorage.all)
    func aNULCharacterIsRefusedAtWriteAndInQueriesAndEveryQueryStillWorks(_ kind: TestStorage) async throws {
        let c = try await client(kind)
        _ = await c.send("POST", "/tables/todoitem", #"{"id":"ok","text":"a"}"#)
        for body in [
            #"{"id":"n1","text":"\u0000"}"#, #"{"id":"n2","te\u0000xt":"a"}"#, #"{"id":"n3","tags":["x\u0000"]}"#,
            #"{"id":"n\u0000"}"#,
        ] {
            let reply = await c.send("POST", "/tables/todoitem", body)
            #expect(reply.status == 400, "\(body)")
            #expect(try json(reply)["error"]?.stringValue?.contains("NUL") == true || body.contains("n\\u0000"))
        }
        let patch = await c.send("PATCH", "/tables/todoitem/ok", #"{"text":"b\u0000"}"#)
        #expect(patch.status == 400)
        let filtered = await c.send("GET", "/tables/todoitem?$filter=text%20eq%20'a%00b'")
        #expect(filtered.status == 400)
        #expect(!String(decoding: filtered.body, as: UTF8.self).lowercased().contains("select"))
        // Every caller's queries still answer.
        for query in ["$filter=text%20eq%20'a'", "$orderby=text", "$filter=startswith(text,'a')&$orderby=text%20desc"] {
            let reply = await c.send("GET", "/tables/todoitem?" + query)
            #expect(reply.status == 200, "\(query)")
        }
        #expect(try json(await c.send("GET", "/tables/todoitem/ok"))["text"] == .string("a"))
    }

    // MARK: Hole 9: duplicate members in a batch

    @Test(arguments: TestStorage.all)
    func aBatchWithAMemberTwiceIsA400AndAppliesNothing(_ kind: TestStorage) async throws {
        let c = try await client(kind)
        let one = #"{"method":"POST","table":"todoitem","body":{"id":"b1","text":"x"}}"#
        for batch in [
            #"{"operations":[{"method":"DELETE","method":"POST","table":"todoitem","body":{"id":"b2"}}]}"#,
            #"{"operations":[\#(one)],"operations":[{"method":"POST","table":"todoitem","body":{"id":"b3"}}]}"#,
            #"{"operations":[\#(one),{"method":"POST","table":"todoitem","body":{"id":"b4","t":1,"t":2}}]}"#,
        ] {
            let reply = await c.send("POST", "/tables/$batch", batch)
            #expect(reply.status == 400, "\(batch)")
            #expect(try json(reply)["error"]?.stringValue?.contains("twice") == true)
        }
        for id in ["b1", "b2", "b3", "b4"] { #expect(await c.send("GET", "/tables/todoitem/\(id)").status == 404) }
    }

    /// The refusal names where the problem is, at any depth, in objects small and large (a
    /// large one's names are checked through a set, a small one's pairwise).
    @Test(arguments: TestStorage.all)
    func aRefusedBodyNamesThePathOfItsProblem(_ kind: TestStorage) async throws {
        let c = try await client(kind)
        let many = (0..<20).map { "\"f\($0)\":\($0)" }.joined(separator: ",")
        let cases: [(body: String, error: String)] = [
            (#"{"id":"p1","a":{"b":[1,{"c":"x\u0000"}]}}"#, #"$.a.b[1].c holds a NUL character"#),
            (#"{"id":"p2","a":[{"k":1,"k":2}]}"#, "the member 'k' is given twice in $.a[0]"),
            (#"{"id":"p3","a":{\#(many),"f7":0}}"#, "the member 'f7' is given twice in $.a"),
            (#"{"id":"p4",\#(many),"f19":0}"#, "the member 'f19' is given twice in $"),
            (#"{"id":"p5","a":{"n\u0000":1}}"#, "a member name in $.a holds a NUL character"),
        ]
        for (body, expected) in cases {
            let reply = await c.send("POST", "/tables/todoitem", body)
            #expect(reply.status == 400, "\(body)")
            let message = try json(reply)["error"]?.stringValue ?? ""
            #expect(message.contains(expected), "\(body): \(message)")
        }
        // Twenty names, none twice, with a NUL nowhere: written.
        let fine = await c.send("POST", "/tables/todoitem", #"{"id":"p6","a":{\#(many)},\#(many)}"#)
        #expect(fine.status == 201 || fine.status == 200, "\(fine.status)")
    }

    // MARK: Hole 8: a keyed insert sent twice at once

    @Test(arguments: TestStorage.all)
    func aKeyedInsertSentTwiceAtOnceIsCreatedOnceAndReplayed(_ kind: TestStorage) async throws {
        let c = try await client(kind)
        for round in 0..<25 {
            let statuses = await withTaskGroup(of: (Int, Bool).self) { group -> [(Int, Bool)] in
                for _ in 0..<2 {
                    group.addTask {
                        let reply = await c.send(
                            "POST", "/tables/todoitem", #"{"id":"race\#(round)","text":"x"}"#,
                            headers: ["idempotency-key": "key-\(round)"])
                        return (reply.status, reply.headers.contains { $0.0 == "Idempotent-Replayed" })
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.map(\.0) == [201, 201], "round \(round): \(statuses)")
            #expect(statuses.filter(\.1).count == 1, "round \(round): \(statuses)")
        }
    }

    // MARK: Hole 3: what the idempotency keys keep

    @Test(arguments: TestStorage.all)
    func aCallerKeepsAtMostItsCapOfKeysAndTheOldestAreForgotten(_ kind: TestStorage) async throws {
        let c = try await client(kind) { $0.idempotencyMaxKeysPerCaller = 5 }
        _ = await c.send("POST", "/tables/todoitem", #"{"id":"a","n":0}"#)
        for i in 0..<10 {
            let reply = await c.send(
                "PATCH", "/tables/todoitem/a", #"{"n":\#(i + 1)}"#, headers: ["idempotency-key": "k\(i)"])
            #expect(reply.status == 200)
        }
        // The newest key is still answered from its record; the oldest was forgotten, so its
        // write is applied again (as a key past its lifetime is).
        let recent = await c.send("PATCH", "/tables/todoitem/a", #"{"n":10}"#, headers: ["idempotency-key": "k9"])
        #expect(header(recent, "Idempotent-Replayed") == "true")
        let oldest = await c.send("PATCH", "/tables/todoitem/a", #"{"n":1}"#, headers: ["idempotency-key": "k0"])
        #expect(oldest.status == 200)
        #expect(header(oldest, "Idempotent-Replayed") == nil)
        let capabilities = try json(await c.send("GET", "/tables/$capabilities"))
        #expect(capabilities["idempotency"]?["maxKeysPerCaller"] == .number(JSONNumber(5)))
        #expect(capabilities["idempotency"]?["maxRowBytes"] != nil)
    }

    @Test(arguments: TestStorage.all)
    func aCallerPastItsCapKeepsItsNewestKeysAndAtMostAnEighthMore(_ kind: TestStorage) async throws {
        // The SQLite storage prunes a caller's records once every cap / 8 + 1 of its writes, not
        // at each (finding the cap's boundary walks the caller's records): the newest 16 are
        // always answered, and at most 2 older ones.
        let c = try await client(kind) { $0.idempotencyMaxKeysPerCaller = 16 }
        _ = await c.send("POST", "/tables/todoitem", #"{"id":"a","n":0}"#)
        // The i-th keyed write (or its replay): the same body under the same key each time.
        let keyed = { (i: Int) in
            await c.send("PATCH", "/tables/todoitem/a", #"{"n":\#(i + 1)}"#, headers: ["idempotency-key": "k\(i)"])
        }
        for i in 0..<40 { #expect(await keyed(i).status == 200) }
        for i in (24..<40).reversed() {
            #expect(header(await keyed(i), "Idempotent-Replayed") == "true", "k\(i), one of the newest 16")
        }
        var olderAnswered = 0
        for i in (0..<24).reversed() {
            let reply = await keyed(i)
            #expect(reply.status == 200)
            if header(reply, "Idempotent-Replayed") == "true" { olderAnswered += 1 }
        }
        #expect(olderAnswered <= 2, "\(olderAnswered) keys older than the newest 16 were still answered")
    }

    @Test(arguments: TestStorage.all)
    func aCallerPastItsCapInBatchesKeepsItsNewestKeysAndAtMostAnEighthMore(_ kind: TestStorage) async throws {
        // The same cap when the keyed writes come in batches: a batch's writes are counted
        // together, once for its transaction.
        let c = try await client(kind) { $0.idempotencyMaxKeysPerCaller = 16 }
        _ = await c.send("POST", "/tables/todoitem", #"{"id":"a","n":0}"#)
        // The keyed writes `indices` (or their replays) in one batch: whether each was replayed.
        let batch = { (indices: [Int]) async throws -> [Bool] in
            let operations = indices.map {
                #"{"key":"k\#($0)","method":"PATCH","table":"todoitem","id":"a","body":{"n":\#($0 + 1)}}"#
            }
            let reply = await c.send(
                "POST", "/tables/$batch", #"{"operations":["# + operations.joined(separator: ",") + "]}")
            #expect(reply.status == 200)
            guard case .array(let results)? = try json(reply)["results"] else {
                Issue.record("the batch's answer has no results")
                return []
            }
            #expect(results.allSatisfy { $0["status"] == .number(JSONNumber(200)) })
            return results.map { $0["replayed"] == .bool(true) }
        }
        for start in stride(from: 0, to: 40, by: 10) {
            #expect(try await batch(Array(start..<start + 10)) == Array(repeating: false, count: 10))
        }
        #expect(try await batch(Array(24..<40)) == Array(repeating: true, count: 16), "the newest 16")
        let older = try await batch(Array(0..<24)).filter { $0 }.count
        #expect(older <= 2, "\(older) keys older than the newest 16 were still answered")
    }

    @Test(arguments: TestStorage.all)
    func aLargeRowIsRememberedByItsVersionAndReplayedWhileItIsTheSame(_ kind: TestStorage) async throws {
        let c = try await client(kind) { $0.idempotencyMaxRowBytes = 1000 }
        let big = String(repeating: "x", count: 5000)
        let created = await c.send(
            "POST", "/tables/todoitem", #"{"id":"a","text":"\#(big)"}"#, headers: ["idempotency-key": "k1"])
        #expect(created.status == 201)
        let replay = await c.send(
            "POST", "/tables/todoitem", #"{"id":"a","text":"\#(big)"}"#, headers: ["idempotency-key": "k1"])
        #expect(replay.status == 201)
        #expect(replay.body == created.body)
        #expect(header(replay, "Idempotent-Replayed") == "true")
        _ = await c.send("PATCH", "/tables/todoitem/a", #"{"n":1}"#)
        // Changed since: the first answer is gone, and the replay says so (nothing is written).
        let late = await c.send(
            "POST", "/tables/todoitem", #"{"id":"a","text":"\#(big)"}"#, headers: ["idempotency-key": "k1"])
        #expect(late.status == 409)
        #expect(header(late, "Idempotent-Replayed") == "true")
    }

    @Test(arguments: TestStorage.all)
    func aBatchReplaysItsLargeRowsFromTheRowsAsTheyAre(_ kind: TestStorage) async throws {
        let c = try await client(kind) { $0.idempotencyMaxRowBytes = 1000 }
        let big = String(repeating: "x", count: 5000)
        let batch =
            #"{"operations":["#
            + (0..<3).map {
                #"{"key":"b\#($0)","method":"POST","table":"todoitem","body":{"id":"r\#($0)","t":"\#(big)"}}"#
            }
            .joined(separator: ",") + "]}"
        let first = try json(await c.send("POST", "/tables/$batch", batch))
        let again = try json(await c.send("POST", "/tables/$batch", batch))
        guard case .array(let firstResults)? = first["results"], case .array(let results)? = again["results"] else {
            Issue.record("no results")
            return
        }
        #expect(results.map { $0["status"] } == Array(repeating: .number(JSONNumber(201)), count: 3))
        #expect(results.map { $0["replayed"] } == Array(repeating: .bool(true), count: 3))
        #expect(results.map { $0["item"] } == firstResults.map { $0["item"] })
    }

    @Test func twoHundredKeyedPatchesOfA100KBRowDoNotGrowTheFileByTheirCopies() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("holes-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("tables.sqlite").path
        let table = TableDefinition(name: "todoitem")
        let storage = try SQLiteTableStorage(path: path)
        try await storage.prepare([table])
        let c = Client(api: TableAPI(storage: storage, configuration: .init(tables: [table])), version: "3.0.0")
        let text = String(repeating: "y", count: 100_000)
        _ = await c.send("POST", "/tables/todoitem", #"{"id":"a","text":"\#(text)"}"#)
        for i in 0..<200 {
            let reply = await c.send(
                "PATCH", "/tables/todoitem/a", #"{"text":"\#(text)","n":\#(i)}"#, headers: ["idempotency-key": "p\(i)"])
            #expect(reply.status == 200)
        }
        // What the records hold, read from the file itself.
        let kept = try await DatabaseQueue(path: path).read { db in
            try Int.fetchOne(db, sql: "SELECT coalesce(sum(length(data)), 0) FROM flatland_table_idempotency") ?? 0
        }
        // 200 copies of the row would be 20 MB; versions alone are a few bytes each.
        #expect(kept < 200_000, "the records keep \(kept) bytes of rows")
    }
}
