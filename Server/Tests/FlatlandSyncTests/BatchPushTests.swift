import Flatland
import FlatlandHTTP
import FlatlandJSON
import FlatlandServer
import FlatlandServerTesting
import FlatlandSync
import Foundation
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The counter a server version names (8 bytes, big-endian, base64), to see how often a row
/// was written.
private func counter(_ version: String?) -> Int64? {
    guard let version, let bytes = Data(base64Encoded: version), bytes.count == 8 else { return nil }
    return bytes.reduce(Int64(0)) { $0 << 8 | Int64($1) }
}

/// The server's row as stored, soft-deleted or not (nil when the server has none).
private func serverRow(_ id: String, port: Int) async throws -> JSONObject? {
    var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/tables/todoitem/\(id)?__includeDeleted=true")!)
    request.setValue("2.0.0", forHTTPHeaderField: "ZUMO-API-VERSION")
    let (data, response) = try await URLSession.shared.data(for: request)
    guard (response as? HTTPURLResponse)?.statusCode == 200, case .object(let row) = try JSONValue(parsing: Array(data))
    else { return nil }
    return row
}

/// How many requests of a log went to `path` with `method`.
private func count(_ log: RequestLog, _ method: HTTPMethod, _ path: String) -> Int {
    log.requests.filter { $0.method == method && $0.url.path == path }.count
}

@Suite("Offline tables: idempotency keys and batch push")
struct BatchPushTests {
    @Test func everyWriteCarriesItsOperationsKeyAndAReplayedUpdateOrDeleteIsAppliedOnce() async throws {
        try await withSyncServer { server, port in
            let log = RequestLog()
            let device = try Device(port: port, log: log, filters: [freshConnections])
            defer { device.remove() }
            let todos = device.sync.table("todoitem")
            try todos.insert(["id": "u", "text": "1"])
            let key = try #require(try device.sync.operations().first?.key)
            #expect(UUID(uuidString: key) != nil)
            #expect(await device.sync.push().succeeded)
            #expect(log.last?.headers["Idempotency-Key"] == key)
            let inserted = try #require(counter(todos.lookup("u")?.text("version")))

            // An update whose answer is lost: the replay gets the first answer (200, not 412).
            try todos.update(["id": "u", "text": "2"])
            let updateKey = try #require(try device.sync.operations().first?.key)
            #expect(updateKey != key)
            // Both the attempt and its immediate resend lose their answers: the push stops.
            server.tableFaults.inject(.loseResponse, method: "PATCH", times: 2)
            #expect(await device.sync.push().aborted)
            #expect(try device.sync.operations().first?.key == updateKey)
            let replayed = await device.sync.push()
            #expect(replayed.succeeded)
            #expect(replayed.outcomes.map(\.status) == [200] && replayed.outcomes.first?.result == .ok)
            #expect(log.requests.suffix(2).map { $0.headers["Idempotency-Key"] } == [updateKey, updateKey])
            // Applied once: one write after the insert, the local row at the server's version.
            let row = try #require(try await serverRow("u", port: port))
            #expect(row.text("text") == "2")
            #expect(counter(row.text("version")) == inserted + 1)
            #expect(todos.lookup("u")?.text("version") == row.text("version"))

            // A delete whose answer is lost: the replay, under the same key, gets the first
            // answer (200), not a 404.
            try todos.delete("u")
            let deleteKey = try #require(try device.sync.operations().first?.key)
            // Both the attempt and its immediate resend lose their answers: the push stops.
            server.tableFaults.inject(.loseResponse, method: "DELETE", times: 2)
            #expect(await device.sync.push().aborted)
            #expect(server.tableFaults.pending == 0)
            let deleted = await device.sync.push()
            #expect(deleted.succeeded && deleted.outcomes.map(\.status) == [200])
            #expect(log.requests.suffix(2).map { $0.headers["Idempotency-Key"] } == [deleteKey, deleteKey])
            let gone = try #require(try await serverRow("u", port: port))
            #expect(gone["deleted"] == true)
            #expect(counter(gone.text("version")) == inserted + 2)
            await device.close()
        }
    }

    @Test func aCollapsedChangeOrANewVersionIsANewRequestWithANewKey() async throws {
        try await withSyncServer { _, port in
            let device = try Device(port: port)
            defer { device.remove() }
            let todos = device.sync.table("todoitem")
            try todos.insert(["id": "c", "text": "1"])
            let first = try #require(try device.sync.operations().first)
            try todos.update(["id": "c", "text": "2"])
            let collapsed = try #require(try device.sync.operations().first)
            #expect(collapsed.sequence == first.sequence && collapsed.key != first.key)
            try device.sync.edit(collapsed.sequence, version: "AAAAAAAAAAE=")
            #expect(try device.sync.operations().first?.key != collapsed.key)
            await device.close()
        }
    }

    @Test func aBatchWithAConflictInTheMiddleSettlesEachInOrderAndTheConflictReachesTheHandler() async throws {
        try await withDevices { _, one, two in
            let log = RequestLog()
            let device = try Device(port: one.session.environment.baseURL.port!, log: log)
            defer { device.remove() }
            let mine = device.sync.table("todoitem")
            try mine.insert(["id": "k", "text": "base"])
            _ = await device.sync.push()
            _ = try await two.sync.table("todoitem").pull()
            try two.sync.table("todoitem").update(["id": "k", "text": "theirs"])
            _ = await two.sync.push()
            try mine.insert(["id": "a", "text": "before"])
            try mine.update(["id": "k", "text": "mine"])
            try mine.insert(["id": "b", "text": "after"])
            let seen = Mutex<[String]>([])
            let pushed = await device.sync.push(onConflict: { conflict in
                seen.withLock { $0.append(conflict.operation.itemID) }
                #expect(conflict.status == 412)
                #expect(conflict.serverItem?.text("text") == "theirs")
                return .serverWins
            })
            #expect(count(log, .post, "/tables/$batch") == 1)
            #expect(count(log, .get, "/tables/$capabilities") == 1)
            #expect(pushed.outcomes.map(\.id) == ["a", "k", "b"])
            #expect(pushed.outcomes.map(\.result) == [.ok, .resolved, .ok])
            #expect(pushed.outcomes.map(\.status) == [201, 412, 201])
            #expect(seen.withLock { $0 } == ["k"])
            #expect(try device.sync.operations().isEmpty)
            #expect(mine.lookup("k")?.text("text") == "theirs")
            #expect(mine.lookup("a")?.text("version") != nil && mine.lookup("b")?.text("version") != nil)
            // The capabilities were asked once for the context.
            try mine.insert(["id": "c", "text": "c"])
            try mine.insert(["id": "d", "text": "d"])
            #expect(await device.sync.push().succeeded)
            #expect(count(log, .get, "/tables/$capabilities") == 1)
            #expect(count(log, .post, "/tables/$batch") == 2)
            await device.close()
        }
    }

    @Test func aLostBatchAnswerIsReplayedAndNothingIsAppliedTwice() async throws {
        try await withSyncServer { server, port in
            let log = RequestLog()
            // A fresh connection per request: the lost answer is seen at once as a closed
            // connection (on a reused one only when the wait times out, and under load the
            // replay's wait can time out too).
            let device = try Device(port: port, log: log, filters: [freshConnections])
            defer { device.remove() }
            let todos = device.sync.table("todoitem")
            try todos.insert(["id": "x", "text": "1"])
            #expect(await device.sync.push().succeeded)
            let base = try #require(counter(todos.lookup("x")?.text("version")))
            try todos.update(["id": "x", "text": "2"])
            for i in 0..<4 { try todos.insert(["id": .string("r\(i)"), "text": "new"]) }
            // Both the attempt and its immediate resend lose their answers: the push stops.
            server.tableFaults.inject(.loseResponse, method: "POST", pathPrefix: "/tables/$batch", times: 2)
            let lost = await device.sync.push()
            #expect(lost.aborted)
            #expect(try device.sync.operations().map(\.state) == Array(repeating: .attempted, count: 5))
            let again = await device.sync.push()
            #expect(again.succeeded)
            #expect(again.outcomes.map(\.status) == [200, 201, 201, 201, 201])
            #expect(try device.sync.operations().isEmpty)
            #expect(count(log, .post, "/tables/$batch") == 3)
            let row = try #require(try await serverRow("x", port: port))
            #expect(row.text("text") == "2")
            // The update was written once, before the four inserts.
            #expect(counter(row.text("version")) == base + 1)
            let reader = try Device(port: port)
            defer { reader.remove() }
            #expect(try await reader.sync.table("todoitem").pull().rows == 5)
            await reader.close()
            await device.close()
        }
    }

    @Test func anOperationsOwnFaultInsideABatchFailsOnlyIt() async throws {
        try await withSyncServer { server, port in
            let device = try Device(port: port)
            defer { device.remove() }
            let todos = device.sync.table("todoitem")
            for i in 0..<3 { try todos.insert(["id": .string("f\(i)"), "text": "x"]) }
            server.tableFaults.inject(
                .fail(status: 503, retryAfter: "1"), method: "POST", pathPrefix: "/tables/todoitem")
            let pushed = await device.sync.push()
            #expect(pushed.outcomes.map(\.status) == [503, 201, 201])
            #expect(pushed.outcomes.map(\.result) == [.error, .ok, .ok])
            #expect(try device.sync.failedOperations().map(\.itemID) == ["f0"])
            #expect(await device.sync.push().succeeded)
            await device.close()
        }
    }

    @Test func batchesAreCutAtTheBatchSizeAndNeverIsOneByOne() async throws {
        try await withSyncServer { _, port in
            let log = RequestLog()
            let device = try Device(port: port, log: log)
            defer { device.remove() }
            let todos = device.sync.table("todoitem")
            for i in 0..<5 { try todos.insert(["id": .string("s\(i)"), "text": "x"]) }
            let pushed = await device.sync.push(options: PushOptions(batchSize: 2))
            #expect(pushed.succeeded && pushed.outcomes.map(\.id) == (0..<5).map { "s\($0)" })
            #expect(count(log, .post, "/tables/$batch") == 2)
            #expect(count(log, .post, "/tables/todoitem") == 1)
            for i in 5..<8 { try todos.insert(["id": .string("s\(i)"), "text": "x"]) }
            #expect(await device.sync.push(options: PushOptions(batching: .never)).succeeded)
            #expect(count(log, .post, "/tables/$batch") == 2)
            #expect(count(log, .post, "/tables/todoitem") == 4)
            await device.close()
        }
    }

    @Test(arguments: [TableProtocol.v1, .v2, .v3])
    func aBatchsSuccessesLandInOneCommitWithTheServersRows(_ version: TableProtocol) async throws {
        try await withSyncServer { _, port in
            let device = try Device(port: port, protocol: version)
            defer { device.remove() }
            let todos = device.sync.table("todoitem")
            for i in 0..<6 { try todos.insert(["id": .string("g\(i)"), "text": .string("row \(i)")]) }
            let store = device.session.store
            let before = try store.commit(StoreChange()).commit
            let pushed = await device.sync.push()
            let after = try store.commit(StoreChange()).commit
            #expect(pushed.succeeded && pushed.outcomes.map(\.result) == Array(repeating: .ok, count: 6))
            #expect(pushed.outcomes.map(\.status) == Array(repeating: 201, count: 6))
            let versionName = version == .v1 ? "__version" : "version"
            // The operations marked sending, and one commit that takes every answer (the
            // capabilities and the batch's answer are read as JSON, never through the store).
            #expect(after - before - 1 == 2)
            #expect(try device.sync.operations().isEmpty)
            for i in 0..<6 {
                let row = try #require(todos.lookup("g\(i)"))
                #expect(row.text("text") == "row \(i)")
                let server = try #require(try await serverRow("g\(i)", port: port))
                #expect(row.text(versionName) == server.text("version"))
                #expect(counter(row.text(versionName)) != nil)
            }
            await device.close()
        }
    }

    @Test func aChangeQueuedWhileTheBatchIsOutIsNotOverwrittenByItsAnswer() async throws {
        try await withSyncServer { _, port in
            let table = Mutex<OfflineTable?>(nil)
            // While the batch is on its way, the app changes one of its rows.
            let meanwhile = ClosureFilter { request, next in
                let response = try await next(request)
                if request.url.path == "/tables/$batch" {
                    _ = try table.withLock { try $0?.update(["id": "m1", "text": "later"]) }
                }
                return response
            }
            let device = try Device(port: port, filters: [meanwhile])
            defer { device.remove() }
            let todos = device.sync.table("todoitem")
            table.withLock { $0 = todos }
            for i in 0..<3 { try todos.insert(["id": .string("m\(i)"), "text": "first"]) }
            let pushed = await device.sync.push()
            #expect(pushed.succeeded && pushed.outcomes.count == 3)
            // The later change stays, based on the version the insert got.
            #expect(todos.lookup("m1")?.text("text") == "later")
            let queued = try device.sync.operations()
            #expect(queued.map(\.itemID) == ["m1"])
            let inserted = try #require(try await serverRow("m1", port: port))
            #expect(queued.first?.version == inserted.text("version"))
            #expect(todos.lookup("m0")?.text("version") == (try await serverRow("m0", port: port))?.text("version"))
            table.withLock { $0 = nil }
            #expect(await device.sync.push().succeeded)
            #expect(try await serverRow("m1", port: port)?.text("text") == "later")
            #expect(try device.sync.operations().isEmpty)
            await device.close()
        }
    }

    @Test func aServerWithoutCapabilitiesGetsOneRequestPerOperation() async throws {
        try await withSyncServer { _, port in
            let log = RequestLog()
            // An Azure server: 404 at /tables/$capabilities (a table it does not have).
            let azure = ClosureFilter { request, next in
                if request.url.path == "/tables/$capabilities" { return HTTPResponse(status: 404) }
                return try await next(request)
            }
            let device = try Device(port: port, log: log, filters: [azure])
            defer { device.remove() }
            let todos = device.sync.table("todoitem")
            for i in 0..<3 { try todos.insert(["id": .string("z\(i)"), "text": "x"]) }
            let pushed = await device.sync.push()
            #expect(pushed.succeeded && pushed.outcomes.count == 3)
            #expect(count(log, .post, "/tables/$batch") == 0)
            #expect(count(log, .post, "/tables/todoitem") == 3)
            try todos.insert(["id": "z3", "text": "x"])
            try todos.insert(["id": "z4", "text": "x"])
            #expect(await device.sync.push().succeeded)
            #expect(count(log, .post, "/tables/todoitem") == 5)
            await device.close()
        }
    }

    @Test func withoutKeysAReplayedInsertIsStillCheckedAgainstTheServersRow() async throws {
        try await withSyncServer { server, port in
            // A server that knows no keys (Azure): the header never reaches this one.
            let noKeys = ClosureFilter { request, next in
                var request = request
                request.headers["Idempotency-Key"] = nil
                return try await next(request)
            }
            let device = try Device(port: port, filters: [noKeys])
            defer { device.remove() }
            try device.sync.table("todoitem").insert(["id": "lost", "text": "once"])
            // Both the attempt and its immediate resend lose their answers: the push stops.
            server.tableFaults.inject(.loseResponse, method: "POST", pathPrefix: "/tables/todoitem", times: 2)
            #expect(await device.sync.push().aborted)
            let second = await device.sync.push()
            #expect(second.outcomes.first?.status == 409 && second.outcomes.first?.result == .ok)
            #expect(try device.sync.operations().isEmpty)
            await device.close()
        }
    }
}
